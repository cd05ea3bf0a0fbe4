#include "observability/http_routing.h"

#include "common/json_dump.h"

namespace apollo11::observability {

void SendJson(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  // Answers carry task-, peer- and file-derived text: never throw on it.
  res.set_content(SafeJsonDump(body), kJsonType);
}

void SendError(httplib::Response& res, int status, const std::string& message) {
  SendJson(res, status, nlohmann::json{{"error", message}});
}

void RefuseOverlongSegments(httplib::Server& s) {
  s.set_pre_routing_handler([](const httplib::Request& req, httplib::Response& res) {
    size_t start = 0;
    while (start <= req.path.size()) {
      size_t end = req.path.find('/', start);
      if (end == std::string::npos) end = req.path.size();
      if (end - start > kMaxPathSegment) {
        SendError(res, 404,
                  "no such path: a path segment is longer than " + std::to_string(kMaxPathSegment) +
                      " characters");
        return httplib::Server::HandlerResponse::Handled;
      }
      start = end + 1;
    }
    return httplib::Server::HandlerResponse::Unhandled;
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

void Route(httplib::Server& s, RouteTable& table, const char* method, const std::string& pattern,
           httplib::Server::Handler handler) {
  const std::string m = method;
  m == "GET" ? s.Get(pattern, std::move(handler)) : s.Post(pattern, std::move(handler));
  table.Add(pattern, m, m);
}

void RouteGetPost(httplib::Server& s, RouteTable& table, const std::string& pattern,
                  httplib::Server::Handler get, httplib::Server::Handler post) {
  s.Get(pattern, std::move(get));
  s.Post(pattern, std::move(post));
  table.Add(pattern, "GET, POST", "GET or POST");
}

}  // namespace apollo11::observability
