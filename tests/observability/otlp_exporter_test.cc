// The span exporter (observability/otlp_exporter.h) against a scripted
// coordinator and a local collector (httplib::Server on port 0): a 503 is
// retried and the spans arrive, a run named final twice is sent once, a
// full queue drops the oldest runs, a run over the bound is counted, and a
// node that does not lead asks nothing. The real node, end to end, is
// tests/observability/otlp_test.py.

#include "observability/otlp_exporter.h"

#include <httplib.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

using namespace apollo11::observability;  // NOLINT: test file
using apollo11::Result;
using apollo11::Status;
using nlohmann::json;

namespace {

constexpr const char* kScriptedTrace = "00c0ffee00c0ffee";

// A coordinator with finished one-task runs: its `changes` hand out what
// the test pushes (one long poll each), its queries describe any run "rN".
class ScriptedCoordinator final : public ApiBackend {
 public:
  Result<json> Query(const std::string& kind, const std::string& id, uint32_t) override {
    std::lock_guard lock(mu_);
    ++queries_;
    const std::string run = id.substr(0, id.find('.'));
    if (kind == "run") return json{{"run_id", run}, {"tasks", tasks_}};
    if (kind == "execution") return json{{"exec_id", id}, {"trace_id", kScriptedTrace}};
    if (kind == "status") {
      return json{
          {"run_id", run},
          {"pipeline", "p.x"},
          {"state", "SUCCESS"},
          {"created_at", "2026-01-01T00:00:00.000Z"},
          {"finished_at", "2026-01-01T00:00:01.000Z"},
          {"tasks", {{"t", {{"state", "SUCCESS"}, {"attempts", 1}, {"exec_id", run + ".t"}}}}}};
    }
    if (kind == "history") {
      auto t = [&](const char* from, const char* to, int64_t ms) {
        return json{{"exec_id", run + ".t"},
                    {"task_id", "t"},
                    {"attempt", 1},
                    {"from", from},
                    {"to", to},
                    {"ts_us", 1767225600000000 + ms * 1000},
                    {"reason", "r"},
                    {"actor", "scheduler"}};
      };
      return json::array(
          {t("PENDING", "READY", 1), t("READY", "RUNNING", 2), t("RUNNING", "SUCCESS", 900)});
    }
    return Status::NotFound("no " + kind);
  }
  Result<std::string> Trigger(const std::string&,
                              const std::map<std::string, std::string>&) override {
    return Status::Unsupported("no");
  }
  Status Cancel(const std::string&, const std::string&) override {
    return Status::Unsupported("no");
  }
  Result<json> Changes(const std::string& since, uint32_t wait_ms) override {
    std::unique_lock lock(mu_);
    ++polls_;
    if (since.empty()) return json{{"feed", "F"}, {"seq", seq_}, {"changes", json::array()}};
    cv_.wait_for(lock, std::chrono::milliseconds(wait_ms), [&] { return !pushed_.empty(); });
    json changes = json::array();
    for (; !pushed_.empty(); pushed_.pop_front()) changes.push_back(pushed_.front());
    return json{{"feed", "F"}, {"seq", seq_}, {"reset", false}, {"changes", changes}};
  }
  // Runs `runs` changed in one commit, to `state`.
  void Push(const std::vector<std::string>& runs, const std::string& state = "SUCCESS") {
    std::lock_guard lock(mu_);
    for (const std::string& run : runs) {
      pushed_.push_back({{"seq", ++seq_}, {"run_id", run}, {"pipeline", "p.x"}, {"state", state}});
    }
    cv_.notify_all();
  }
  void set_tasks(int tasks) {
    std::lock_guard lock(mu_);
    tasks_ = tasks;
  }
  int polls() {
    std::lock_guard lock(mu_);
    return polls_;
  }
  // Waits until the exporter has polled from a position (it knows the feed).
  void AwaitFollowing() {
    for (int i = 0; i < 500 && polls() < 2; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<json> pushed_;
  uint64_t seq_ = 0;
  int tasks_ = 1, polls_ = 0, queries_ = 0;
};

// A collector on 127.0.0.1:PORT answering 503 to its first `refusals` POSTs.
class Collector {
 public:
  explicit Collector(int refusals) : refusals_(refusals) {
    server_.Post("/v1/traces", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(mu_);
      content_types_.push_back(req.get_header_value("Content-Type"));
      if (refusals_ > 0) {
        --refusals_;
        res.status = 503;
        return;
      }
      bodies_.push_back(json::parse(req.body));
      res.set_content("{}", "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // stop() before the loop runs would leave it running: wait for it.
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~Collector() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<json> bodies() {
    std::lock_guard lock(mu_);
    return bodies_;
  }
  std::vector<std::string> content_types() {
    std::lock_guard lock(mu_);
    return content_types_;
  }

 private:
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  int refusals_;
  std::vector<json> bodies_;
  std::vector<std::string> content_types_;
};

OtlpExporterOptions Options(const std::string& url, ApiBackend* backend, Registry* registry) {
  auto endpoint = ParseOtlpEndpoint(url);
  REQUIRE(endpoint.ok());
  OtlpExporterOptions o;
  o.endpoint = *endpoint;
  o.backend = backend;
  o.registry = registry;
  o.resource = {"test-node", "0.0.0"};
  o.first_backoff = std::chrono::milliseconds(20);
  o.max_backoff = std::chrono::milliseconds(40);
  o.timeout = std::chrono::milliseconds(2000);
  o.wait_ms = 50;
  o.flush_on_stop = std::chrono::milliseconds(500);
  return o;
}

// Waits up to 10 s for `done`.
template <class F>
bool Eventually(F done) {
  for (int i = 0; i < 1000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

}  // namespace

TEST_CASE("a collector's 503 is retried and the run's spans arrive once", "[otlp]") {
  Collector collector(/*refusals=*/1);
  ScriptedCoordinator coordinator;
  Registry registry;
  auto exporter = OtlpExporter::Start(Options(collector.url(), &coordinator, &registry));
  REQUIRE(exporter.ok());
  coordinator.AwaitFollowing();
  coordinator.Push({"r1"}, "RUNNING");  // not final: nothing is sent
  coordinator.Push({"r1"});
  coordinator.Push({"r1"});  // final again (a later commit touched it): sent once
  REQUIRE(Eventually([&] { return registry.Sum("apollo11_otlp_spans_exported_total") >= 2; }));
  (*exporter)->Stop();
  CHECK(registry.Sum("apollo11_otlp_spans_exported_total") == 2);  // the run and its attempt
  CHECK(registry.Sum("apollo11_otlp_export_failures_total") == 1);
  CHECK(registry.Sum("apollo11_otlp_spans_dropped_total") == 0);
  const std::vector<json> bodies = collector.bodies();
  REQUIRE(bodies.size() == 1);
  const json& spans = bodies[0]["resourceSpans"][0]["scopeSpans"][0]["spans"];
  REQUIRE(spans.size() == 2);
  CHECK(spans[0]["name"] == "run p.x");
  CHECK(spans[1]["parentSpanId"] == spans[0]["spanId"]);
  CHECK(spans[1]["traceId"] == std::string(16, '0') + kScriptedTrace);
  for (const std::string& type : collector.content_types()) CHECK(type == "application/json");
}

TEST_CASE("a full queue drops the oldest runs while the collector is down", "[otlp]") {
  // A port nobody listens on: every POST is refused.
  std::string url;
  {
    Collector gone(0);
    url = gone.url();
  }
  ScriptedCoordinator coordinator;
  Registry registry;
  OtlpExporterOptions o = Options(url, &coordinator, &registry);
  o.max_queued_runs = 1;
  o.first_backoff = o.max_backoff = std::chrono::milliseconds(5000);  // the sender stays away
  auto exporter = OtlpExporter::Start(std::move(o));
  REQUIRE(exporter.ok());
  coordinator.AwaitFollowing();
  coordinator.Push({"r1", "r2", "r3"});
  // At most one run is in the sender's hands and one queued: another went.
  REQUIRE(Eventually([&] { return registry.Sum("apollo11_otlp_spans_dropped_total") >= 2; }));
  (*exporter)->Stop();
  CHECK(registry.Sum("apollo11_otlp_spans_exported_total") == 0);
  CHECK(registry.Sum("apollo11_otlp_export_failures_total") >= 1);
  // Every span of the three runs is counted once: dropped from the full
  // queue, or still held when the exporter stopped.
  CHECK(registry.Sum("apollo11_otlp_spans_dropped_total") == 6);
  CHECK(registry.Sum("apollo11_otlp_queued_spans") == 0);
}

TEST_CASE("a run with more tasks than the bound is counted, not read", "[otlp]") {
  Collector collector(0);
  ScriptedCoordinator coordinator;
  coordinator.set_tasks(20000);
  Registry registry;
  auto exporter = OtlpExporter::Start(Options(collector.url(), &coordinator, &registry));
  REQUIRE(exporter.ok());
  coordinator.AwaitFollowing();
  coordinator.Push({"r9"});
  REQUIRE(Eventually([&] { return registry.Sum("apollo11_otlp_spans_dropped_total") > 0; }));
  (*exporter)->Stop();
  CHECK(registry.Sum("apollo11_otlp_spans_dropped_total") == 20001);
  CHECK(collector.bodies().empty());
}

TEST_CASE("a node whose coordinator does not lead does not follow the feed", "[otlp]") {
  Collector collector(0);
  ScriptedCoordinator coordinator;
  Registry registry;
  OtlpExporterOptions o = Options(collector.url(), &coordinator, &registry);
  std::atomic<bool> leading{false};
  o.leading = [&leading] { return leading.load(); };
  auto exporter = OtlpExporter::Start(std::move(o));
  REQUIRE(exporter.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(coordinator.polls() == 0);
  leading = true;
  CHECK(Eventually([&] { return coordinator.polls() > 0; }));
}
