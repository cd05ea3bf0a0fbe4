#pragma once
// Identifiers. A run id sorts by creation time and is short enough to type:
// "r20261129T093649-4f2a". An execution id is "<run_id>.<task_id>": stable
// across the attempts of one task in one run, and readable on its own.

#include <cstdint>
#include <string>
#include <string_view>

#include "common/clock.h"

namespace apollo11 {

// A new run id for a run created at `now`, with 16 random bits.
std::string NewRunId(Micros now);
// The same with the 16 bits given, so a caller with an injected random
// source (SchedulerCore) makes the same ids on the same seed.
std::string NewRunId(Micros now, uint16_t suffix);

// A new 16-hex-digit trace id.
std::string NewTraceId();

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
