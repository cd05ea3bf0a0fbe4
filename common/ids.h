#pragma once
// Identifiers. A run id sorts by creation time and is short enough to type:
// "r20261129T093649-0000"; only the coordinator makes them (RunIdGenerator).
// An execution id is "<run_id>.<task_id>": stable across the attempts of one
// task in one run, and readable on its own.

#include <cstdint>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/status.h"

namespace apollo11 {

// The one grammar of a run id, wherever one comes in (client requests, the
// HTTP API, `run --resume`, the journal at recovery): 1 to 64 characters of
// [A-Za-z0-9_-], the first a letter or digit. Never a '.', which separates
// the run from the task in an execution id. Every id RunIdGenerator makes
// matches it.
inline constexpr size_t kMaxRunIdLength = 64;
bool IsValidRunId(std::string_view id);
// Ok, or InvalidInput naming the grammar (the id itself is not echoed).
Status CheckRunId(std::string_view id);

// A new 16-hex-digit trace id.
std::string NewTraceId();

// The W3C Trace Context `traceparent` of one attempt of an execution in
// the run traced as `trace_id`: "00-TRACE-SPAN-01", TRACE the trace id
// left-padded with zeros to 32 hex digits (as OpenTelemetry extends 64-bit
// ids), SPAN 16 hex digits derived from (exec_id, attempt), never all zero.
// "" when `trace_id` is not 1 to 32 hex digits or is all zeros.
std::string TraceParent(std::string_view trace_id, std::string_view exec_id, uint32_t attempt);

inline std::string MakeExecId(std::string_view run_id, std::string_view task_id) {
  std::string id(run_id);
  id += '.';
  id += task_id;
  return id;
}

// The run id part of an execution id ("" when `exec_id` has no '.').
inline std::string_view RunIdOfExec(std::string_view exec_id) {
  auto dot = exec_id.find('.');
  return dot == std::string_view::npos ? std::string_view() : exec_id.substr(0, dot);
}

}  // namespace apollo11
