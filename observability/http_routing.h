#pragma once
// The HTTP server's route-table helpers: JSON answers (never thrown on, for
// task- and peer-derived text) and routes that answer a wrong method with
// 405 and Allow rather than 404.

#include <httplib.h>

#include <nlohmann/json.hpp>
#include <string>

namespace apollo11::observability {

inline constexpr const char* kJsonType = "application/json";

void SendJson(httplib::Response& res, int status, const nlohmann::json& body);
// {"error": message}
void SendError(httplib::Response& res, int status, const std::string& message);
// Registers `handler` for `method` ("GET" or "POST") on `pattern` and a 405
// naming the allowed method for the other methods.
void Route(httplib::Server& s, const char* method, const std::string& pattern,
           httplib::Server::Handler handler);
// For a path that answers both GET and POST (httplib takes the first
// handler registered for a method and path, so the two are registered
// together).
void RouteGetPost(httplib::Server& s, const std::string& pattern, httplib::Server::Handler get,
                  httplib::Server::Handler post);

}  // namespace apollo11::observability
