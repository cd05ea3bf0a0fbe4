// The spans of a finished run as OTLP/HTTP JSON (observability/otlp_spans.h),
// built from the coordinator's answers without sockets: ids, the parent of
// each attempt, transitions as events, status, times as decimal strings,
// the per-run bound; the span queue's bounds; --otlp-endpoint's grammar.

#include "observability/otlp_spans.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <string>

#include "common/ids.h"
#include "observability/otlp_http.h"
#include "observability/otlp_span_queue.h"

using namespace apollo11::observability;  // NOLINT: test file
using nlohmann::json;

namespace {

constexpr const char* kTrace = "abcdef0123456789";
constexpr int64_t kT0 = 1767225600LL * 1000000;  // 2026-01-01T00:00:00Z in µs

// One transition as the history query prints it, `ms` after kT0.
json Transition(const std::string& task, uint32_t attempt, const std::string& from,
                const std::string& to, int64_t ms, const std::string& reason,
                const std::string& worker = "") {
  json t = {{"run_id", "r1"},           {"task_id", task},  {"exec_id", "r1." + task},
            {"attempt", attempt},       {"from", from},     {"to", to},
            {"ts_us", kT0 + ms * 1000}, {"reason", reason}, {"actor", "scheduler"}};
  if (!worker.empty()) t["worker"] = worker;
  return t;
}

// A FAILED run: a retried then successful task, a failed one, one canceled
// before it ran, and one whose worker was lost (requeued, then successful).
json StatusDoc() {
  return {{"run_id", "r1"},
          {"pipeline", "etl.daily"},
          {"state", "FAILED"},
          {"reason", "task b failed"},
          {"created_at", "2026-01-01T00:00:00.000Z"},
          {"finished_at", "2026-01-01T00:00:10.000Z"},
          {"tasks",
           {{"a",
             {{"state", "SUCCESS"},
              {"attempts", 2},
              {"exec_id", "r1.a"},
              {"exit_code", 0},
              {"worker", "w1"}}},
            {"b",
             {{"state", "FAILED"},
              {"attempts", 1},
              {"exec_id", "r1.b"},
              {"exit_code", 3},
              {"worker", "w2"}}},
            {"c", {{"state", "CANCELED"}, {"attempts", 0}, {"exec_id", "r1.c"}}},
            {"d",
             {{"state", "SUCCESS"},
              {"attempts", 2},
              {"exec_id", "r1.d"},
              {"exit_code", 0},
              {"worker", "w2"}}}}}};
}

json History() {
  return json::array({
      Transition("a", 1, "PENDING", "READY", 100, "no dependencies"),
      Transition("a", 1, "READY", "RUNNING", 200, "dispatched to worker w1", "w1"),
      Transition("a", 1, "RUNNING", "RETRYING", 1200, "attempt 1 failed (exit code 1); retry 1"),
      Transition("a", 2, "RETRYING", "READY", 2200, "retry 1 of 3 due"),
      Transition("a", 2, "READY", "RUNNING", 2300, "dispatched to worker w1", "w1"),
      Transition("a", 2, "RUNNING", "SUCCESS", 3300, "exited 0"),
      Transition("b", 1, "PENDING", "READY", 100, "no dependencies"),
      Transition("b", 1, "READY", "RUNNING", 300, "dispatched to worker w2", "w2"),
      Transition("b", 1, "RUNNING", "FAILED", 900, "attempt 1 failed (exit code 3)"),
      Transition("c", 0, "PENDING", "CANCELED", 900, "upstream b failed"),
      Transition("d", 1, "PENDING", "READY", 100, "no dependencies"),
      Transition("d", 1, "READY", "RUNNING", 400, "dispatched to worker w3", "w3"),
      Transition("d", 2, "RUNNING", "READY", 5000, "worker w3 lost (requeue 1 of 3)"),
      Transition("d", 2, "READY", "RUNNING", 5100, "dispatched to worker w2", "w2"),
      Transition("d", 2, "RUNNING", "SUCCESS", 9000, "exited 0"),
  });
}

std::string Nanos(int64_t ms_after_t0) { return std::to_string((kT0 + ms_after_t0 * 1000) * 1000); }

// The value of attribute `key` in an OTLP attribute list (null when absent).
json Attr(const json& attributes, const std::string& key) {
  for (const json& kv : attributes) {
    if (kv["key"] == key) return kv["value"];
  }
  return nullptr;
}

const json& SpanNamed(const RunSpans& spans, const std::string& exec_id, int attempt) {
  for (const json& s : spans.spans) {
    if (Attr(s["attributes"], "apollo11.exec_id") == json{{"stringValue", exec_id}} &&
        Attr(s["attributes"], "apollo11.attempt") == json{{"intValue", std::to_string(attempt)}}) {
      return s;
    }
  }
  FAIL("no span of " << exec_id << " attempt " << attempt);
  static const json kNone;
  return kNone;
}

RunSpans Build(const OtlpSpanLimits& limits = {}) {
  const json status = StatusDoc(), history = History();
  auto spans = BuildRunSpans(status, &history, kTrace, limits);
  REQUIRE(spans.ok());
  return *spans;
}

}  // namespace

TEST_CASE("a run is one root span and one child span per attempt, ids as TRACEPARENT names them",
          "[otlp]") {
  const RunSpans spans = Build();
  REQUIRE(spans.spans.size() == 6);  // the run, a#1, a#2, b#1, d#1, d#2
  CHECK(spans.omitted == 0);
  const json& run = spans.spans.front();
  const std::string parent = apollo11::TraceParent(kTrace, "r1", 0);
  CHECK(run["traceId"] == "0000000000000000abcdef0123456789");
  CHECK(run["spanId"] == parent.substr(36, 16));
  CHECK(run["spanId"] == RunSpanId(kTrace, "r1"));
  CHECK_FALSE(run.contains("parentSpanId"));
  CHECK(run["name"] == "run etl.daily");
  CHECK(run["kind"] == 1);
  for (size_t i = 1; i < spans.spans.size(); ++i) {
    const json& s = spans.spans[i];
    CHECK(s["traceId"] == run["traceId"]);
    CHECK(s["parentSpanId"] == run["spanId"]);
    const std::string exec = Attr(s["attributes"], "apollo11.exec_id")["stringValue"];
    const int attempt =
        std::stoi(Attr(s["attributes"], "apollo11.attempt")["intValue"].get<std::string>());
    // The span id the attempt's TRACEPARENT carried: a task's own spans nest here.
    CHECK(s["spanId"] == apollo11::TraceParent(kTrace, exec, attempt).substr(36, 16));
    CHECK(s["spanId"].get<std::string>().size() == 16);
  }
  CHECK(SpanNamed(spans, "r1.a", 1)["name"] == "task a");
}

TEST_CASE("an attempt span runs from its dispatch to the transition that ended it", "[otlp]") {
  const RunSpans spans = Build();
  const json& retried = SpanNamed(spans, "r1.a", 1);
  CHECK(retried["startTimeUnixNano"] == Nanos(200));
  CHECK(retried["endTimeUnixNano"] == Nanos(1200));
  CHECK(retried["startTimeUnixNano"].is_string());
  CHECK(Attr(retried["attributes"], "apollo11.state") == json{{"stringValue", "RETRYING"}});
  CHECK(retried["status"]["code"] == 2);
  CHECK_FALSE(Attr(retried["attributes"], "apollo11.exit_code").is_object());  // not the latest
  REQUIRE(retried["events"].size() == 3);
  CHECK(retried["events"][0]["name"] == "READY");
  CHECK(retried["events"][1]["name"] == "RUNNING");
  CHECK(retried["events"][1]["timeUnixNano"] == Nanos(200));
  CHECK(Attr(retried["events"][1]["attributes"], "apollo11.worker") == json{{"stringValue", "w1"}});
  CHECK(Attr(retried["events"][2]["attributes"], "apollo11.from") ==
        json{{"stringValue", "RUNNING"}});
  CHECK(Attr(retried["events"][2]["attributes"], "apollo11.actor") ==
        json{{"stringValue", "scheduler"}});

  const json& succeeded = SpanNamed(spans, "r1.a", 2);
  CHECK(succeeded["status"]["code"] == 0);
  CHECK(Attr(succeeded["attributes"], "apollo11.exit_code") == json{{"intValue", "0"}});
  CHECK(Attr(succeeded["attributes"], "apollo11.worker") == json{{"stringValue", "w1"}});

  const json& failed = SpanNamed(spans, "r1.b", 1);
  CHECK(failed["status"]["code"] == 2);
  CHECK(failed["status"]["message"] == "attempt 1 failed (exit code 3)");
  CHECK(Attr(failed["attributes"], "apollo11.exit_code") == json{{"intValue", "3"}});
  CHECK(Attr(failed["attributes"], "apollo11.state") == json{{"stringValue", "FAILED"}});
}

TEST_CASE("an attempt whose worker was lost ends at the requeue, as an error", "[otlp]") {
  const RunSpans spans = Build();
  const json& lost = SpanNamed(spans, "r1.d", 1);
  CHECK(lost["startTimeUnixNano"] == Nanos(400));
  CHECK(lost["endTimeUnixNano"] == Nanos(5000));
  CHECK(Attr(lost["attributes"], "apollo11.state") == json{{"stringValue", "REQUEUED"}});
  CHECK(Attr(lost["attributes"], "apollo11.worker") == json{{"stringValue", "w3"}});
  CHECK(lost["status"]["code"] == 2);
  const json& again = SpanNamed(spans, "r1.d", 2);
  CHECK(again["startTimeUnixNano"] == Nanos(5100));
  CHECK(Attr(again["attributes"], "apollo11.worker") == json{{"stringValue", "w2"}});
}

TEST_CASE("the run span covers its attempts, says how it ended, and holds tasks that never ran",
          "[otlp]") {
  const RunSpans spans = Build();
  const json& run = spans.spans.front();
  CHECK(run["startTimeUnixNano"] == Nanos(0));
  CHECK(run["endTimeUnixNano"] == Nanos(10000));
  CHECK(run["status"]["code"] == 2);
  CHECK(run["status"]["message"] == "task b failed");
  CHECK(Attr(run["attributes"], "apollo11.run_id") == json{{"stringValue", "r1"}});
  CHECK(Attr(run["attributes"], "apollo11.pipeline") == json{{"stringValue", "etl.daily"}});
  CHECK(Attr(run["attributes"], "apollo11.state") == json{{"stringValue", "FAILED"}});
  CHECK(Attr(run["attributes"], "apollo11.reason") == json{{"stringValue", "task b failed"}});
  REQUIRE(run["events"].size() == 1);
  CHECK(run["events"][0]["name"] == "CANCELED");
  CHECK(Attr(run["events"][0]["attributes"], "apollo11.task_id") == json{{"stringValue", "c"}});

  json succeeded = StatusDoc();
  succeeded["state"] = "SUCCESS";
  succeeded.erase("reason");
  const json history = History();
  auto ok = BuildRunSpans(succeeded, &history, kTrace, {});
  REQUIRE(ok.ok());
  CHECK(ok->spans.front()["status"]["code"] == 0);

  // An attempt that ended after the recorded finish (millisecond precision)
  // still lies inside the run span.
  json late = StatusDoc();
  late["finished_at"] = "2026-01-01T00:00:08.000Z";
  auto widened = BuildRunSpans(late, &history, kTrace, {});
  REQUIRE(widened.ok());
  CHECK(widened->spans.front()["endTimeUnixNano"] == Nanos(9000));
}

TEST_CASE("a run over the attempt bound is exported as its run span with a note", "[otlp]") {
  OtlpSpanLimits limits;
  limits.max_attempt_spans = 4;
  const RunSpans capped = Build(limits);
  REQUIRE(capped.spans.size() == 1);
  CHECK(capped.omitted == 5);
  const json& run = capped.spans.front();
  CHECK(Attr(run["attributes"], "apollo11.spans_omitted") == json{{"intValue", "5"}});
  CHECK(Attr(run["attributes"], "apollo11.note").is_object());

  // Without a history (not read: the status already said too many).
  const json status = StatusDoc();
  auto unread = BuildRunSpans(status, nullptr, kTrace, {});
  REQUIRE(unread.ok());
  CHECK(unread->spans.size() == 1);
  CHECK(unread->omitted == AttemptsOf(status));
  CHECK(AttemptsOf(status) == 5);
}

TEST_CASE("long attributes are cut and the run span's events are bounded", "[otlp]") {
  OtlpSpanLimits limits;
  limits.max_attribute_bytes = 10;
  limits.max_run_events = 0;
  json status = StatusDoc();
  status["reason"] = std::string(100, 'x');
  const json history = History();
  auto spans = BuildRunSpans(status, &history, kTrace, limits);
  REQUIRE(spans.ok());
  const json& run = spans->spans.front();
  CHECK(Attr(run["attributes"], "apollo11.reason")["stringValue"] == "xxxxxxxxxx...");
  CHECK(run["events"].empty());
  CHECK(run["droppedEventsCount"] == 1);
}

TEST_CASE("a status without a run or a malformed trace id is refused", "[otlp]") {
  const json history = History();
  CHECK_FALSE(BuildRunSpans(json::object(), &history, kTrace, {}).ok());
  CHECK_FALSE(BuildRunSpans(StatusDoc(), &history, "not-hex", {}).ok());
  CHECK_FALSE(BuildRunSpans(StatusDoc(), &history, "", {}).ok());
  CHECK(OtlpTraceId("1") == std::string(31, '0') + "1");
  CHECK(OtlpTraceId("0000") == "");
}

TEST_CASE("an export request holds the resource, the scope and the spans", "[otlp]") {
  const RunSpans spans = Build();
  const json request = TraceExportRequest({"host-1a2b", "1.2.3"}, spans.spans);
  REQUIRE(request["resourceSpans"].size() == 1);
  const json& rs = request["resourceSpans"][0];
  CHECK(Attr(rs["resource"]["attributes"], "service.name") == json{{"stringValue", "apollo11"}});
  CHECK(Attr(rs["resource"]["attributes"], "service.instance.id") ==
        json{{"stringValue", "host-1a2b"}});
  CHECK(Attr(rs["resource"]["attributes"], "service.version") == json{{"stringValue", "1.2.3"}});
  REQUIRE(rs["scopeSpans"].size() == 1);
  CHECK(rs["scopeSpans"][0]["scope"]["name"] == "apollo11");
  CHECK(rs["scopeSpans"][0]["spans"].size() == spans.spans.size());
}

TEST_CASE("the span queue drops the oldest runs past its bounds and batches across runs",
          "[otlp]") {
  auto spans = [](size_t n) { return std::vector<json>(n, json::object()); };
  OtlpSpanQueue by_runs(2, 100);
  CHECK(by_runs.Push(spans(3)) == 0);
  CHECK(by_runs.Push(spans(4)) == 0);
  CHECK(by_runs.Push(spans(5)) == 3);  // the oldest run went
  CHECK(by_runs.runs() == 2);
  CHECK(by_runs.spans() == 9);
  CHECK(by_runs.TakeBatch(6).size() == 6);  // a run split over two batches
  CHECK(by_runs.spans() == 3);
  CHECK(by_runs.runs() == 1);

  OtlpSpanQueue by_spans(10, 10);
  CHECK(by_spans.Push(spans(6)) == 0);
  CHECK(by_spans.Push(spans(6)) == 6);
  CHECK(by_spans.Push(spans(11)) == 11);  // more than the queue holds: itself
  CHECK(by_spans.spans() == 6);
  CHECK(by_spans.TakeBatch(100).size() == 6);
  CHECK(by_spans.empty());
}

TEST_CASE("an OTLP endpoint is an http or https URL with a host and a port, nothing else",
          "[otlp]") {
  auto plain = ParseOtlpEndpoint("http://127.0.0.1:4318");
  REQUIRE(plain.ok());
  CHECK(plain->origin == "http://127.0.0.1:4318");
  CHECK(plain->path == "/v1/traces");
  CHECK(plain->url() == "http://127.0.0.1:4318/v1/traces");
  auto tls = ParseOtlpEndpoint("https://otel.example.com");
  REQUIRE(tls.ok());
  CHECK(tls->origin == "https://otel.example.com:443");
  auto prefixed = ParseOtlpEndpoint("http://gw:8080/otlp/");
  REQUIRE(prefixed.ok());
  CHECK(prefixed->path == "/otlp/v1/traces");
  auto full = ParseOtlpEndpoint("http://gw:4318/v1/traces");
  REQUIRE(full.ok());
  CHECK(full->path == "/v1/traces");
  auto v6 = ParseOtlpEndpoint("http://[::1]:4318");
  REQUIRE(v6.ok());
  CHECK(v6->origin == "http://[::1]:4318");
  for (const char* bad :
       {"", "127.0.0.1:4318", "ftp://h:21", "grpc://h:4317", "http://", "http://:4318",
        "http://h:0", "http://h:65536", "http://h:x", "http://h:", "http://user:pw@h:4318",
        "http://h:4318/?a=1", "http://h:4318/#x", "http://h 1:4318", "http://[::1:4318"}) {
    auto parsed = ParseOtlpEndpoint(bad);
    CHECK_FALSE(parsed.ok());
    if (!parsed.ok()) CHECK(parsed.status().message().find("--otlp-endpoint") != std::string::npos);
  }
}
