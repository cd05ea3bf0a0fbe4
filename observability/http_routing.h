#pragma once
// The HTTP server's route-table helpers: JSON answers (never thrown on, for
// task- and peer-derived text) and routes that answer a wrong method with
// 405 and Allow rather than 404.

#include <httplib.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <regex>
#include <string>
#include <vector>

#include "observability/http_access.h"

namespace apollo11::observability {

class HttpAccess;
struct Principal;

// A route's handler: the request, its answer, and who asked (admitted by
// HttpAccess before the handler runs).
using ApiHandler =
    std::function<void(const httplib::Request&, httplib::Response&, const Principal&)>;

inline constexpr const char* kJsonType = "application/json";

void SendJson(httplib::Response& res, int status, const nlohmann::json& body);
// {"error": message}
void SendError(httplib::Response& res, int status, const std::string& message);

// Route patterns name an id's characters without a length ("[...]+"): a
// bounded repetition ("{1,600}") makes std::regex build a state per
// repetition, ~1.5 MB over the API's routes. The length is bounded once for
// every path instead, before routing (RefuseOverlongPaths): a path segment
// longer than kMaxPathSegment (the longest id), or a path longer than
// kMaxPath, is answered 404. The second bound also keeps libstdc++'s
// regex matcher, which recurses once per character a "+" takes, off the
// stack's end (a 30,000-character path overflows 8 MB).
inline constexpr size_t kMaxPathSegment = 600;
inline constexpr size_t kMaxPath = 2048;
// Registers that pre-routing check on `s`.
void RefuseOverlongPaths(httplib::Server& s);

// The paths registered through Route and RouteGetPost, with the methods
// each allows. httplib compiles a std::regex for every (method, pattern) it
// is given, about 28 KB of automaton each: registering a 405 handler for
// every other method of every path held ~2 MB at idle. Only the allowed
// methods go to httplib; a request no route took is looked up here
// (AnswerUnrouted), one regex per path.
class RouteTable {
 public:
  // `access` checks every route's caller; it must outlive the table. Every
  // route is served below `base` ("" or "/apollo": --http-base-path).
  explicit RouteTable(HttpAccess& access, std::string base = "")
      : access_(access), base_(std::move(base)) {}
  HttpAccess& access() const { return access_; }
  const std::string& base() const { return base_; }
  // `allowed` is the Allow header ("GET", "GET, POST"); `phrase` the same
  // for the message ("GET", "GET or POST").
  void Add(const std::string& pattern, std::string allowed, std::string phrase);
  // For a request httplib routed nowhere (404 with no body): 405 with Allow
  // when a registered path matches it, else a JSON 404. Other answers are
  // left as they are. Read-only once the server serves: any thread.
  void AnswerUnrouted(const httplib::Request& req, httplib::Response& res) const;
  // Called (on the request's thread) for every changing request the access
  // check refused, after `res` holds the refusal: the audit trail records
  // them. Set before the server serves.
  using RefusalHook =
      std::function<void(const httplib::Request&, const httplib::Response&, const HttpRule&)>;
  void OnRefused(RefusalHook hook) { on_refused_ = std::move(hook); }
  void Refused(const httplib::Request& req, const httplib::Response& res,
               const HttpRule& rule) const {
    if (on_refused_ && IsMutating(rule)) on_refused_(req, res, rule);
  }

 private:
  struct Path {
    std::regex pattern;
    std::string allowed, phrase;
  };
  HttpAccess& access_;
  const std::string base_;
  std::vector<Path> paths_;
  RefusalHook on_refused_;
};

// Registers `handler` for `method` ("GET" or "POST") on `path`, written as
// in http_access.cc's table ("/api/runs/{id}/cancel"), behind that table's
// check of the caller; other methods on that path are answered 405 by
// `table`. A path without a row in the access table aborts: every route is
// checked or none is served. An /api/ path is also served as /api/v1/...
// (the versioned path; the unversioned ones stay as aliases for a release),
// unless the table has that /api/v1/ path for a route of its own.
void Route(httplib::Server& s, RouteTable& table, const char* method, std::string_view path,
           ApiHandler handler);
// For a path that answers both GET and POST (httplib takes the first
// handler registered for a method and path, so the two are registered
// together).
void RouteGetPost(httplib::Server& s, RouteTable& table, std::string_view path, ApiHandler get,
                  ApiHandler post);

}  // namespace apollo11::observability
