// --oidc-*: single sign-on, for bearer tokens and the dashboard's sign-in
// (part of ResolveNodeConfig). The provider is not asked here (it may be
// down while the node starts); the node's OidcVerifier checks the rest.

#include <regex>

#include "cli/node_config.h"
#include "common/small_file.h"
#include "observability/http_server.h"

namespace apollo11::cli {
namespace {

// The client secret: the file's first line, without surrounding blanks.
Result<std::string> ReadClientSecret(const std::string& path) {
  std::optional<std::string> text = ReadSmallFile(path, 4096);
  if (!text) {
    return Status::InvalidInput("--oidc-client-secret-file " + path +
                                ": cannot be read (or is over 4 KiB)");
  }
  std::string secret = text->substr(0, text->find('\n'));
  while (!secret.empty() && std::isspace(static_cast<unsigned char>(secret.back()))) {
    secret.pop_back();
  }
  while (!secret.empty() && std::isspace(static_cast<unsigned char>(secret.front()))) {
    secret.erase(0, 1);
  }
  if (secret.empty())
    return Status::InvalidInput("--oidc-client-secret-file " + path + " is empty");
  return secret;
}

// --oidc-redirect-url: https (or http to this machine: browsers keep a
// Secure cookie only for those), ending in the node's own callback path.
Status CheckRedirectUrl(const std::string& url, const std::string& flag_base_path) {
  static const std::regex kUrl(R"((https?)://(\[[^\]]+\]|[^/:?#]+)(:[0-9]+)?(/[^?#]*))");
  std::smatch m;
  if (!std::regex_match(url, m, kUrl)) {
    return Status::InvalidInput("--oidc-redirect-url '" + url +
                                "': write the URL of this node's /auth/callback as a browser "
                                "reaches it (https://apollo.example.org/auth/callback)");
  }
  std::string host = m[2].str();
  if (host.size() > 2 && host.front() == '[') host = host.substr(1, host.size() - 2);
  if (m[1].str() == "http" && !observability::IsLoopbackHost(host)) {
    return Status::InvalidInput("--oidc-redirect-url '" + url +
                                "': must be https (the session cookie is Secure: a browser "
                                "keeps it only over HTTPS, or plain HTTP to localhost)");
  }
  auto base = observability::ParseBasePath(flag_base_path);
  if (!base.ok()) return base.status();
  if (m[4].str() != *base + "/auth/callback") {
    return Status::InvalidInput("--oidc-redirect-url '" + url + "': its path must be " + *base +
                                "/auth/callback, where this node answers the provider");
  }
  return Status::Ok();
}

Status ResolveSignIn(const NodeFlags& f, NodeConfig* c) {
  if (f.oidc_client_id.empty() != f.oidc_redirect_url.empty()) {
    return Status::InvalidInput(
        "--oidc-client-id and --oidc-redirect-url go together: the dashboard's sign-in needs "
        "both (the client registered at the provider, and its redirect URL)");
  }
  if (f.oidc_client_id.empty()) {
    if (!f.oidc_client_secret_file.empty()) {
      return Status::InvalidInput(
          "--oidc-client-secret-file needs --oidc-client-id: without it it would do nothing");
    }
    return Status::Ok();
  }
  APOLLO11_RETURN_IF_ERROR(CheckRedirectUrl(f.oidc_redirect_url, f.http_base_path));
  observability::OidcSignInOptions& s = c->oidc_sign_in;
  s.client_id = f.oidc_client_id;
  s.redirect_url = f.oidc_redirect_url;
  if (!f.oidc_client_secret_file.empty()) {
    auto secret = ReadClientSecret(f.oidc_client_secret_file);
    if (!secret.ok()) return secret.status();
    s.client_secret = std::move(*secret);
  }
  return Status::Ok();
}

}  // namespace

Status ResolveOidc(const NodeFlags& f, NodeConfig* c) {
  if (f.oidc_issuer.empty()) {
    const NodeFlags defaults;
    const bool other = !f.oidc_audience.empty() || !f.oidc_roles.empty() ||
                       !f.oidc_ca_file.empty() || f.oidc_name_claim != defaults.oidc_name_claim ||
                       f.oidc_groups_claim != defaults.oidc_groups_claim ||
                       !f.oidc_client_id.empty() || !f.oidc_client_secret_file.empty() ||
                       !f.oidc_redirect_url.empty();
    if (other) {
      return Status::InvalidInput(
          "--oidc-audience, --oidc-role and --oidc-ca-file need --oidc-issuer (so do "
          "--oidc-name-claim, --oidc-groups-claim, --oidc-client-id, "
          "--oidc-client-secret-file and --oidc-redirect-url): without it they would do "
          "nothing");
    }
    return Status::Ok();
  }
  observability::OidcOptions& o = c->oidc;
  o.issuer = f.oidc_issuer;
  o.audience = f.oidc_audience;
  o.ca_file = f.oidc_ca_file;
  o.name_claim = f.oidc_name_claim;
  o.groups_claim = f.oidc_groups_claim;
  for (const std::string& text : f.oidc_roles) {
    auto mapping = observability::ParseGroupRole(text);
    if (!mapping.ok()) return mapping.status();
    o.group_roles.push_back(std::move(*mapping));
  }
  if (o.audience.empty() || o.group_roles.empty()) {
    return Status::InvalidInput(
        "--oidc-issuer needs --oidc-audience (the audience its tokens name for this node) and at "
        "least one --oidc-role GROUP=ROLE");
  }
  if (o.issuer.rfind("https://", 0) != 0 && o.issuer.rfind("http://", 0) != 0) {
    return Status::InvalidInput("--oidc-issuer '" + o.issuer + "': the provider's issuer URL");
  }
  return ResolveSignIn(f, c);
}

}  // namespace apollo11::cli
