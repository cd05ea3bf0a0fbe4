#include "observability/http_server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netdb.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "common/json_dump.h"
#include "observability/dashboard.h"
#include "observability/dashboard_api.h"
#include "observability/event_hub.h"
#include "observability/event_pump.h"
#include "observability/guarded_http_server.h"
#include "observability/http_access.h"
#include "observability/http_routing.h"
#include "observability/overview_history.h"
#include "observability/query_cache.h"

namespace apollo11::observability {
namespace {

constexpr const char* kPromText = "text/plain; version=0.0.4; charset=utf-8";
constexpr size_t kMaxBody = 1 << 20;  // a trigger's params; nothing bigger is ever posted
// The most runs one GET /api/runs returns (as the coordinator's own cap).
constexpr uint32_t kMaxLimit = 1000;

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

}  // namespace

int HttpStatusOf(const Status& s) {
  switch (s.code()) {
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kPermissionDenied:
      return 403;
    case StatusCode::kNotLeader:
      return 421;
    case StatusCode::kConflict:
      return 409;
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

Result<std::string> ParseBasePath(const std::string& path) {
  if (path.empty() || path == "/") return std::string();
  auto bad = [&](const std::string& why) {
    return Status::InvalidInput("--http-base-path '" + path + "': " + why +
                                " (want e.g. /apollo or /tools/apollo)");
  };
  if (path.front() != '/') return bad("it must start with /");
  if (path.back() == '/') return bad("it must not end with /");
  if (path.size() > 200) return bad("longer than 200 characters");
  size_t start = 1;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    const std::string segment = path.substr(start, end - start);
    if (segment.empty() || segment == "." || segment == "..") {
      return bad("empty, . and .. segments are not allowed");
    }
    for (char c : segment) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '~' &&
          c != '-') {
        return bad(std::string("'") + c + "' is not allowed (A-Z a-z 0-9 . _ ~ -)");
      }
    }
    start = end + 1;
  }
  return path;
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
  s->access_ = std::make_unique<HttpAccess>(
      HttpAccessOptions{s->options_.api_token, s->options_.api_tokens, s->options_.api_rate_limit,
                        s->options_.clock, s->options_.oidc, s->options_.sign_in});
  auto base = ParseBasePath(s->options_.base_path);
  if (!base.ok()) return base.status();
  s->options_.base_path = *base;
  s->server_ = std::make_unique<GuardedHttpServer>(s->options_.limits);
  s->server_->SetHealthPath(s->options_.base_path + "/healthz");
  if (s->options_.tls.enabled()) {
    auto tls = TlsContext::Load(s->options_.tls);
    if (!tls.ok()) return tls.status();
    s->tls_ = std::move(*tls);
    s->server_->SetTls(s->tls_.get());
  }
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
  if (s->overview_) s->server_->SetTick([self = s.get()] { self->OnTick(); });
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
    MutexLock lock(&self->failure_mu_);
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
  MutexLock lock(&failure_mu_);
  return failure_;
}

void HttpServer::Stop() {
  {
    MutexLock lock(&failure_mu_);
    stopping_ = true;
  }
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
  if (server_) server_->Shutdown();
  // No handler runs any more: the event streams end with the server.
  pump_.reset();
  events_.reset();
}

void HttpServer::Routes() {
  httplib::Server& s = *server_;
  routes_ = std::make_unique<RouteTable>(*access_, options_.base_path);
  if (options_.backend != nullptr) {
    routes_->OnRefused(std::bind_front(&HttpServer::RecordRefusal, this));
  }
  RefuseOverlongPaths(s);  // the ids' length, for every route
  Route(s, *routes_, "GET", "/metrics",
        [this](const httplib::Request&, httplib::Response& res, const Principal&) {
          res.set_content(options_.registry->WriteText(), kPromText);
        });
  SignInRoutes(s);
  Route(s, *routes_, "GET", "/healthz",
        [this](const httplib::Request&, httplib::Response& res, const Principal&) {
          if (!options_.health) return res.set_content("ok\n", "text/plain");
          nlohmann::json body = options_.health();
          body["status"] = "ok";
          SendJson(res, 200, body);
        });
  Route(s, *routes_, "GET", "/readyz",
        [this](const httplib::Request&, httplib::Response& res, const Principal&) {
          std::string why;
          bool ready = true;
          if (options_.ready) {
            MutexLock lock(&backend_mu_);
            ready = options_.ready(&why);
          }
          res.status = ready ? 200 : 503;
          res.set_content(ready ? "ready\n" : "not ready: " + why + "\n", "text/plain");
        });
  // The third-party notices of what the binaries carry: every node.
  Route(s, *routes_, "GET", "/licenses",
        [](const httplib::Request& req, httplib::Response& res, const Principal&) {
          Dashboard::SendEmbedded("licenses.", req, res);
        });
  s.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    routes_->AnswerUnrouted(req, res);
  });
  if (options_.backend != nullptr) {
    cache_ = std::make_unique<QueryCache>(options_.clock ? options_.clock : &clock_,
                                          options_.api_cache_ttl_us);
    ApiRoutes();
    // The API's own description (docs/api/openapi.json, embedded).
    Route(s, *routes_, "GET", "/api/v1/openapi.json",
          [](const httplib::Request& req, httplib::Response& res, const Principal&) {
            Dashboard::SendEmbedded("openapi.", req, res);
          });
    nlohmann::json info = options_.node_info;
    info["mutations"] = access_->MutationsPossible();
    dashboard_api_ = std::make_unique<DashboardApi>(options_.backend, &backend_mu_, cache_.get(),
                                                    std::move(info), options_.recent_alerts);
    dashboard_api_->Register(s, *routes_);
    EventRoutes(s);
    Dashboard::Register(s, options_.base_path);
  }
}

// A read-only query; `id_group` is the regex group holding the id (0: none).
ApiHandler HttpServer::QueryRoute(const char* kind, int id_group) {
  return [this, kind, id_group](const httplib::Request& req, httplib::Response& res,
                                const Principal&) {
    // Another parameter than limit was refused by the route's access rule.
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
        MutexLock lock(&backend_mu_);
        doc = backend()->Query(kind, id, limit);
      }
      if (!doc.ok()) return doc.status();
      return SafeJsonDump(*doc);
    });
    if (!answer.ok())
      return SendError(res, HttpStatusOf(answer.status()), answer.status().message());
    SendCachedJson(**answer, req, res);
  };
}

Result<std::string> HttpServer::ReloadTls() {
  if (!tls_) return std::string();
  Status s = tls_->Reload();
  if (!s.ok()) return s;
  return tls_->Describe();
}

void HttpServer::SetApiTokens(std::vector<ApiToken> tokens) {
  access_->SetTokens(std::move(tokens));
}

void HttpServer::ApiRoutes() {
  httplib::Server& s = *server_;
  Route(s, *routes_, "GET", "/api/runs", QueryRoute("runs", 0));
  Route(s, *routes_, "GET", "/api/runs/{id}", QueryRoute("status", 1));
  Route(s, *routes_, "GET", "/api/runs/{id}/history", QueryRoute("history", 1));
  Route(s, *routes_, "GET", "/api/executions/{id}", QueryRoute("execution", 1));
  Route(s, *routes_, "GET", "/api/workers", QueryRoute("workers", 0));

  RegistryRoutes(s);
  RunRoutes(s);
  HistoryRoutes(s);
}

}  // namespace apollo11::observability
