#pragma once
// A finished run as OpenTelemetry spans, in the OTLP/HTTP JSON encoding (the
// protobuf JSON mapping of opentelemetry/proto/trace/v1: ids as lowercase
// hex, times as decimal strings of Unix nanoseconds, int64 values as decimal
// strings, enums as integers). Built from the coordinator's answers alone
// (the `status`, `history` and `execution` queries, actors/queries/
// run_views.h), so it is tested without sockets or threads.
//
// One trace per run. Its id is the run's trace id left-padded with zeros to
// 32 hex digits, as the W3C `traceparent` each attempt is given
// (common/ids.h TraceParent). The run span is the root: its span id is the
// span part of TraceParent(trace_id, RUN_ID, 0). Each execution attempt is a
// child of it whose span id is the span part of TraceParent(trace_id,
// EXEC_ID, ATTEMPT): the very parent the attempt's TRACEPARENT named, so the
// spans a task exports itself nest under the attempt's span. The attempt's
// transitions are its span events; the transitions of tasks that never ran
// (skipped, canceled while pending, reused by a rerun) are events of the run
// span.

#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace apollo11::observability {

// The resource every span is exported under (service.name is "apollo11").
struct OtlpResource {
  std::string service_instance_id;  // this node: its --ha-name or HOSTNAME-XXXX
  std::string service_version;      // the build's version
};

// What one run may cost the exporter and the collector.
struct OtlpSpanLimits {
  // A run with more attempts than this is exported as its run span alone,
  // with apollo11.note and apollo11.spans_omitted saying so.
  uint64_t max_attempt_spans = 10000;
  // Events of the run span (tasks that never ran); past it they are counted
  // in the span's droppedEventsCount.
  size_t max_run_events = 128;
  // A longer string attribute (a reason quoting a task's error) is cut.
  size_t max_attribute_bytes = 4096;
};

// One finished run's spans: the run span first, then one per attempt.
struct RunSpans {
  std::vector<nlohmann::json> spans;
  uint64_t omitted = 0;  // attempt spans left out under OtlpSpanLimits
};

// `trace_id` (1 to 32 lowercase hex digits) left-padded to 32; "" when it is
// not a trace id TraceParent accepts.
std::string OtlpTraceId(std::string_view trace_id);
// The 16-hex-digit span id of the run, and of one attempt of an execution:
// the span part of TraceParent (see above). "" for a bad trace id.
std::string RunSpanId(std::string_view trace_id, std::string_view run_id);
std::string AttemptSpanId(std::string_view trace_id, std::string_view exec_id, uint32_t attempt);

// The attempts a run's `status` document says its tasks made (the sum of
// each task's "attempts").
uint64_t AttemptsOf(const nlohmann::json& status);

// The spans of the finished run described by `status` (the status query's
// document: created_at, finished_at, state, reason, tasks), `history` (the
// history query's array of the run's transitions; null when it was not read
// because the run is over the limit: the run span alone, with a note) and
// `trace_id` (the execution query's trace_id). InvalidInput when `status`
// is not a finished run's document or the trace id is malformed.
Result<RunSpans> BuildRunSpans(const nlohmann::json& status, const nlohmann::json* history,
                               std::string_view trace_id, const OtlpSpanLimits& limits);

// An ExportTraceServiceRequest ({"resourceSpans": [...]}) holding `spans`
// under `resource` and the instrumentation scope "apollo11".
nlohmann::json TraceExportRequest(const OtlpResource& resource, std::vector<nlohmann::json> spans);

}  // namespace apollo11::observability
