// The dashboard's sign-in routes (observability/oidc_sign_in.h):
// GET /auth/login, GET /auth/callback, POST /auth/logout, and who the
// caller is (GET /api/whoami). Public in the route table: they are how a
// caller becomes someone.

#include <spdlog/spdlog.h>

#include "observability/http_routing.h"
#include "observability/http_server.h"
#include "observability/oidc_sign_in.h"

namespace apollo11::observability {
namespace {

constexpr const char* kNoSignIn =
    "this node has no sign-in through a provider: start it with --oidc-issuer, "
    "--oidc-client-id and --oidc-redirect-url";

// A Set-Cookie value: never readable from script, sent only over HTTPS
// (browsers treat http://localhost as such), with `same_site` and, when
// `max_age` >= 0, that lifetime (0 removes the cookie).
std::string CookieLine(std::string_view name, const std::string& value, const std::string& path,
                       const char* same_site, int max_age) {
  std::string line = std::string(name) + "=" + value + "; Path=" + path +
                     "; HttpOnly; Secure; SameSite=" + same_site;
  if (max_age >= 0) line += "; Max-Age=" + std::to_string(max_age);
  return line;
}

// A page for a person whose sign-in failed: why, and a way back.
void SignInFailed(httplib::Response& res, int status, const std::string& why,
                  const std::string& base) {
  res.status = status;
  res.set_header("Cache-Control", "no-store");
  res.set_content("Not signed in: " + why + "\n\nBack to the dashboard: " + base + "/\n",
                  "text/plain; charset=utf-8");
}

nlohmann::json MayList(transport::KeyRoles roles) {
  nlohmann::json may = nlohmann::json::array();
  for (const transport::ActionRule& rule : transport::ActionRules()) {
    if (rule.action != transport::Action::kWork && transport::Allows(roles, rule.action)) {
      may.push_back(std::string(rule.name));
    }
  }
  return may;
}

}  // namespace

void HttpServer::SignInRoutes(httplib::Server& s) {
  OidcSignIn* sign_in = options_.sign_in;
  const std::string base = options_.base_path;
  const std::string cookie_path = base.empty() ? "/" : base;
  Route(s, *routes_, "GET", "/api/whoami",
        [sign_in](const httplib::Request&, httplib::Response& res, const Principal& who) {
          SendJson(res, 200,
                   nlohmann::json{{"name", who.name},
                                  {"roles", transport::FormatRoles(who.roles)},
                                  {"address", who.address},
                                  {"via", who.via},
                                  {"may", MayList(who.roles)},
                                  {"sign_in", sign_in != nullptr}});
        });
  Route(s, *routes_, "GET", "/auth/login",
        [sign_in, base](const httplib::Request& req, httplib::Response& res, const Principal&) {
          if (sign_in == nullptr) return SignInFailed(res, 501, kNoSignIn, base);
          auto started = sign_in->Begin(req.get_param_value("return"));
          if (!started.ok()) return SignInFailed(res, 503, started.status().message(), base);
          res.status = 303;
          res.set_header("Location", started->location);
          res.set_header("Cache-Control", "no-store");
          // Lax: the provider's redirect back is a cross-site navigation.
          res.set_header("Set-Cookie",
                         CookieLine(kSignInCookie, started->state, base + "/auth", "Lax", 600));
        });
  Route(s, *routes_, "GET", "/auth/callback",
        [sign_in, base, cookie_path](const httplib::Request& req, httplib::Response& res,
                                     const Principal&) {
          if (sign_in == nullptr) return SignInFailed(res, 501, kNoSignIn, base);
          res.set_header("Set-Cookie", CookieLine(kSignInCookie, "", base + "/auth", "Lax", 0));
          if (req.has_param("error")) {
            const std::string said = req.get_param_value("error").substr(0, 100) + ": " +
                                     req.get_param_value("error_description").substr(0, 300);
            spdlog::warn("http: the provider refused a sign-in from {}: {}", req.remote_addr, said);
            return SignInFailed(res, 401, "the provider refused: " + said, base);
          }
          auto done = sign_in->Finish(req.get_param_value("code"), req.get_param_value("state"),
                                      CookieOf(req, kSignInCookie));
          if (!done.ok()) {
            spdlog::warn("http: a sign-in from {} failed: {}", req.remote_addr,
                         done.status().message());
            const int status = done.status().code() == StatusCode::kIo ? 502 : 400;
            return SignInFailed(res, status, done.status().message(), base);
          }
          spdlog::info("http: {} ({}) signed in to the dashboard from {}", done->who.name,
                       transport::FormatRoles(done->who.roles), req.remote_addr);
          res.status = 303;
          res.set_header("Location", base + done->return_to);
          res.set_header("Cache-Control", "no-store");
          res.set_header("Set-Cookie",
                         CookieLine(kSessionCookie, done->session, cookie_path, "Strict", -1));
        });
  Route(s, *routes_, "POST", "/auth/logout",
        [sign_in, cookie_path](const httplib::Request& req, httplib::Response& res,
                               const Principal& who) {
          // Another site's page may not sign the dashboard's user out.
          if (std::string why = CrossOrigin(req); !why.empty()) return SendError(res, 403, why);
          if (sign_in != nullptr) sign_in->End(CookieOf(req, kSessionCookie));
          if (who.via == "session") {
            spdlog::info("http: {} signed out of the dashboard from {}", who.name, req.remote_addr);
          }
          res.set_header("Set-Cookie", CookieLine(kSessionCookie, "", cookie_path, "Strict", 0));
          SendJson(res, 200, nlohmann::json{{"signed_out", true}});
        });
}

}  // namespace apollo11::observability
