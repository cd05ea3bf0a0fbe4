#include "observability/http_routing.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/json_dump.h"
#include "observability/http_access.h"

namespace apollo11::observability {

void SendJson(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  // Answers carry task-, peer- and file-derived text (a 404 echoes the
  // path): never throw on it, and never let a browser run or sniff it.
  res.set_content(SafeJsonDump(body), kJsonType);
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'");
}

void SendError(httplib::Response& res, int status, const std::string& message) {
  SendJson(res, status, nlohmann::json{{"error", message}});
}

namespace {

// Why `path` is refused before routing, or "" when it is not.
std::string OverlongPath(const std::string& path) {
  if (path.size() > kMaxPath) {
    return "the path is longer than " + std::to_string(kMaxPath) + " characters";
  }
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    if (end - start > kMaxPathSegment) {
      return "a path segment is longer than " + std::to_string(kMaxPathSegment) + " characters";
    }
    start = end + 1;
  }
  return "";
}

}  // namespace

void RefuseOverlongPaths(httplib::Server& s) {
  s.set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
    const std::string why = OverlongPath(req.path);
    if (why.empty()) return httplib::Server::HandlerResponse::Unhandled;
    SendError(res, 404, "no such path: " + why);
    return httplib::Server::HandlerResponse::Handled;
  });
}

void RouteTable::Add(const std::string& pattern, std::string allowed, std::string phrase) {
  paths_.push_back(Path{std::regex(pattern), std::move(allowed), std::move(phrase)});
}

void RouteTable::AnswerUnrouted(const httplib::Request& req, httplib::Response& res) const {
  if (!res.body.empty() || res.status != 404) return;  // a handler's own answer
  for (const Path& p : paths_) {
    if (!std::regex_match(req.path, p.pattern)) continue;
    res.set_header("Allow", p.allowed);
    return SendError(res, 405, req.method + " is not allowed here; use " + p.phrase);
  }
  SendError(res, 404, "no such path: " + req.path);
}

namespace {

// The request's X-Request-Id when it is a clean id, else a fresh one.
std::string RequestIdOf(const httplib::Request& req) {
  const std::string given = req.get_header_value("X-Request-Id");
  bool clean = !given.empty() && given.size() <= 64;
  for (char c : given) {
    clean =
        clean && (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-');
  }
  if (clean) return given;
  thread_local std::mt19937_64 ids{std::random_device{}()};
  char made[17];
  std::snprintf(made, sizeof made, "%016llx",
                static_cast<unsigned long long>(ids()));  // NOLINT(runtime/int)
  return made;
}

// `handler` behind the access check of `method` `path`'s row.
httplib::Server::Handler Guarded(RouteTable& table, const char* method, std::string_view path,
                                 ApiHandler handler) {
  const HttpRule* rule = FindHttpRule(method, path);
  if (rule == nullptr) {
    std::fprintf(stderr, "apollo11: BUG: route %s %.*s has no row in http_access.cc\n", method,
                 static_cast<int>(path.size()), path.data());
    std::abort();
  }
  return [&table, rule, handler = std::move(handler)](const httplib::Request& req,
                                                      httplib::Response& res) {
    const std::string request_id = RequestIdOf(req);
    res.set_header("X-Request-Id", request_id);
    std::optional<Principal> who = table.access().Admit(req, res, *rule);
    if (!who) return table.Refused(req, res, *rule);
    who->request_id = request_id;
    if (const std::optional<std::string> unknown = UnknownParam(*rule, req)) {
      return SendError(
          res, 400,
          "unknown parameter '" + unknown->substr(0, 40) + "' (this route takes " +
              (rule->params.empty() ? std::string("none") : std::string(rule->params)) + ")");
    }
    handler(req, res, *who);
  };
}

// The paths `path` is served on: itself and, for an /api/ path, its
// /api/v1/ alias unless the table routes that path itself (/api/v1/runs is
// the paged history, /api/runs the older newest-N list).
std::vector<std::string> ServedPaths(std::string_view method, std::string_view path) {
  std::vector<std::string> out = {std::string(path)};
  constexpr std::string_view kApi = "/api/", kV1 = "/api/v1/";
  if (path.starts_with(kApi) && !path.starts_with(kV1)) {
    std::string v1 = std::string(kV1) + std::string(path.substr(kApi.size()));
    if (FindHttpRule(method, v1) == nullptr) out.push_back(std::move(v1));
  }
  return out;
}

}  // namespace

void Route(httplib::Server& s, RouteTable& table, const char* method, std::string_view path,
           ApiHandler handler) {
  const std::string m = method;
  for (const std::string& served : ServedPaths(m, path)) {
    const std::string pattern = table.base() + RoutePattern(served);
    httplib::Server::Handler guarded = Guarded(table, method, path, handler);
    m == "GET" ? s.Get(pattern, std::move(guarded)) : s.Post(pattern, std::move(guarded));
    table.Add(pattern, m, m);
  }
}

void RouteGetPost(httplib::Server& s, RouteTable& table, std::string_view path, ApiHandler get,
                  ApiHandler post) {
  for (const std::string& served : ServedPaths("GET", path)) {
    const std::string pattern = table.base() + RoutePattern(served);
    s.Get(pattern, Guarded(table, "GET", path, get));
    s.Post(pattern, Guarded(table, "POST", path, post));
    table.Add(pattern, "GET, POST", "GET or POST");
  }
}

}  // namespace apollo11::observability
