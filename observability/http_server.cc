#include "observability/http_server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netdb.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "common/json_dump.h"
#include "common/timestamp_parse.h"
#include "observability/dashboard.h"
#include "observability/dashboard_api.h"
#include "observability/guarded_http_server.h"
#include "observability/query_cache.h"

namespace apollo11::observability {
namespace {

constexpr const char* kJson = "application/json";
constexpr const char* kPromText = "text/plain; version=0.0.4; charset=utf-8";
constexpr size_t kMaxBody = 1 << 20;  // a trigger's params; nothing bigger is ever posted
// The most runs one GET /api/runs returns (as the coordinator's own cap).
constexpr uint32_t kMaxLimit = 1000;

void SendJson(httplib::Response& res, int status, const nlohmann::json& body) {
  res.status = status;
  // Answers carry task-, peer- and file-derived text: never throw on it.
  res.set_content(SafeJsonDump(body), kJson);
}

void SendError(httplib::Response& res, int status, const std::string& message) {
  SendJson(res, status, nlohmann::json{{"error", message}});
}

// Compares without an early exit, so the time taken says nothing about how
// much of a guessed token was right.
bool SameToken(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
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

// Why binding host:port fails, found by trying it (httplib says only that it
// failed): a name that does not resolve, or bind(2)'s errno.
std::string WhyCannotBind(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found);
  if (rc != 0) return "cannot resolve '" + host + "': " + ::gai_strerror(rc);
  std::string why = "unknown cause";
  const int fd = ::socket(found->ai_family, found->ai_socktype | SOCK_CLOEXEC, found->ai_protocol);
  if (fd < 0) {
    why = std::strerror(errno);
  } else {
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (::bind(fd, found->ai_addr, found->ai_addrlen) != 0) {
      const int e = errno;
      why = std::strerror(e);
      if (e == EADDRINUSE) why += ": another process listens there";
      if (e == EACCES) why += ": ports below 1024 need privileges";
      if (e == EADDRNOTAVAIL) why += ": no interface of this machine has that address";
    }
    ::close(fd);
  }
  ::freeaddrinfo(found);
  return why;
}

// The fields of a backfill request's body, into `change`.
Status ReadBackfillBody(const nlohmann::json& body, ApiBackend::RegistryChange* change) {
  for (const auto& [key, value] : body.items()) {
    if ((key == "from" || key == "to") && value.is_string()) {
      auto t = ParseTimestamp(value.get<std::string>());
      if (!t.ok()) return t.status();
      (key == "from" ? change->from : change->to) = *t;
    } else if (key == "max_active" && value.is_number_integer() && value.get<int64_t>() >= 1 &&
               value.get<int64_t>() <= 1000) {
      change->max_active = value.get<int>();
    } else {
      return Status::InvalidInput("unknown or ill-typed body field '" + key +
                                  "' (from and to are timestamps, max_active 1 to 1000)");
    }
  }
  if (!body.contains("from") || !body.contains("to")) {
    return Status::InvalidInput("a backfill needs from and to");
  }
  return Status::Ok();
}

}  // namespace

int HttpStatusOf(const Status& s) {
  switch (s.code()) {
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kPermissionDenied:
      return 403;
    case StatusCode::kNotLeader:
      return 421;
    case StatusCode::kInvalidInput:
    case StatusCode::kUnsupported:
      return 400;
    case StatusCode::kIo:
    case StatusCode::kBusy:
    case StatusCode::kFull:
      return 503;
    default:
      return 500;
  }
}

Result<HostPort> ParseHttpBind(const std::string& bind) {
  HostPort hp;
  std::string port;
  if (!bind.empty() && bind[0] == '[') {
    const size_t close = bind.find(']');
    if (close == std::string::npos || close + 1 >= bind.size() || bind[close + 1] != ':') {
      return Status::InvalidInput("http bind '" + bind + "': expected [IPV6]:PORT");
    }
    hp.host = bind.substr(1, close - 1);
    port = bind.substr(close + 2);
  } else {
    const size_t colon = bind.rfind(':');
    if (colon == std::string::npos || colon == 0 || bind.find(':') != colon) {
      return Status::InvalidInput("http bind '" + bind + "': expected HOST:PORT");
    }
    hp.host = bind.substr(0, colon);
    port = bind.substr(colon + 1);
  }
  if (port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos ||
      std::atoi(port.c_str()) > 65535) {
    return Status::InvalidInput("http bind '" + bind + "': bad port '" + port + "'");
  }
  hp.port = std::atoi(port.c_str());
  return hp;
}

bool IsLoopbackHost(const std::string& host) {
  if (host == "localhost") return true;
  in_addr v4{};
  if (::inet_pton(AF_INET, host.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6{};
  if (::inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    return IN6_IS_ADDR_LOOPBACK(&v6) || (IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127);
  }
  return false;
}

Result<std::unique_ptr<HttpServer>> HttpServer::Start(HttpServerOptions options) {
  if (options.registry == nullptr) return Status::InvalidInput("http server needs a registry");
  auto hp = ParseHttpBind(options.bind);
  if (!hp.ok()) return hp.status();
  std::unique_ptr<HttpServer> s(new HttpServer());
  s->options_ = std::move(options);
  s->server_ = std::make_unique<GuardedHttpServer>(s->options_.limits);
  if (s->options_.health) {
    s->server_->SetHealthBody([health = s->options_.health] {
      nlohmann::json body = health();
      body["status"] = "ok";
      return SafeJsonDump(body);
    });
  }
  s->server_->set_payload_max_length(kMaxBody);
  // httplib's default sets SO_REUSEPORT, which lets a second node bind the
  // same port and silently share the scrapes. SO_REUSEADDR only: a busy port
  // is an error, a restart does not wait out TIME_WAIT.
  s->server_->set_socket_options([](int sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  s->Routes();
  int port = hp->port;
  if (port == 0) {
    port = s->server_->bind_to_any_port(hp->host);
    if (port < 0) {
      return Status::Io("http: cannot bind " + s->options_.bind + ": " +
                        WhyCannotBind(hp->host, 0));
    }
  } else if (!s->server_->bind_to_port(hp->host, port)) {
    return Status::Io("http: cannot bind " + s->options_.bind + ": " +
                      WhyCannotBind(hp->host, port));
  }
  s->bound_ = (hp->host.find(':') != std::string::npos ? "[" + hp->host + "]" : hp->host) + ":" +
              std::to_string(port);
  if (!s->server_->Start()) {
    return Status::Io(std::string("http: cannot start the request reader: ") +
                      std::strerror(errno));
  }
  httplib::Server* server = s->server_.get();
  s->thread_ = std::jthread([self = s.get(), server] {
    pthread_setname_np(pthread_self(), "http");
    const bool listened = server->listen_after_bind();
    std::lock_guard lock(self->failure_mu_);
    if (!self->stopping_) {
      self->failure_ = listened ? "the HTTP server stopped listening"
                                : "the HTTP server's listening loop failed";
    }
  });
  // stop() only works once the loop runs: wait for it, so Stop never hangs.
  for (int i = 0; i < 5000 && !server->is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!server->is_running()) return Status::Internal("http server did not start");
  return s;
}

HttpServer::~HttpServer() {
  Stop();
  server_.reset();  // its handlers point into dashboard_api_ and cache_
}

std::optional<std::string> HttpServer::failure() const {
  std::lock_guard lock(failure_mu_);
  return failure_;
}

void HttpServer::Stop() {
  {
    std::lock_guard lock(failure_mu_);
    stopping_ = true;
  }
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
  if (server_) server_->Shutdown();
}

void HttpServer::Routes() {
  httplib::Server& s = *server_;
  Route(s, "GET", "/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(options_.registry->WriteText(), kPromText);
  });
  Route(s, "GET", "/healthz", [this](const httplib::Request&, httplib::Response& res) {
    if (!options_.health) return res.set_content("ok\n", "text/plain");
    nlohmann::json body = options_.health();
    body["status"] = "ok";
    SendJson(res, 200, body);
  });
  Route(s, "GET", "/readyz", [this](const httplib::Request&, httplib::Response& res) {
    std::string why;
    bool ready = true;
    if (options_.ready) {
      std::lock_guard lock(backend_mu_);
      ready = options_.ready(&why);
    }
    res.status = ready ? 200 : 503;
    res.set_content(ready ? "ready\n" : "not ready: " + why + "\n", "text/plain");
  });
  s.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (res.body.empty() && res.status == 404) SendError(res, 404, "no such path: " + req.path);
  });
  if (options_.backend != nullptr) {
    cache_ = std::make_unique<QueryCache>(options_.clock ? options_.clock : &clock_,
                                          options_.api_cache_ttl_us);
    ApiRoutes();
    nlohmann::json info = options_.node_info;
    info["mutations"] = !options_.api_token.empty();
    dashboard_api_ = std::make_unique<DashboardApi>(options_.backend, &backend_mu_, cache_.get(),
                                                    std::move(info), options_.recent_alerts);
    dashboard_api_->Register(s);
    Dashboard::Register(s);
  }
}

void HttpServer::ApiRoutes() {
  httplib::Server& s = *server_;
  // A read-only query; `id_group` is the regex group holding the id (0: none).
  auto query = [this](const char* kind, int id_group) {
    return [this, kind, id_group](const httplib::Request& req, httplib::Response& res) {
      std::string id = id_group > 0 ? std::string(req.matches[id_group]) : "";
      uint32_t limit = 0;
      if (req.has_param("limit")) {
        const std::string v = req.get_param_value("limit");
        const long n = std::strtol(v.c_str(), nullptr, 10);
        if (v.empty() || v.find_first_not_of("0123456789") != std::string::npos || n < 1 ||
            n > kMaxLimit) {
          return SendError(res, 400,
                           "limit must be an integer from 1 to " + std::to_string(kMaxLimit));
        }
        limit = static_cast<uint32_t>(n);
      }
      const std::string key = std::string(kind) + ":" + id + ":" + std::to_string(limit);
      auto answer = cache_->Get(key, [&]() -> Result<std::string> {
        Result<nlohmann::json> doc = Status::Internal("unanswered");
        {
          std::lock_guard lock(backend_mu_);
          doc = options_.backend->Query(kind, id, limit);
        }
        if (!doc.ok()) return doc.status();
        return SafeJsonDump(*doc);
      });
      if (!answer.ok())
        return SendError(res, HttpStatusOf(answer.status()), answer.status().message());
      SendCachedJson(**answer, req, res);
    };
  };
  const std::string id = "([A-Za-z0-9_.:@-]{1,256})";
  Route(s, "GET", "/api/runs", query("runs", 0));
  Route(s, "GET", "/api/runs/" + id, query("status", 1));
  Route(s, "GET", "/api/runs/" + id + "/history", query("history", 1));
  Route(s, "GET", "/api/executions/" + id, query("execution", 1));
  Route(s, "GET", "/api/workers", query("workers", 0));

  // Mutating calls: 403 when no token is configured, 401 without the right one.
  auto authorized = [this](const httplib::Request& req, httplib::Response& res) {
    if (options_.api_token.empty()) {
      SendError(res, 403, "mutating API calls are disabled: the node has no --api-token");
      return false;
    }
    const std::string header = req.get_header_value("Authorization");
    const std::string prefix = "Bearer ";
    if (header.rfind(prefix, 0) != 0 ||
        !SameToken(header.substr(prefix.size()), options_.api_token)) {
      res.set_header("WWW-Authenticate", "Bearer realm=\"apollo11\"");
      SendError(res, 401, "a valid bearer token is required (Authorization: Bearer TOKEN)");
      return false;
    }
    return true;
  };
  // GET lists the pipelines; POST (registry): a pipeline YAML in the body
  // becomes its next version.
  RouteGetPost(s, "/api/pipelines", query("pipelines", 0),
               [this, authorized](const httplib::Request& req, httplib::Response& res) {
                 if (!authorized(req, res)) return;
                 if (req.body.empty())
                   return SendError(res, 400, "the body must be a pipeline's YAML");
                 Result<nlohmann::json> added = Status::Internal("unanswered");
                 {
                   std::lock_guard lock(backend_mu_);
                   // Imports resolve nowhere: the body is the whole pipeline.
                   added = options_.backend->Register(req.body,
                                                      "/nonexistent/apollo11-http/pipeline.yaml");
                 }
                 if (!added.ok())
                   return SendError(res, HttpStatusOf(added.status()), added.status().message());
                 cache_->Clear();
                 spdlog::info("http: pipeline {} registered by {}", SafeJsonDump((*added)["label"]),
                              req.remote_addr);
                 SendJson(res, added->value("unchanged", false) ? 200 : 201, *added);
               });
  Route(s, "POST", "/api/pipelines/" + id + "/runs",
        [this, authorized](const httplib::Request& req, httplib::Response& res) {
          if (!authorized(req, res)) return;
          ApiBackend::TriggerSpec trigger;
          trigger.name = req.matches[1];
          trigger.key = req.get_header_value("Idempotency-Key");
          if (!req.body.empty()) {
            auto body = nlohmann::json::parse(req.body, nullptr, false);
            if (body.is_discarded() || !body.is_object()) {
              return SendError(res, 400, "body must be a JSON object: {\"params\": {...}}");
            }
            for (const auto& [key, value] : body.items()) {
              if (key == "params") continue;
              if ((key == "idempotency_key" || key == "version") && value.is_string()) {
                (key == "version" ? trigger.version : trigger.key) = value.get<std::string>();
                continue;
              }
              return SendError(res, 400, "unknown body field '" + key + "'");
            }
            if (body.contains("params")) {
              const auto& p = body["params"];
              if (!p.is_object()) return SendError(res, 400, "params must be a JSON object");
              for (const auto& [name, value] : p.items()) {
                if (value.is_string()) {
                  trigger.params[name] = value.get<std::string>();
                } else if (value.is_number() || value.is_boolean()) {
                  trigger.params[name] = SafeJsonDump(value);
                } else {
                  return SendError(res, 400,
                                   "param '" + name + "' must be a string, number or boolean");
                }
              }
            }
          }
          Result<nlohmann::json> run = Status::Internal("unanswered");
          {
            std::lock_guard lock(backend_mu_);
            run = options_.backend->TriggerRun(trigger);
          }
          if (!run.ok()) {
            // A paused pipeline is a conflict with its state, not an outage.
            const int status =
                run.status().code() == StatusCode::kBusy ? 409 : HttpStatusOf(run.status());
            return SendError(res, status, run.status().message());
          }
          cache_->Clear();
          spdlog::info("http: run {} of {} triggered by {}", SafeJsonDump((*run)["run_id"]),
                       trigger.name, req.remote_addr);
          SendJson(res, run->value("existing", false) ? 200 : 201, *run);
        });
  // Pause, unpause (no body) and backfill ({"from": T1, "to": T2,
  // "max_active": N}, times as `apollo11 backfill` takes them).
  Route(s, "POST", "/api/pipelines/" + id + "/(pause|unpause|backfill)",
        [this, authorized](const httplib::Request& req, httplib::Response& res) {
          if (!authorized(req, res)) return;
          ApiBackend::RegistryChange change{req.matches[2], req.matches[1]};
          if (change.op == "backfill") {
            auto body = nlohmann::json::parse(req.body, nullptr, false);
            if (body.is_discarded() || !body.is_object()) {
              return SendError(res, 400,
                               "body must be a JSON object: {\"from\": \"2026-11-01\", "
                               "\"to\": \"2026-11-02T00:00:00Z\", \"max_active\": 2}");
            }
            Status read = ReadBackfillBody(body, &change);
            if (!read.ok()) return SendError(res, 400, read.message());
          }
          Result<nlohmann::json> done = Status::Internal("unanswered");
          {
            std::lock_guard lock(backend_mu_);
            done = options_.backend->ChangeRegistry(change);
          }
          if (!done.ok())
            return SendError(res, HttpStatusOf(done.status()), done.status().message());
          cache_->Clear();
          spdlog::info("http: {} of pipeline {} by {}", change.op, change.name, req.remote_addr);
          SendJson(res, 200, *done);
        });
  Route(s, "POST", "/api/executions/([A-Za-z0-9_.:@-]{1,600})/confirm",
        [this, authorized](const httplib::Request& req, httplib::Response& res) {
          if (!authorized(req, res)) return;
          auto body = nlohmann::json::parse(req.body, nullptr, false);
          const std::string action =
              body.is_object() && body.contains("action") && body["action"].is_string()
                  ? body["action"].get<std::string>()
                  : "";
          if (action != "kill" && action != "keep") {
            return SendError(res, 400,
                             "body must be {\"action\": \"kill\"} or {\"action\": \"keep\"}");
          }
          Result<std::string> answer = Status::Internal("unanswered");
          {
            std::lock_guard lock(backend_mu_);
            answer = options_.backend->Confirm(req.matches[1], action == "kill");
          }
          if (!answer.ok())
            return SendError(res, HttpStatusOf(answer.status()), answer.status().message());
          cache_->Clear();
          SendJson(res, 202,
                   nlohmann::json{{"exec_id", std::string(req.matches[1])},
                                  {"action", action},
                                  {"answer", *answer}});
        });
  if (options_.cluster) {
    Route(s, "GET", "/api/cluster", [this](const httplib::Request&, httplib::Response& res) {
      SendJson(res, 200, options_.cluster());
    });
  }
  if (options_.resign) {
    Route(s, "POST", "/api/cluster/resign",
          [this, authorized](const httplib::Request& req, httplib::Response& res) {
            if (!authorized(req, res)) return;
            Status s = options_.resign();
            if (!s.ok()) return SendError(res, HttpStatusOf(s), s.message());
            SendJson(res, 202, nlohmann::json{{"resign", "requested"}});
          });
  }
  // Body: {} or {"failed": true} (the default), or {"from": "TASK",
  // "downstream": true}.
  Route(s, "POST", "/api/runs/" + id + "/rerun",
        [this, authorized](const httplib::Request& req, httplib::Response& res) {
          if (!authorized(req, res)) return;
          auto body = req.body.empty() ? nlohmann::json::object()
                                       : nlohmann::json::parse(req.body, nullptr, false);
          if (body.is_discarded() || !body.is_object()) {
            return SendError(res, 400,
                             "body must be a JSON object: {\"failed\": true} or {\"from\": "
                             "\"TASK\", \"downstream\": true}");
          }
          std::string from;
          bool failed = false, downstream = false;
          for (const auto& [key, value] : body.items()) {
            if (key == "from" && value.is_string()) {
              from = value.get<std::string>();
            } else if ((key == "failed" || key == "downstream") && value.is_boolean()) {
              (key == "failed" ? failed : downstream) = value.get<bool>();
            } else {
              return SendError(res, 400, "unknown or ill-typed body field '" + key + "'");
            }
          }
          if (failed && !from.empty()) return SendError(res, 400, "give failed or from, not both");
          if (downstream && from.empty()) return SendError(res, 400, "downstream goes with from");
          const std::string original = req.matches[1];
          Result<std::string> run_id = Status::Internal("unanswered");
          {
            std::lock_guard lock(backend_mu_);
            run_id = options_.backend->Rerun(original, from, downstream);
          }
          if (!run_id.ok())
            return SendError(res, HttpStatusOf(run_id.status()), run_id.status().message());
          cache_->Clear();
          spdlog::info("http: run {} reruns {}, started by {}", *run_id, original, req.remote_addr);
          SendJson(res, 201, nlohmann::json{{"run_id", *run_id}, {"rerun_of", original}});
        });
  Route(s, "POST", "/api/runs/" + id + "/cancel",
        [this, authorized](const httplib::Request& req, httplib::Response& res) {
          if (!authorized(req, res)) return;
          const std::string run_id = req.matches[1];
          Status c;
          {
            std::lock_guard lock(backend_mu_);
            auto run = options_.backend->Query("status", run_id, 0);
            if (!run.ok())
              return SendError(res, HttpStatusOf(run.status()), run.status().message());
            const std::string state = run->value("state", "");
            if (state == "SUCCESS" || state == "FAILED" || state == "CANCELED") {
              return SendError(res, 409, "run " + run_id + " already finished: " + state);
            }
            c = options_.backend->Cancel(run_id,
                                         "canceled through the HTTP API from " + req.remote_addr);
          }
          if (!c.ok()) return SendError(res, HttpStatusOf(c), c.message());
          cache_->Clear();
          SendJson(res, 202, nlohmann::json{{"run_id", run_id}, {"cancel", "requested"}});
        });
}

}  // namespace apollo11::observability
