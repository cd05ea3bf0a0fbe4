#include "observability/http_access.h"

#include <spdlog/fmt/fmt.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>

#include "observability/http_routing.h"
#include "observability/jwt_verify.h"
#include "observability/oidc.h"
#include "observability/oidc_sign_in.h"

namespace apollo11::observability {
namespace {

using transport::Action;

// Every route of the HTTP server, and what it does. Keep in the order of
// docs/operations.md's "Security" table.
constexpr std::array<HttpRule, 37> kRules = {{
    // Public: probes, metrics, the notices, the API's description, who the
    // caller is, signing in.
    {"GET", "/healthz", std::nullopt},
    {"GET", "/readyz", std::nullopt},
    {"GET", "/metrics", std::nullopt},
    {"GET", "/licenses", std::nullopt},
    {"GET", "/api/v1/openapi.json", std::nullopt},
    {"GET", "/api/whoami", std::nullopt},
    {"GET", "/auth/login", std::nullopt, "return"},
    {"GET", "/auth/callback", std::nullopt, kAnyParams},
    {"POST", "/auth/logout", std::nullopt},
    // Reads.
    {"GET", "/api/node", Action::kRead},
    {"GET", "/api/runs", Action::kRead, "limit"},
    {"GET", "/api/v1/runs", Action::kRead, "pipeline,prefix,state,since,until,limit,cursor"},
    {"GET", "/api/runs/{id}", Action::kRead, "limit"},
    {"GET", "/api/runs/{id}/history", Action::kRead, "limit"},
    {"GET", "/api/runs/{id}/graph", Action::kRead},
    {"GET", "/api/executions/{id}", Action::kRead, "limit"},
    {"GET", "/api/executions/{id}/logs", Action::kRead, "stream,attempt,offset,max_bytes"},
    {"GET", "/api/executions/{id}/trace", Action::kRead},
    {"GET", "/api/workers", Action::kRead, "limit"},
    {"GET", "/api/alerts", Action::kRead, "limit"},
    {"GET", "/api/events", Action::kRead},
    {"GET", "/api/overview/history", Action::kRead},
    {"GET", "/api/cluster", Action::kRead},
    {"GET", "/api/pipelines", Action::kRead, "limit"},
    {"GET", "/api/pipelines/{id}", Action::kRead, "limit"},
    {"GET", "/api/pipelines/{id}/versions", Action::kRead, "limit"},
    // Operating runs and pipelines.
    {"POST", "/api/pipelines/{id}/runs", Action::kTrigger},
    {"POST", "/api/runs/{id}/rerun", Action::kRerun},
    {"POST", "/api/runs/{id}/cancel", Action::kCancel},
    {"POST", "/api/executions/{id}/confirm", Action::kConfirm},
    {"POST", "/api/pipelines/{id}/pause", Action::kPause},
    {"POST", "/api/pipelines/{id}/unpause", Action::kUnpause},
    {"POST", "/api/pipelines/{id}/backfill", Action::kBackfill},
    // Bringing in code, and the cluster.
    {"POST", "/api/pipelines", Action::kRegister},
    {"POST", "/api/pipelines/{id}/remove", Action::kRemove},
    {"POST", "/api/cluster/resign", Action::kResign},
    {"GET", "/api/audit", Action::kReadAudit, "since,principal,action,limit"},
}};

constexpr std::string_view kIdPattern = "([A-Za-z0-9_.:@-]+)";

bool Mutating(const HttpRule& rule) {
  return rule.action && *rule.action != Action::kRead && *rule.action != Action::kReadSnapshot &&
         *rule.action != Action::kReadAudit;
}

}  // namespace

std::string Principal::Describe() const {
  std::string out = name + " (" + (roles ? transport::FormatRoles(roles) : "no role") + ")";
  if (!address.empty()) out += " from " + address;
  return out;
}

std::span<const HttpRule> HttpRules() { return kRules; }

std::optional<std::string> UnknownParam(const HttpRule& rule, const httplib::Request& req) {
  if (rule.params == kAnyParams) return std::nullopt;
  // The query string's parameters only: httplib also puts a form-encoded
  // body's fields in req.params, and a body is the route's own business.
  const size_t mark = req.target.find('?');
  if (mark == std::string::npos) return std::nullopt;
  httplib::Params query;
  httplib::detail::parse_query_text(req.target.substr(mark + 1), query);
  for (const auto& [name, value] : query) {
    bool known = false;
    for (size_t at = 0; at < rule.params.size() && !known;) {
      const size_t comma = std::min(rule.params.find(',', at), rule.params.size());
      known = rule.params.substr(at, comma - at) == name;
      at = comma + 1;
    }
    if (!known) return name;
  }
  return std::nullopt;
}

const HttpRule* FindHttpRule(std::string_view method, std::string_view path) {
  for (const HttpRule& r : kRules) {
    if (r.method == method && r.path == path) return &r;
  }
  return nullptr;
}

std::string RoutePattern(std::string_view path) {
  std::string out;
  for (size_t i = 0; i < path.size();) {
    if (path.substr(i).starts_with("{id}")) {
      out += kIdPattern;
      i += 4;
    } else {
      out += path[i++];
    }
  }
  return out;
}

HttpAccess::HttpAccess(HttpAccessOptions options)
    : options_(std::move(options)), clock_(options_.clock ? options_.clock : &system_clock_) {
  SetTokens(options_.tokens.value_or(std::vector<ApiToken>{}));
}

void HttpAccess::SetTokens(std::vector<ApiToken> tokens) {
  if (!options_.legacy_token.empty()) {
    tokens.push_back(
        ApiToken{"api-token", transport::kRoleAdmin, HashToken(options_.legacy_token)});
  }
  MutexLock lock(&mu_);
  tokens_ = std::move(tokens);
}

bool HttpAccess::MutationsPossible() const {
  if (options_.oidc != nullptr) {
    for (const auto& [group, roles] : options_.oidc->options().group_roles) {
      if (transport::Allows(roles, Action::kCancel)) return true;
    }
  }
  MutexLock lock(&mu_);
  return std::any_of(tokens_.begin(), tokens_.end(), [](const ApiToken& t) {
    return transport::Allows(t.role, Action::kCancel) ||
           transport::Allows(t.role, Action::kRegister);
  });
}

namespace {

constexpr const char* kNoTokens =
    "this node has no API tokens, so nobody may change anything: start it with --api-tokens "
    "FILE (or --api-token)";

}  // namespace

std::string CrossOrigin(const httplib::Request& req) {
  if (!req.has_header("Origin")) return "";
  const std::string origin = req.get_header_value("Origin");
  const std::string host = req.get_header_value("Host");
  // Host names compare without case (a serialized origin is lowercase).
  auto lower = [](std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  const std::string from = lower(origin);
  for (const std::string scheme : {"http://", "https://"}) {
    if (!host.empty() && from == scheme + lower(host)) return "";
  }
  return "a page of another origin (" + origin.substr(0, 200) + ", not this node's " +
         host.substr(0, 200) + ") may not change anything here";
}

void HttpAccess::Refuse(const httplib::Request& req, httplib::Response& res, int status,
                        const std::string& why) const {
  if (status == 401) res.set_header("WWW-Authenticate", "Bearer realm=\"apollo11\"");
  SendError(res, status, why);
  uint64_t suppressed = 0;
  bool log = false;
  {
    MutexLock lock(&mu_);
    log = refusal_log_.Allow(clock_->Steady(), &suppressed);
  }
  if (log) {
    spdlog::warn(
        "http: refused {} {} from {} ({}): {}{}", req.method, req.path.substr(0, 200),
        req.remote_addr, status, why,
        suppressed ? " (" + std::to_string(suppressed) + " more refusals not logged)" : "");
  }
}

bool HttpAccess::HasTokens() const {
  if (options_.oidc != nullptr) return true;
  MutexLock lock(&mu_);
  return !tokens_.empty();
}

std::optional<std::string> HttpAccess::SsoToken(const httplib::Request& req) const {
  if (options_.oidc == nullptr) return std::nullopt;
  const std::string header = req.get_header_value("Authorization");
  constexpr std::string_view kBearer = "Bearer ";
  if (!header.starts_with(kBearer)) return std::nullopt;
  std::string token = header.substr(kBearer.size());
  if (!LooksLikeJwt(token)) return std::nullopt;
  return token;
}

std::optional<Principal> HttpAccess::Identify(const httplib::Request& req,
                                              httplib::Response& res) const {
  Principal p;
  p.address = req.remote_addr;
  if (!req.has_header("Authorization")) {
    if (SessionOf(req, &p)) return p;
    p.name = "anonymous";
    p.roles = options_.tokens || options_.oidc != nullptr ? 0 : transport::kRoleViewer;
    return p;
  }
  if (std::optional<std::string> jwt = SsoToken(req)) {
    auto id = options_.oidc->Verify(*jwt);
    if (!id.ok()) {
      Refuse(req, res, 401, id.status().message());
      return std::nullopt;
    }
    p.name = id->name;
    p.roles = id->roles;
    p.via = "sso";
    return p;
  }
  if (!HasTokens()) {
    Refuse(req, res, 403, std::string("a bearer token was sent, but ") + kNoTokens);
    return std::nullopt;
  }
  const std::string header = req.get_header_value("Authorization");
  constexpr std::string_view kBearer = "Bearer ";
  std::optional<ApiToken> found;
  if (header.starts_with(kBearer)) {
    const std::string_view token = std::string_view(header).substr(kBearer.size());
    MutexLock lock(&mu_);
    found = FindToken(tokens_, token);
  }
  if (!found) {
    Refuse(req, res, 401,
           "the bearer token matches no principal of this node (Authorization: Bearer "
           "TOKEN, a token made by `apollo11 token create`)");
    return std::nullopt;
  }
  p.name = found->name;
  p.roles = found->role;
  p.via = "token";
  return p;
}

bool HttpAccess::SessionOf(const httplib::Request& req, Principal* p) const {
  if (options_.sign_in == nullptr) return false;
  const std::string cookie = CookieOf(req, kSessionCookie);
  if (cookie.empty()) return false;
  std::optional<OidcIdentity> who = options_.sign_in->SessionOf(cookie);
  if (!who) return false;
  p->name = who->name;
  p->roles = who->roles;
  p->via = "session";
  return true;
}

std::string CookieOf(const httplib::Request& req, std::string_view name) {
  const auto [first, last] = req.headers.equal_range("Cookie");
  for (auto it = first; it != last; ++it) {
    std::string_view rest = it->second;
    while (!rest.empty()) {
      const size_t semi = rest.find(';');
      std::string_view pair = rest.substr(0, semi);
      rest = semi == std::string_view::npos ? std::string_view() : rest.substr(semi + 1);
      while (!pair.empty() && pair.front() == ' ') pair.remove_prefix(1);
      const size_t eq = pair.find('=');
      if (eq != std::string_view::npos && pair.substr(0, eq) == name) {
        return std::string(pair.substr(eq + 1, 256));
      }
    }
  }
  return "";
}

Principal HttpAccess::Whom(const httplib::Request& req) const {
  Principal p;
  p.address = req.remote_addr;
  p.name = "anonymous";
  if (!req.has_header("Authorization")) {
    (void)SessionOf(req, &p);
    return p;
  }
  p.name = "(unknown token)";
  if (std::optional<std::string> jwt = SsoToken(req)) {
    if (auto id = options_.oidc->Verify(*jwt); id.ok()) {
      p.name = id->name;
      p.roles = id->roles;
    }
    return p;
  }
  const std::string header = req.get_header_value("Authorization");
  constexpr std::string_view kBearer = "Bearer ";
  if (!header.starts_with(kBearer)) return p;
  MutexLock lock(&mu_);
  if (auto found = FindToken(tokens_, std::string_view(header).substr(kBearer.size()))) {
    p.name = found->name;
    p.roles = found->role;
  }
  return p;
}

std::optional<Principal> HttpAccess::Admit(const httplib::Request& req, httplib::Response& res,
                                           const HttpRule& rule) {
  std::optional<Principal> p = Identify(req, res);
  if (!p || !rule.action) return p;
  if (!transport::Allows(p->roles, *rule.action)) {
    const std::string why = p->Describe() + " may not " +
                            std::string(transport::RuleOf(*rule.action).name) + " (role " +
                            transport::RolesThatMay(*rule.action) + " may)";
    if (p->name != "anonymous") {
      Refuse(req, res, 403, why);
    } else if (HasTokens()) {
      Refuse(req, res, 401, why + ": send Authorization: Bearer TOKEN");
    } else {
      Refuse(req, res, 403, why + "; " + kNoTokens);
    }
    return std::nullopt;
  }
  if (Mutating(rule)) {
    std::string why = CrossOrigin(req);
    if (why.empty() && p->via == "session" && !req.has_header("Origin")) {
      why = "a change signed in by the dashboard's session cookie must carry the page's Origin";
    }
    if (!why.empty()) {
      Refuse(req, res, 403, why);
      return std::nullopt;
    }
  }
  int retry_after_s = 0;
  if (Mutating(rule) && !Take(p->name, &retry_after_s)) {
    res.set_header("Retry-After", std::to_string(retry_after_s));
    Refuse(req, res, 429,
           fmt::format("{} sent more than {:g} changing requests a second "
                       "(--api-rate-limit); retry in {} s",
                       p->name, options_.rate_per_second, retry_after_s));
    return std::nullopt;
  }
  return p;
}

bool HttpAccess::Take(const std::string& name, int* retry_after_s) {
  const double rate = options_.rate_per_second;
  if (rate <= 0) return true;
  const double burst = std::max(1.0, 2 * rate);
  const Micros now = clock_->Steady();
  MutexLock lock(&mu_);
  auto [it, fresh] = buckets_.try_emplace(name, Bucket{burst, now});
  Bucket& b = it->second;
  if (!fresh) {
    b.tokens = std::min(burst, b.tokens + rate * static_cast<double>(now - b.at) / 1e6);
    b.at = now;
  }
  if (b.tokens >= 1) {
    b.tokens -= 1;
    return true;
  }
  *retry_after_s = std::max(1, static_cast<int>(std::ceil((1 - b.tokens) / rate)));
  return false;
}

bool IsMutating(const HttpRule& rule) { return Mutating(rule); }

}  // namespace apollo11::observability
