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

// Registers `handler` for `method` on `pattern` and a 405 naming the allowed
// method for the other methods, so a wrong method is told so, not 404.
void Route(httplib::Server& s, const char* method, const std::string& pattern,
           httplib::Server::Handler handler) {
  auto refuse = [allowed = std::string(method)](const httplib::Request& req,
                                                httplib::Response& res) {
    res.set_header("Allow", allowed);
    SendError(res, 405, req.method + " is not allowed here; use " + allowed);
  };
  const std::string m = method;
  m == "GET" ? s.Get(pattern, handler) : s.Get(pattern, refuse);
  m == "POST" ? s.Post(pattern, handler) : s.Post(pattern, refuse);
  s.Put(pattern, refuse);
  s.Delete(pattern, refuse);
  s.Patch(pattern, refuse);
}

// Route for a path that answers both GET and POST (httplib takes the first
// handler registered for a method and path, so the two must be registered
// together: two Route calls would refuse one of them).
void RouteGetPost(httplib::Server& s, const std::string& pattern, httplib::Server::Handler get,
                  httplib::Server::Handler post) {
  auto refuse = [](const httplib::Request& req, httplib::Response& res) {
    res.set_header("Allow", "GET, POST");
    SendError(res, 405, req.method + " is not allowed here; use GET or POST");
  };
  s.Get(pattern, std::move(get));
  s.Post(pattern, std::move(post));
  s.Put(pattern, refuse);
  s.Delete(pattern, refuse);
  s.Patch(pattern, refuse);
}

}  // namespace apollo11::observability
