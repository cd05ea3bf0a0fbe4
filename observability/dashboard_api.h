#pragma once
// The API routes the dashboard needs beyond the CLI's JSON API:
//   GET /api/node                          role, epoch, whether mutations are possible
//   GET /api/runs/ID/graph                 the run's pipeline as a graph (ids, types, edges)
//   GET /api/executions/ID/logs?stream=out|err&attempt=N&offset=K
//                                          a slice (at most 64 KiB) of captured output
//   GET /api/executions/ID/trace           the coordinator's log lines about it
//   GET /api/alerts?limit=N                the alerts held in the fold window, being
//                                          delivered, then delivered lately, newest first
//                                          (default 50, 1 to 1000; 200 are kept)
// Logs are paged by the `offset` parameter, never by Range (which the server
// drops). Answers go through the shared QueryCache where they may be shared.

#include <httplib.h>

#include <functional>
#include <nlohmann/json.hpp>

#include "common/mutex.h"
#include "observability/api_backend.h"
#include "observability/query_cache.h"

namespace apollo11::observability {

class RouteTable;

class DashboardApi {
 public:
  // The most bytes of output one logs answer carries.
  static constexpr uint32_t kMaxLogSlice = 64 << 10;

  // The alerts /api/alerts lists: at most `limit`, newest first, as
  // {"alerts": [...], ...}. Called on HTTP threads, any number at once.
  using RecentAlerts = std::function<nlohmann::json(uint32_t limit)>;

  // `backend` calls are made holding `backend_mu`; all three must outlive the
  // server. `node_info` is sent as is by /api/node. Without `recent_alerts`,
  // /api/alerts answers an empty list.
  DashboardApi(ApiBackend* backend, Mutex* backend_mu, QueryCache* cache, nlohmann::json node_info,
               RecentAlerts recent_alerts = {});

  // Registers the routes (through `routes`, so each is access-checked);
  // call once before the server serves.
  void Register(httplib::Server& server, RouteTable& routes);

 private:
  void Graph(const httplib::Request& req, httplib::Response& res);
  void Logs(const httplib::Request& req, httplib::Response& res);
  void Trace(const httplib::Request& req, httplib::Response& res);
  void Alerts(const httplib::Request& req, httplib::Response& res);

  ApiBackend* backend_ PT_GUARDED_BY(backend_mu_);
  Mutex* backend_mu_;
  QueryCache* cache_;
  const nlohmann::json node_info_;
  const RecentAlerts recent_alerts_;
};

// Sends `answer` as JSON with its ETag and Cache-Control: no-cache, or 304
// when the request's If-None-Match is that ETag.
void SendCachedJson(const CachedAnswer& answer, const httplib::Request& req,
                    httplib::Response& res);

}  // namespace apollo11::observability
