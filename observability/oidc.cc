#include "observability/oidc.h"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <regex>

#include "common/json_dump.h"

namespace apollo11::observability {
namespace {

constexpr size_t kMaxDocument = 1 << 20;

std::string WithoutTrailingSlash(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

// The sign-in endpoints a discovery document names, when it names both as
// http(s) URLs.
std::optional<OidcVerifier::Endpoints> EndpointsOf(const nlohmann::json& doc) {
  auto url = [&](const char* member) -> std::string {
    const auto it = doc.find(member);
    if (it == doc.end() || !it->is_string()) return "";
    std::string value = it->get<std::string>();
    const bool http = value.rfind("https://", 0) == 0 || value.rfind("http://", 0) == 0;
    return http && value.size() <= 2048 ? value : "";
  };
  OidcVerifier::Endpoints e{url("authorization_endpoint"), url("token_endpoint")};
  if (e.authorization.empty() || e.token.empty()) return std::nullopt;
  return e;
}

}  // namespace

Result<std::pair<std::string, transport::KeyRoles>> ParseGroupRole(std::string_view text) {
  const size_t eq = text.rfind('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 == text.size()) {
    return Status::InvalidInput("--oidc-role '" + std::string(text) +
                                "': write GROUP=ROLE (e.g. platform-ops=operator)");
  }
  const std::string_view role = text.substr(eq + 1);
  auto roles = transport::ParseRole(role);
  if (!roles || *roles == transport::kRoleWorker) {
    return Status::InvalidInput("--oidc-role '" + std::string(text) + "': unknown role '" +
                                std::string(role) + "' (viewer, operator or admin)");
  }
  return std::make_pair(std::string(text.substr(0, eq)), *roles);
}

namespace {

// A client for `url`'s scheme, host and port (its path in `*path`): 5 s
// timeouts, no redirects, certificates checked against `ca_file` (or the
// system's) for https.
Result<std::unique_ptr<httplib::Client>> ClientFor(const std::string& url,
                                                   const std::string& ca_file, std::string* path) {
  static const std::regex kUrl(R"((https?://[^/?#]+)([^#]*))");
  std::smatch m;
  if (!std::regex_match(url, m, kUrl)) return Status::InvalidInput("not an http(s) URL: " + url);
  auto client = std::make_unique<httplib::Client>(m[1].str());
  client->set_connection_timeout(5, 0);
  client->set_read_timeout(5, 0);
  client->set_write_timeout(5, 0);
  client->set_follow_location(false);
  if (url.rfind("https://", 0) == 0) {
    client->enable_server_certificate_verification(true);
    if (!ca_file.empty()) client->set_ca_cert_path(ca_file.c_str());
  }
  *path = m[2].str().empty() ? "/" : m[2].str();
  return client;
}

// The body of a 200 answer, or why not (an error answer's body, cut, in the
// message: a provider says there why it refused).
Result<std::string> BodyOf(const std::string& url, const httplib::Result& res, bool too_big) {
  if (too_big) return Status::InvalidInput(url + " answered more than 1 MiB");
  if (!res) return Status::Io(url + ": " + httplib::to_string(res.error()));
  if (res->status != 200) {
    std::string said = res->body.substr(0, 300);
    for (char& c : said) {
      if (static_cast<unsigned char>(c) < 0x20) c = ' ';
    }
    return Status::Io(url + " answered HTTP " + std::to_string(res->status) +
                      (said.empty() ? "" : ": " + said));
  }
  return res->body;
}

}  // namespace

OidcFetch HttpsFetch(std::string ca_file) {
  return [ca_file = std::move(ca_file)](const std::string& url) -> Result<std::string> {
    std::string path;
    auto client = ClientFor(url, ca_file, &path);
    if (!client.ok()) return client.status();
    std::string body;
    bool too_big = false;
    auto res = (*client)->Get(path, [&](const char* data, size_t n) {
      if (body.size() + n > kMaxDocument) {
        too_big = true;
        return false;
      }
      body.append(data, n);
      return true;
    });
    if (res) res->body = std::move(body);
    return BodyOf(url, res, too_big);
  };
}

OidcPost HttpsPost(std::string ca_file) {
  return [ca_file = std::move(ca_file)](const std::string& url, const std::string& form,
                                        const std::string& authorization) -> Result<std::string> {
    std::string path;
    auto client = ClientFor(url, ca_file, &path);
    if (!client.ok()) return client.status();
    httplib::Request req;
    req.method = "POST";
    req.path = path;
    req.headers = {{"Accept", "application/json"},
                   {"Content-Type", "application/x-www-form-urlencoded"}};
    if (!authorization.empty()) req.headers.emplace("Authorization", authorization);
    req.body = form;
    std::string body;
    bool too_big = false;
    req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
      if (body.size() + n > kMaxDocument) {
        too_big = true;
        return false;
      }
      body.append(data, n);
      return true;
    };
    auto res = (*client)->send(req);
    if (res) res->body = std::move(body);
    return BodyOf(url, res, too_big);
  };
}

Result<std::unique_ptr<OidcVerifier>> OidcVerifier::Start(OidcOptions options, OidcFetch fetch,
                                                          const Clock* clock) {
  options.issuer = WithoutTrailingSlash(options.issuer);
  if (options.issuer.rfind("https://", 0) != 0 && options.issuer.rfind("http://", 0) != 0) {
    return Status::InvalidInput("--oidc-issuer '" + options.issuer +
                                "': the provider's issuer URL (https://...)");
  }
  if (options.audience.empty()) {
    return Status::InvalidInput(
        "--oidc-issuer needs --oidc-audience: the audience (client id) its tokens name for "
        "this node");
  }
  if (options.group_roles.empty()) {
    return Status::InvalidInput(
        "--oidc-issuer needs at least one --oidc-role GROUP=ROLE: without one, no signed-in "
        "user could do anything");
  }
  std::unique_ptr<OidcVerifier> v(new OidcVerifier(std::move(options), std::move(fetch), clock));
  if (Status s = v->Refresh(); !s.ok()) {
    spdlog::warn("oidc: the keys of {} could not be read, tokens are refused until they are: {}",
                 v->options_.issuer, s.message());
  }
  return v;
}

Status OidcVerifier::Refresh() {
  const std::string discovery_url = options_.issuer + "/.well-known/openid-configuration";
  Status outcome = Status::Ok();
  std::shared_ptr<const JwksKeys> fresh;
  std::string iss;
  std::optional<Endpoints> endpoints;
  auto discovery = fetch_(discovery_url);
  if (!discovery.ok()) {
    outcome = discovery.status();
  } else {
    auto doc = ParseJsonBounded(*discovery);
    if (!doc.is_object() ||
        WithoutTrailingSlash(doc.contains("issuer") && doc["issuer"].is_string()
                                 ? doc["issuer"].get<std::string>()
                                 : "") != options_.issuer ||
        !(doc.contains("jwks_uri") && doc["jwks_uri"].is_string())) {
      outcome = Status::InvalidInput(discovery_url +
                                     " is not the discovery document of this issuer (issuer, "
                                     "jwks_uri)");
    } else {
      auto jwks = fetch_(doc["jwks_uri"].get<std::string>());
      auto keys = jwks.ok() ? JwksKeys::Parse(*jwks) : Result<JwksKeys>(jwks.status());
      if (keys.ok()) {
        fresh = std::make_shared<const JwksKeys>(std::move(*keys));
        iss = doc["issuer"].get<std::string>();
        endpoints = EndpointsOf(doc);
      } else {
        outcome = keys.status();
      }
    }
  }
  MutexLock lock(&mu_);
  last_read_ = clock_->Steady();
  if (fresh) {
    spdlog::info("oidc: {} signing keys of {} in force", fresh->size(), options_.issuer);
    keys_ = std::move(fresh);
    iss_ = std::move(iss);
    endpoints_ = std::move(endpoints);
    last_error_.clear();
  } else {
    last_error_ = outcome.message();
  }
  return outcome;
}

std::shared_ptr<const JwksKeys> OidcVerifier::KeysFor(const std::string& kid) {
  bool stale = false;
  {
    MutexLock lock(&mu_);
    if (keys_ && keys_->Has(kid)) return keys_;
    const Micros now = clock_->Steady();
    stale = last_read_ == 0 || now - last_read_ >= kRefreshEvery;
    // Claimed now: the other requests with an unknown key meanwhile do not
    // read the keys too.
    if (stale) last_read_ = now;
  }
  if (stale) (void)Refresh();
  MutexLock lock(&mu_);
  return keys_;
}

OidcIdentity OidcVerifier::IdentityOf(const nlohmann::json& claims) const {
  OidcIdentity id;
  const auto name = claims.find(options_.name_claim);
  id.name = name != claims.end() && name->is_string() ? name->get<std::string>() : std::string();
  if (id.name.empty() && claims.contains("sub") && claims["sub"].is_string()) {
    id.name = claims["sub"].get<std::string>();
  }
  // The name goes into logs, history lines and the audit trail: no
  // control characters, and short.
  if (id.name.size() > 128) id.name.resize(128);
  for (char& c : id.name) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  const auto groups = claims.find(options_.groups_claim);
  if (groups != claims.end() && groups->is_array()) {
    for (const auto& g : *groups) {
      if (g.is_string()) id.groups.push_back(g.get<std::string>());
    }
  } else if (groups != claims.end() && groups->is_string()) {
    id.groups.push_back(groups->get<std::string>());
  }
  for (const std::string& g : id.groups) {
    for (const auto& [group, roles] : options_.group_roles) {
      if (g == group) id.roles |= roles;
    }
  }
  return id;
}

Result<nlohmann::json> OidcVerifier::Claims(std::string_view token, std::string_view audience) {
  const std::string kid = JwtKeyId(token);
  std::shared_ptr<const JwksKeys> keys = KeysFor(kid);
  JwtExpectations want;
  {
    MutexLock lock(&mu_);
    if (!keys) {
      return Status::InvalidInput("token refused: the keys of " + options_.issuer +
                                  " could not be read: " + last_error_);
    }
    want.issuer = iss_;
  }
  want.audience = std::string(audience);
  want.now = clock_->Now();
  return VerifyJwt(token, *keys, want);
}

Result<OidcIdentity> OidcVerifier::Verify(std::string_view token) {
  auto claims = Claims(token, options_.audience);
  if (!claims.ok()) return claims.status();
  OidcIdentity id = IdentityOf(*claims);
  if (id.name.empty()) {
    return Status::InvalidInput("token refused: it names nobody (no " + options_.name_claim +
                                " or sub claim)");
  }
  return id;
}

Result<OidcIdentity> OidcVerifier::VerifyIdToken(std::string_view token, std::string_view client_id,
                                                 std::string_view nonce) {
  auto claims = Claims(token, client_id);
  if (!claims.ok()) return claims.status();
  const auto got = claims->find("nonce");
  if (nonce.empty() || got == claims->end() || !got->is_string() ||
      got->get<std::string>() != nonce) {
    return Status::InvalidInput(
        "ID token refused: its nonce is not the one this sign-in sent (a replayed token?)");
  }
  OidcIdentity id = IdentityOf(*claims);
  if (id.name.empty()) {
    return Status::InvalidInput("ID token refused: it names nobody (no " + options_.name_claim +
                                " or sub claim)");
  }
  return id;
}

std::optional<OidcVerifier::Endpoints> OidcVerifier::SignInEndpoints() {
  {
    MutexLock lock(&mu_);
    if (endpoints_) return endpoints_;
  }
  // Not read yet (the provider was down at start): try now, at most every
  // kRefreshEvery (KeysFor claims the refresh).
  (void)KeysFor("");
  MutexLock lock(&mu_);
  return endpoints_;
}

}  // namespace apollo11::observability
