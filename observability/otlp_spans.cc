#include "observability/otlp_spans.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <map>
#include <utility>

#include "common/clock.h"
#include "common/ids.h"
#include "common/timestamp_parse.h"

namespace apollo11::observability {
namespace {

constexpr int kSpanKindInternal = 1;  // SPAN_KIND_INTERNAL
constexpr int kStatusUnset = 0;       // STATUS_CODE_UNSET
constexpr int kStatusError = 2;       // STATUS_CODE_ERROR
// Where TraceParent's "00-TRACE-SPAN-01" holds each part.
constexpr size_t kTraceAt = 3, kTraceLength = 32, kSpanAt = 36, kSpanLength = 16;

using Json = nlohmann::json;

std::string TextOf(const Json& doc, const char* key) {
  auto it = doc.find(key);
  return it != doc.end() && it->is_string() ? it->get<std::string>() : std::string();
}

int64_t IntOf(const Json& doc, const char* key, int64_t otherwise = 0) {
  auto it = doc.find(key);
  return it != doc.end() && it->is_number_integer() ? it->get<int64_t>() : otherwise;
}

// Unix nanoseconds as the decimal string of the fixed64 fields.
std::string Nanos(Micros us) {
  return std::to_string(static_cast<uint64_t>(std::max<Micros>(us, 0)) * 1000);
}

// At most `max_bytes` of `text`, not cutting a UTF-8 sequence.
std::string Cut(std::string text, size_t max_bytes) {
  if (text.size() <= max_bytes) return text;
  size_t end = max_bytes;
  while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  text.resize(end);
  return text + "...";
}

// One OTLP KeyValue of each kind, appended to `list`.
class AttributeList {
 public:
  explicit AttributeList(size_t max_bytes) : max_bytes_(max_bytes) {}
  AttributeList& Text(const char* key, std::string value) {
    list_.push_back(
        {{"key", key}, {"value", {{"stringValue", Cut(std::move(value), max_bytes_)}}}});
    return *this;
  }
  AttributeList& Int(const char* key, int64_t value) {
    list_.push_back({{"key", key}, {"value", {{"intValue", std::to_string(value)}}}});
    return *this;
  }
  AttributeList& Bool(const char* key, bool value) {
    list_.push_back({{"key", key}, {"value", {{"boolValue", value}}}});
    return *this;
  }
  Json Take() { return std::move(list_); }

 private:
  size_t max_bytes_;
  Json list_ = Json::array();
};

Json SpanStatus(bool error, const std::string& message) {
  if (!error) return {{"code", kStatusUnset}};
  return {{"code", kStatusError}, {"message", message}};
}

// One transition (the history query's document) as a span event.
Json TransitionEvent(const Json& t, const OtlpSpanLimits& limits, bool with_task) {
  AttributeList attrs(limits.max_attribute_bytes);
  if (with_task) attrs.Text("apollo11.task_id", TextOf(t, "task_id"));
  attrs.Text("apollo11.from", TextOf(t, "from"))
      .Text("apollo11.reason", TextOf(t, "reason"))
      .Text("apollo11.actor", TextOf(t, "actor"));
  if (const std::string worker = TextOf(t, "worker"); !worker.empty()) {
    attrs.Text("apollo11.worker", worker);
  }
  if (t.value("note", false)) attrs.Bool("apollo11.note", true);
  return {{"timeUnixNano", Nanos(IntOf(t, "ts_us"))},
          {"name", TextOf(t, "to")},
          {"attributes", attrs.Take()}};
}

using AttemptKey = std::pair<std::string, uint32_t>;  // exec id, attempt
using Transitions = std::vector<const Json*>;         // in journal order

// How one attempt ended: when, in what state, why.
struct AttemptEnd {
  Micros at = 0;
  std::string state, reason;
};

bool LeftAttempt(const std::string& to) { return to != "READY" && to != "RUNNING"; }

// The attempt's end: its last state change out of READY/RUNNING, or, for an
// attempt whose worker was lost, the requeue that began the next one
// (journaled under the next attempt: RUNNING -> READY).
AttemptEnd EndOf(const Transitions& own, const Transitions* next, Micros run_end) {
  const Json* last = nullptr;
  for (const Json* t : own) {
    if (!t->value("note", false)) last = t;
  }
  if (last != nullptr && LeftAttempt(TextOf(*last, "to"))) {
    return {IntOf(*last, "ts_us"), TextOf(*last, "to"), TextOf(*last, "reason")};
  }
  if (next != nullptr && !next->empty()) {
    const Json& first = *next->front();
    const bool requeued = TextOf(first, "from") == "RUNNING";
    return {IntOf(first, "ts_us"), requeued ? "REQUEUED" : TextOf(first, "from"),
            TextOf(first, "reason")};
  }
  return {std::max(run_end, last ? IntOf(*last, "ts_us") : run_end),
          last ? TextOf(*last, "to") : "", last ? TextOf(*last, "reason") : ""};
}

// When the attempt began running: its first -> RUNNING, else its first
// transition (an attempt canceled or requeued before it was placed).
Micros StartOf(const Transitions& own) {
  for (const Json* t : own) {
    if (TextOf(*t, "to") == "RUNNING") return IntOf(*t, "ts_us");
  }
  return own.empty() ? 0 : IntOf(*own.front(), "ts_us");
}

// The worker the attempt was placed on (its last -> RUNNING names it).
std::string WorkerOf(const Transitions& own) {
  std::string worker;
  for (const Json* t : own) {
    if (TextOf(*t, "to") == "RUNNING" && !TextOf(*t, "worker").empty())
      worker = TextOf(*t, "worker");
  }
  return worker;
}

bool IsErrorState(const std::string& state) {
  return state == "FAILED" || state == "TIMEOUT" || state == "RETRYING" || state == "REQUEUED";
}

// What the spans of one run share.
struct RunContext {
  std::string run_id, trace, run_span;
  const Json* tasks = nullptr;  // status's "tasks": TASK_ID -> task document
  Micros run_end = 0;
  const OtlpSpanLimits* limits = nullptr;
};

// The attempt's span; widens [*start, *end] to cover it.
Json AttemptSpan(const RunContext& run, const AttemptKey& key, const Transitions& own,
                 const Transitions* next, Micros* window_start, Micros* window_end) {
  const std::string task_id = TextOf(*own.front(), "task_id");
  const AttemptEnd end = EndOf(own, next, run.run_end);
  const Micros start = StartOf(own);
  AttributeList attrs(run.limits->max_attribute_bytes);
  attrs.Text("apollo11.run_id", run.run_id)
      .Text("apollo11.exec_id", key.first)
      .Text("apollo11.task_id", task_id)
      .Int("apollo11.attempt", key.second)
      .Text("apollo11.state", end.state);
  std::string worker = WorkerOf(own);
  // The task's document describes its latest attempt only.
  const Json* task = nullptr;
  if (auto it = run.tasks->find(task_id); it != run.tasks->end() && it->is_object()) task = &*it;
  const bool latest = task != nullptr && IntOf(*task, "attempts") == key.second;
  if (latest && worker.empty()) worker = TextOf(*task, "worker");
  if (!worker.empty()) attrs.Text("apollo11.worker", worker);
  if (latest && task->contains("exit_code"))
    attrs.Int("apollo11.exit_code", IntOf(*task, "exit_code"));
  Json events = Json::array();
  for (const Json* t : own) events.push_back(TransitionEvent(*t, *run.limits, false));
  *window_start = std::min(*window_start, start);
  *window_end = std::max(*window_end, end.at);
  return {{"traceId", run.trace},
          {"spanId", AttemptSpanId(run.trace, key.first, key.second)},
          {"parentSpanId", run.run_span},
          {"name", "task " + task_id},
          {"kind", kSpanKindInternal},
          {"startTimeUnixNano", Nanos(start)},
          {"endTimeUnixNano", Nanos(std::max(start, end.at))},
          {"attributes", attrs.Take()},
          {"events", std::move(events)},
          {"status",
           SpanStatus(IsErrorState(end.state), Cut(end.reason, run.limits->max_attribute_bytes))}};
}

Json RunSpan(const Json& status, const RunContext& run, Micros start, Micros end, Json events,
             size_t dropped_events, uint64_t omitted) {
  const std::string state = TextOf(status, "state"), reason = TextOf(status, "reason");
  AttributeList attrs(run.limits->max_attribute_bytes);
  attrs.Text("apollo11.run_id", run.run_id)
      .Text("apollo11.pipeline", TextOf(status, "pipeline"))
      .Text("apollo11.state", state)
      .Text("apollo11.reason", reason)
      .Int("apollo11.tasks", static_cast<int64_t>(run.tasks->size()));
  if (status.contains("pipeline_version")) {
    attrs.Int("apollo11.pipeline_version", IntOf(status, "pipeline_version"));
  }
  if (!TextOf(status, "rerun_of").empty())
    attrs.Text("apollo11.rerun_of", TextOf(status, "rerun_of"));
  if (omitted > 0) {
    attrs.Int("apollo11.spans_omitted", static_cast<int64_t>(omitted))
        .Text("apollo11.note", "the run made " + std::to_string(omitted) + " attempts, over the " +
                                   std::to_string(run.limits->max_attempt_spans) +
                                   " a run may export: its attempt spans were left out");
  }
  Json span = {
      {"traceId", run.trace},
      {"spanId", run.run_span},
      {"name", "run " + TextOf(status, "pipeline")},
      {"kind", kSpanKindInternal},
      {"startTimeUnixNano", Nanos(start)},
      {"endTimeUnixNano", Nanos(std::max(start, end))},
      {"attributes", attrs.Take()},
      {"events", std::move(events)},
      {"status", SpanStatus(state == "FAILED", Cut(reason, run.limits->max_attribute_bytes))}};
  if (dropped_events > 0) span["droppedEventsCount"] = dropped_events;
  return span;
}

}  // namespace

std::string OtlpTraceId(std::string_view trace_id) {
  const std::string parent = TraceParent(trace_id, "", 0);
  return parent.empty() ? "" : parent.substr(kTraceAt, kTraceLength);
}

std::string RunSpanId(std::string_view trace_id, std::string_view run_id) {
  const std::string parent = TraceParent(trace_id, run_id, 0);
  return parent.empty() ? "" : parent.substr(kSpanAt, kSpanLength);
}

std::string AttemptSpanId(std::string_view trace_id, std::string_view exec_id, uint32_t attempt) {
  const std::string parent = TraceParent(trace_id, exec_id, attempt);
  return parent.empty() ? "" : parent.substr(kSpanAt, kSpanLength);
}

uint64_t AttemptsOf(const nlohmann::json& status) {
  uint64_t attempts = 0;
  auto tasks = status.find("tasks");
  if (tasks == status.end() || !tasks->is_object()) return 0;
  for (const Json& task : *tasks) {
    if (task.is_object())
      attempts += static_cast<uint64_t>(std::max<int64_t>(IntOf(task, "attempts"), 0));
  }
  return attempts;
}

Result<RunSpans> BuildRunSpans(const nlohmann::json& status, const nlohmann::json* history,
                               std::string_view trace_id, const OtlpSpanLimits& limits) {
  static const Json kNoTasks = Json::object();
  RunContext run;
  run.limits = &limits;
  run.run_id = status.is_object() ? TextOf(status, "run_id") : "";
  run.trace = OtlpTraceId(trace_id);
  if (run.run_id.empty() || run.trace.empty()) {
    return Status::InvalidInput("not a run's status with a trace id (run '" + run.run_id +
                                "', trace id '" + std::string(trace_id.substr(0, 40)) + "')");
  }
  run.run_span = RunSpanId(trace_id, run.run_id);
  auto tasks = status.find("tasks");
  run.tasks = tasks != status.end() && tasks->is_object() ? &*tasks : &kNoTasks;
  auto created = ParseTimestamp(TextOf(status, "created_at"));
  if (!created.ok()) return Status::InvalidInput("run " + run.run_id + ": no created_at");
  auto finished = ParseTimestamp(TextOf(status, "finished_at"));
  run.run_end = finished.ok() ? *finished : *created;

  std::map<AttemptKey, Transitions> attempts;
  std::vector<const Json*> never_ran;  // attempt 0: skipped, canceled while pending, reused
  if (history != nullptr && history->is_array()) {
    for (const Json& t : *history) {
      if (!t.is_object()) continue;
      const int64_t attempt = IntOf(t, "attempt");
      if (attempt <= 0) {
        never_ran.push_back(&t);
      } else {
        attempts[{TextOf(t, "exec_id"), static_cast<uint32_t>(attempt)}].push_back(&t);
      }
    }
  }
  RunSpans out;
  out.spans.emplace_back();  // the run span, made last: it spans its children
  Micros start = *created, end = run.run_end;
  if (history == nullptr || attempts.size() > limits.max_attempt_spans) {
    out.omitted = history == nullptr ? AttemptsOf(status) : attempts.size();
  } else {
    for (auto it = attempts.begin(); it != attempts.end(); ++it) {
      auto next = std::next(it);
      const bool same_exec = next != attempts.end() && next->first.first == it->first.first;
      out.spans.push_back(AttemptSpan(run, it->first, it->second,
                                      same_exec ? &next->second : nullptr, &start, &end));
    }
  }
  Json events = Json::array();
  for (size_t i = 0; i < never_ran.size() && i < limits.max_run_events; ++i) {
    events.push_back(TransitionEvent(*never_ran[i], limits, true));
  }
  const size_t dropped = never_ran.size() - events.size();
  out.spans.front() = RunSpan(status, run, start, end, std::move(events), dropped, out.omitted);
  return out;
}

nlohmann::json TraceExportRequest(const OtlpResource& resource, std::vector<nlohmann::json> spans) {
  AttributeList attrs(SIZE_MAX);
  attrs.Text("service.name", "apollo11")
      .Text("service.instance.id", resource.service_instance_id)
      .Text("service.version", resource.service_version);
  Json scope = {{"scope", {{"name", "apollo11"}, {"version", resource.service_version}}},
                {"spans", std::move(spans)}};
  Json resource_spans = {{"resource", {{"attributes", attrs.Take()}}},
                         {"scopeSpans", Json::array({std::move(scope)})}};
  return {{"resourceSpans", Json::array({std::move(resource_spans)})}};
}

}  // namespace apollo11::observability
