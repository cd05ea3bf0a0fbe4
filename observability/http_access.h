#pragma once
// Who may call which HTTP route. Every route the HTTP server registers
// through Route (http_routing.h) has one row in the table below (HttpRules):
// its method, its path (with {id} for an id segment) and the action it
// performs (transport/key_roles.h), or none for a public route. A route
// without a row is a programming error: registering it aborts the server's
// start, so no route can be served unchecked.
//
// A request's principal (Identify):
//   - `Authorization: Bearer TOKEN` whose hash is a line of the tokens file
//     (--api-tokens, api_tokens.h): that line's name and role;
//   - the same with the node's single --api-token: principal "api-token",
//     role admin (the token before principals);
//   - no Authorization header: "anonymous", a viewer when the node has no
//     tokens file (reads are open, as before tokens), nothing otherwise;
//   - any other Authorization header: refused, 401 with WWW-Authenticate
//     (403 when the node has no token at all: nothing could match).
// A principal whose roles do not allow the route's action gets 403 naming
// the roles that may; anonymous gets 401 (send a token) when the node has
// tokens, 403 (nobody may) when it has none. Mutating actions (all but the
// reads) are also rate-limited per principal (a token bucket:
// `rate_per_second`, bursts of twice that): past it, 429 with Retry-After in
// whole seconds. A mutating
// request that carries an Origin header (a browser's) must come from this
// node's own origin (Origin's host and port = Host), else 403: another
// site's page cannot change anything here (CSRF). A request signed in by
// the session cookie must carry that Origin to change anything (a browser
// always sends it on such requests; SameSite=Strict already keeps the
// cookie off other sites' requests). Every refusal is logged with its
// reason (rate-limited).
//
// Threads: any number of HTTP threads at once; SetTokens (a reload) from
// any thread.

#include <httplib.h>

#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/log_limiter.h"
#include "common/mutex.h"
#include "observability/api_tokens.h"
#include "transport/key_roles.h"

namespace apollo11::observability {

class OidcVerifier;
class OidcSignIn;

struct Principal {
  std::string name;  // "alice", "api-token", "anonymous"
  transport::KeyRoles roles = 0;
  std::string address;  // the client's address, as the socket says
  // The request's id: its X-Request-Id when that is a clean id (at most 64
  // of [A-Za-z0-9._-]), else one made for it; sent back in X-Request-Id and
  // recorded with what the request changed (the audit trail).
  std::string request_id;
  // How the caller reached the node: "http" for every request here; the
  // node's own records name "signal" (a SIGHUP reload).
  std::string transport = "http";
  // How the request proved who it is: "token" (the tokens file or
  // --api-token), "sso" (a provider's JWT bearer), "session" (the
  // dashboard's sign-in cookie, observability/oidc_sign_in.h) or
  // "anonymous".
  std::string via = "anonymous";
  // "alice (operator) from 127.0.0.1": for logs, history lines and records.
  std::string Describe() const;
};

struct HttpRule {
  std::string_view method;                  // "GET" or "POST"
  std::string_view path;                    // "/api/runs/{id}/cancel"
  std::optional<transport::Action> action;  // nullopt: public
  // The query parameters the route takes, separated by commas ("" for
  // none): any other is answered 400 before the handler runs. kAnyParams
  // for a route whose caller is not ours to hold to a list (a sign-in
  // provider's redirect).
  std::string_view params = "";
};
inline constexpr std::string_view kAnyParams = "*";
// The first parameter in `req`'s query string that `rule` does not take.
std::optional<std::string> UnknownParam(const HttpRule& rule, const httplib::Request& req);
std::span<const HttpRule> HttpRules();
// The row for `method` and `path` (as written in the table); null if none.
const HttpRule* FindHttpRule(std::string_view method, std::string_view path);
// The table's path as the regex httplib routes on ({id}: an id's characters).
std::string RoutePattern(std::string_view path);
// Whether the row's action changes something (not a read, not public).
bool IsMutating(const HttpRule& rule);

struct HttpAccessOptions {
  std::string legacy_token;  // --api-token ("" = none)
  // --api-tokens: set (even empty) = anonymous requests may do nothing.
  std::optional<std::vector<ApiToken>> tokens;
  // Mutating requests per second per principal; 0 = unlimited.
  double rate_per_second = 20;
  const Clock* clock = nullptr;  // null = the system clock; must outlive this
  // Single sign-on (observability/oidc.h): a bearer shaped like a JWT is
  // that provider's token. Null: none. Must outlive this. With it, as with
  // a tokens file, anonymous requests may do nothing.
  OidcVerifier* oidc = nullptr;
  // The dashboard's sign-in (needs `oidc`): a request without an
  // Authorization header whose session cookie names a live session is that
  // session's principal. Null: cookies are ignored. Must outlive this.
  OidcSignIn* sign_in = nullptr;
};

// The session cookie's and the sign-in binding cookie's names.
inline constexpr std::string_view kSessionCookie = "apollo11_session";
inline constexpr std::string_view kSignInCookie = "apollo11_sign_in";
// Why a request that changes something comes from another site's page:
// its Origin (sent by browsers) is not this node's Host; "" when it is, or
// when there is no Origin (not a browser, or a same-origin GET).
std::string CrossOrigin(const httplib::Request& req);
// The value of cookie `name` in the request's Cookie headers; "" if none.
std::string CookieOf(const httplib::Request& req, std::string_view name);

class HttpAccess {
 public:
  explicit HttpAccess(HttpAccessOptions options);

  // The request's principal; nullopt after answering `res` (401, or 403
  // when the node has no token a bearer could match).
  std::optional<Principal> Identify(const httplib::Request& req, httplib::Response& res) const;
  // Identify, then the rule's action and the rate limit: the principal, or
  // nullopt after answering `res` (401, 403 or 429).
  std::optional<Principal> Admit(const httplib::Request& req, httplib::Response& res,
                                 const HttpRule& rule);
  // Who the request says it is, answering nothing: the principal of its
  // token (or anonymous without one); a token that matches none gives a
  // principal named "(unknown token)" without roles. For the records of
  // refused requests.
  Principal Whom(const httplib::Request& req) const;
  // A reload: the tokens file's new lines (the legacy token stays).
  void SetTokens(std::vector<ApiToken> tokens);
  // Whether any principal may change anything (a token is configured).
  bool MutationsPossible() const;
  // Whether any token is configured (the file's or the single one).
  bool HasTokens() const;

 private:
  // The request's bearer when single sign-on is on and it is shaped like a
  // JWT (an API token never is); nullopt otherwise.
  std::optional<std::string> SsoToken(const httplib::Request& req) const;
  // Whether the request's session cookie names a live session; if so,
  // `*p` becomes its principal.
  bool SessionOf(const httplib::Request& req, Principal* p) const;
  struct Bucket {
    double tokens = 0;
    Micros at = 0;
  };
  // Answers `res` with `status` and `why` (401 asks for a bearer token) and
  // logs the refusal, at most 10 lines a second.
  void Refuse(const httplib::Request& req, httplib::Response& res, int status,
              const std::string& why) const;
  // Takes one request from `name`'s bucket; false with the wait in seconds.
  bool Take(const std::string& name, int* retry_after_s);

  const HttpAccessOptions options_;
  SystemClock system_clock_;
  const Clock* clock_;
  mutable Mutex mu_;
  std::vector<ApiToken> tokens_ GUARDED_BY(mu_);  // the file's, then the legacy one
  std::map<std::string, Bucket> buckets_ GUARDED_BY(mu_);
  mutable LogLimiter refusal_log_ GUARDED_BY(mu_){10, kMicrosPerSecond};
};

}  // namespace apollo11::observability
