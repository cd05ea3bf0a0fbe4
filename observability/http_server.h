#pragma once
// The node's HTTP endpoint (cpp-httplib behind GuardedHttpServer's deadlines
// and per-address cap; Range is ignored): /metrics (Prometheus text),
// /healthz, /readyz and, on a coordinator, the JSON API under /api/ and the
// dashboard at / (observability/dashboard.h). Read-only API answers are
// shared by all clients for `api_cache_ttl_us` (QueryCache). Who may call
// which route is http_access.h's table: a principal from a bearer token
// (the tokens file, or the single --api-token) or anonymous.
//
// Threads: Start binds, then serves on its own thread (httplib's worker pool
// answers requests); Stop (or the destructor) stops and joins it.

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "common/clock.h"
#include "common/log_limiter.h"
#include "common/mutex.h"
#include "common/status.h"
#include "observability/api_backend.h"
#include "observability/api_tokens.h"
#include "observability/http_limits.h"
#include "observability/http_routing.h"
#include "observability/metrics_registry.h"
#include "observability/tls_context.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace apollo11::observability {

class GuardedHttpServer;
class HttpAccess;
class OidcSignIn;
class QueryCache;
class DashboardApi;
class EventHub;
class EventPump;
class OverviewHistory;
class RouteTable;

struct HostPort {
  std::string host;
  int port = 0;
};
// Parses "HOST:PORT" or "[V6]:PORT" (port 0 = any free port).
Result<HostPort> ParseHttpBind(const std::string& bind);
// The HTTP status an API error is answered with (404 for NotFound, 400 for
// bad input, 503 when the coordinator is unreachable or busy...).
int HttpStatusOf(const Status& s);
// A --http-base-path: "" or "/" (the root, as ""), or "/" and segments of
// [A-Za-z0-9._~-] separated by single slashes, without a trailing slash or
// "." and ".." segments.
Result<std::string> ParseBasePath(const std::string& path);
// True for "localhost" and numeric loopback addresses (127.0.0.0/8, ::1,
// ::ffff:127.x.y.z); a name such as "127.example.com" is not one.
bool IsLoopbackHost(const std::string& host);

struct HttpServerOptions {
  std::string bind = "127.0.0.1:8011";
  // The single --api-token (principal "api-token", admin; "" = none), the
  // tokens file's principals (set: anonymous callers may do nothing) and
  // the mutating requests a principal may send per second (0: unlimited).
  std::string api_token;
  std::optional<std::vector<ApiToken>> api_tokens;
  double api_rate_limit = 20;
  // Single sign-on (oidc.h); null = none. Must outlive the server.
  OidcVerifier* oidc = nullptr;
  // The dashboard's sign-in through that provider (oidc_sign_in.h): the
  // /auth/ routes and session cookies; null = none. Must outlive the server.
  OidcSignIn* sign_in = nullptr;
  // TLS on the port (tls_context.h); not enabled = plain HTTP.
  TlsFiles tls;
  // Every path is served below this ("" = at the root; "/apollo": the
  // dashboard at /apollo/, the API at /apollo/api/...), for a reverse proxy
  // that serves the node under a sub-path. Checked by ParseBasePath.
  std::string base_path;
  const Registry* registry = nullptr;  // required; must outlive the server
  // The JSON API; null serves no /api/ (a worker node). Must outlive the server.
  ApiBackend* backend = nullptr;
  // The live events' own link to the coordinator (event_pump.h), used by
  // one thread at a time; null serves no GET /api/v1/events. Must outlive
  // the server.
  ApiBackend* feed_backend = nullptr;
  // /readyz: true when ready; otherwise fills the reason. Called on server
  // threads, one at a time.
  std::function<bool(std::string* why)> ready;
  // Deadlines, the per-address cap and the pool size.
  HttpLimits limits;
  // How long a read-only API answer is shared by every client before the
  // coordinator is asked again; 0 asks it on each request.
  Micros api_cache_ttl_us = 1'000'000;
  // Dates the shared answers; null = the system clock. Must outlive the server.
  const Clock* clock = nullptr;
  // What GET /api/node answers (role, epoch...); the server adds
  // "mutations" (whether any principal may change anything).
  nlohmann::json node_info = nlohmann::json::object();
  // GET /api/alerts: the alerts delivered recently, at most `limit`, newest
  // first ({"alerts": [...]}); null lists none. Called on HTTP threads, any
  // number at once; what it reads must outlive the server.
  std::function<nlohmann::json(uint32_t limit)> recent_alerts;
  // election (HA coordinators; null otherwise). `health`: /healthz answers
  // {"status":"ok", ...health()} (role, epoch, leader) instead of "ok".
  // `cluster`: GET /api/cluster. `resign`: POST /api/cluster/resign (bearer
  // token) asks the leader to hand over. Called on HTTP threads.
  std::function<nlohmann::json()> health;
  std::function<nlohmann::json()> cluster;
  std::function<Status()> resign;
};

class HttpServer {
 public:
  static Result<std::unique_ptr<HttpServer>> Start(HttpServerOptions options);
  ~HttpServer();
  void Stop();
  // "HOST:PORT" actually bound (port 0 resolved).
  const std::string& bound() const { return bound_; }
  // A reload of the tokens file: its new principals, in force for the next
  // request. Any thread.
  void SetApiTokens(std::vector<ApiToken> tokens);
  // A reload of the TLS certificate and key (the same files), for the
  // connections that come next; the old ones are kept on error. Returns
  // what is served now ("" without TLS). Any thread.
  Result<std::string> ReloadTls();
  // Whether the port serves TLS.
  bool tls() const { return tls_ != nullptr; }
  // Why the server stopped serving on its own (its listening loop returned
  // without a Stop), nullopt while it serves. Any thread.
  std::optional<std::string> failure() const;

 private:
  HttpServer() = default;
  void Routes();
  // The JSON API: read-only queries (ApiRoutes), the registry's calls
  // (http_registry_routes.cc) and the runs' (http_run_routes.cc).
  void ApiRoutes();
  void RegistryRoutes(httplib::Server& s);
  // GET /api/whoami and the dashboard's sign-in: /auth/login,
  // /auth/callback, /auth/logout (http_sign_in_routes.cc).
  void SignInRoutes(httplib::Server& s);
  void RunRoutes(httplib::Server& s);
  // GET /api/v1/runs: the history, filtered and paged (http_history_routes.cc).
  void HistoryRoutes(httplib::Server& s);
  // GET /api/v1/events (live events, event_hub.h) and GET
  // /api/v1/overview/history (http_event_routes.cc); the overview's
  // sampling on the reader's tick.
  void EventRoutes(httplib::Server& s);
  void OnTick();
  // The handlers of their POSTs, each answering one request on an httplib
  // worker thread (one backend call at a time, under backend_mu_):
  // registering a pipeline, triggering its run, changing its registry state
  // (pause, unpause, remove, backfill); answering a slow task, rerunning and
  // canceling a run. `who` is the caller HttpAccess admitted.
  void RegisterPipeline(const httplib::Request& req, httplib::Response& res, const Principal& who);
  void TriggerPipelineRun(const httplib::Request& req, httplib::Response& res,
                          const Principal& who);
  void ChangePipeline(const httplib::Request& req, httplib::Response& res, const Principal& who);
  void ConfirmExecution(const httplib::Request& req, httplib::Response& res, const Principal& who);
  void RerunRun(const httplib::Request& req, httplib::Response& res, const Principal& who);
  void CancelRun(const httplib::Request& req, httplib::Response& res, const Principal& who);
  // The audit record of a changing request HttpAccess refused (its
  // RefusalHook): at most 10 a second are sent to the coordinator, the next
  // one counts those left out.
  void RecordRefusal(const httplib::Request& req, const httplib::Response& res,
                     const HttpRule& rule);
  // A resign asked of this node, recorded before it is done (and again if
  // it fails).
  void Resign(const httplib::Request& req, httplib::Response& res, const Principal& who);
  // GET /api/audit?since=&principal=&action=&limit= (http_run_routes.cc).
  void AuditTrail(const httplib::Request& req, httplib::Response& res, const Principal& who);
  // A handler answering the read-only query `kind` through the cache, its
  // id in regex group `id_group` (0: none).
  ApiHandler QueryRoute(const char* kind, int id_group);
  // options_.backend, which takes one call at a time.
  ApiBackend* backend() REQUIRES(backend_mu_) { return options_.backend; }

  HttpServerOptions options_;
  std::unique_ptr<HttpAccess> access_;
  std::unique_ptr<TlsContext> tls_;  // null: plain HTTP
  std::unique_ptr<GuardedHttpServer> server_;
  // Filled before the server serves (Routes), read-only after.
  std::unique_ptr<RouteTable> routes_;
  std::string bound_;
  Mutex backend_mu_;  // one backend call (or readiness check) at a time
  // Refusals sent to the audit trail: a flood of them waits on neither the
  // backend nor each other beyond this limiter.
  Mutex refusal_mu_;
  LogLimiter refusals_recorded_ GUARDED_BY(refusal_mu_){10, kMicrosPerSecond};
  Micros refusals_paused_until_ GUARDED_BY(refusal_mu_) = 0;  // Steady()
  SystemClock clock_;
  std::unique_ptr<QueryCache> cache_;
  std::unique_ptr<DashboardApi> dashboard_api_;
  // Declared after cache_: destroyed before it (the pump clears it).
  std::unique_ptr<OverviewHistory> overview_;
  std::unique_ptr<EventHub> events_;
  std::unique_ptr<EventPump> pump_;  // null without feed_backend
  std::jthread thread_;
  mutable Mutex failure_mu_;
  bool stopping_ GUARDED_BY(failure_mu_) = false;
  std::optional<std::string> failure_ GUARDED_BY(failure_mu_);
};

}  // namespace apollo11::observability
