// Node: who may use the HTTP port: tokens, single sign-on (--oidc-*: the
// verifier of the provider's tokens and the dashboard's sign-in through
// it, both made before the HTTP server), TLS and the base path.

#include "cli/node.h"

namespace apollo11::cli {

Status Node::StartOidc() {
  if (!config_.oidc.enabled()) return Status::Ok();
  auto oidc = observability::OidcVerifier::Start(
      config_.oidc, observability::HttpsFetch(config_.oidc.ca_file), clock_);
  if (!oidc.ok()) return oidc.status();
  oidc_ = std::move(*oidc);
  if (!config_.oidc_sign_in.client_id.empty()) {
    sign_in_ = std::make_unique<observability::OidcSignIn>(
        config_.oidc_sign_in, oidc_.get(), observability::HttpsPost(config_.oidc.ca_file), clock_);
  }
  return Status::Ok();
}

void Node::FillHttpAccess(observability::HttpServerOptions* ho) const {
  ho->api_token = config_.api_token;
  ho->api_tokens = config_.api_tokens;
  ho->api_rate_limit = config_.api_rate_limit;
  ho->oidc = oidc_.get();  // StartOidc ran first
  ho->sign_in = sign_in_.get();
  ho->tls = config_.http_tls;
  ho->base_path = config_.http_base_path;
}

}  // namespace apollo11::cli
