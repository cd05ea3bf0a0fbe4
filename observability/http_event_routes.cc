// The HTTP server's live routes: GET /api/v1/events, the Server-Sent Events
// stream of what changes (event_hub.h, fed by event_pump.h), and GET
// /api/v1/overview/history, the overview charts' last hour
// (overview_history.h), sampled on the request reader's tick.

#include <httplib.h>

#include "observability/event_hub.h"
#include "observability/event_pump.h"
#include "observability/guarded_http_server.h"
#include "observability/http_routing.h"
#include "observability/http_server.h"
#include "observability/overview_history.h"
#include "observability/query_cache.h"

namespace apollo11::observability {
namespace {

// The longest Last-Event-ID this node makes ("HUB.SEQ"); a longer one is
// not ours, and is treated as none.
constexpr size_t kMaxEventId = 64;

// Forgets the shared answers (keys "KIND:ID:...", see QueryRoute and
// dashboard_api.cc) that show `what` changed: a run's own answers and those
// of its executions ("RUN.TASK"), and the lists any run may appear in; the
// workers' or the alerts' answers; everything for "".
void ForgetShown(QueryCache& cache, const std::string& what) {
  if (what.empty()) return cache.Clear();
  if (what == "workers" || what == "alerts") {
    const std::string kind = what + ":";
    return cache.Forget([&](const std::string& key) { return key.starts_with(kind); });
  }
  static constexpr std::string_view kLists[] = {
      "runs:", "runs_page:", "pipelines:", "pipeline:", "pipeline_versions:"};
  const std::string id = ":" + what, exec = ":" + what + ".";
  cache.Forget([&](const std::string& key) {
    for (std::string_view list : kLists) {
      if (key.starts_with(list)) return true;
    }
    const size_t colon = key.find(':');
    if (colon == std::string::npos) return false;
    const std::string_view rest = std::string_view(key).substr(colon);
    return rest.starts_with(exec) || rest == id || rest.starts_with(id + ":");
  });
}

}  // namespace

void HttpServer::EventRoutes(httplib::Server& s) {
  overview_ = std::make_unique<OverviewHistory>(options_.registry);
  events_ = std::make_unique<EventHub>();
  if (options_.feed_backend != nullptr) {
    pump_ = std::make_unique<EventPump>(EventPump::Sources{
        options_.feed_backend, events_.get(),
        [cache = cache_.get()](const std::string& what) { ForgetShown(*cache, what); },
        options_.recent_alerts});
  }
  Route(s, *routes_, "GET", "/api/overview/history",
        [this](const httplib::Request&, httplib::Response& res, const Principal&) {
          SendJson(res, 200, overview_->Json());
        });
  Route(s, *routes_, "GET", "/api/events",
        [this](const httplib::Request& req, httplib::Response& res, const Principal&) {
          if (!pump_) {
            return SendError(res, 503, "this node does not serve live events: poll the API");
          }
          std::string why;
          if (!events_->HasRoom(req.remote_addr, &why)) {
            return SendError(res, 503, why + "; poll the API instead");
          }
          std::string last = req.get_header_value("Last-Event-ID");
          if (last.size() > kMaxEventId) last.clear();
          // The pump starts once the stream is in: a fresh pump's reset
          // reaches it.
          const bool kept = GuardedHttpServer::KeepOpen(
              [hub = events_.get(), pump = pump_.get(), last](std::unique_ptr<HeldConnection> c) {
                hub->Add(std::move(c), last, "");
                pump->Wake();
              });
          if (!kept) return SendError(res, 500, "this server cannot keep a stream open");
        });
}

void HttpServer::OnTick() {
  const Clock* clock = options_.clock ? options_.clock : &clock_;
  std::string sample = overview_->Tick(clock->Steady(), clock->Now());
  if (!sample.empty() && events_ && events_->streams() > 0) events_->Publish("sample", sample);
}

}  // namespace apollo11::observability
