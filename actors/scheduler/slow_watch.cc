#include "actors/scheduler/slow_watch.h"

#include <algorithm>

namespace apollo11::actors {

Micros SlowWatch::P50(const SchedulerRun& run, int task) const {
  // A run restored before its history is loaded has no P50: no check.
  return static_cast<size_t>(task) < run.p50.size() ? run.p50[task] : 0;
}

Micros SlowWatch::Threshold(const SchedulerRun& run, int task) const {
  return std::max<Micros>(P50(run, task) * slow_factor_, slow_min_.count() * kMicrosPerMilli);
}

Micros SlowWatch::Watch(SchedulerRun& run, int task, Micros placed_steady) const {
  if (run.placed_steady.size() < run.execs.size()) run.placed_steady.resize(run.execs.size(), 0);
  run.placed_steady[task] = placed_steady;
  // Without history there is no "usual" duration to compare with.
  if (P50(run, task) <= 0) return 0;
  return placed_steady + Threshold(run, task);
}

Micros SlowWatch::Ran(const SchedulerRun& run, int task, Micros steady_now, Micros wall_now) const {
  if (static_cast<size_t>(task) < run.placed_steady.size() && run.placed_steady[task] > 0) {
    return steady_now - run.placed_steady[task];
  }
  return wall_now - run.execs[task].started_at;
}

std::optional<std::string> SlowWatch::Flag(SchedulerRun& run, int task, uint32_t attempt,
                                           Micros ran, Micros wall_now) const {
  storage::ExecutionRecord& rec = run.execs[task];
  if (run.dag->state(task) != TaskState::kRunning || run.dag->attempt(task) != attempt ||
      rec.slow != storage::SlowFlag::kNone) {
    return std::nullopt;
  }
  rec.slow = storage::SlowFlag::kFlagged;
  rec.slow_reason = "running " + FormatDuration(Millis(ran / kMicrosPerMilli)) + ", more than " +
                    std::to_string(slow_factor_) + "x its P50 of " +
                    FormatDuration(Millis(P50(run, task) / kMicrosPerMilli)) + " and at least " +
                    FormatDuration(slow_min_);
  rec.flagged_at = wall_now;
  return "flagged slow: " + rec.slow_reason +
         "; it keeps running until an operator confirms --kill or --keep";
}

Status SlowWatch::CheckConfirmable(const SchedulerRun& run, int task) const {
  const storage::ExecutionRecord& rec = run.execs[task];
  const TaskState state = run.dag->state(task);
  if (state != TaskState::kRunning) {
    return Status::InvalidInput("execution " + run.ExecId(task) + " is " + ToString(state) +
                                ", not running: only a running execution flagged slow can be "
                                "confirmed");
  }
  if (rec.slow == storage::SlowFlag::kKept) {
    return Status::InvalidInput("execution " + run.ExecId(task) +
                                " was already kept by the operator; it is not flagged again "
                                "during this attempt");
  }
  if (rec.slow != storage::SlowFlag::kFlagged) {
    std::string when = P50(run, task) > 0
                           ? "it would be flagged after " +
                                 FormatDuration(Millis(Threshold(run, task) / kMicrosPerMilli))
                           : "its task has no duration history yet, so it is never flagged";
    return Status::InvalidInput("execution " + run.ExecId(task) +
                                " is running but not flagged slow (" + when + ")");
  }
  return Status::Ok();
}

std::string SlowWatch::Figures(const SchedulerRun& run, int task, Micros ran) const {
  return "ran " + FormatDuration(Millis(ran / kMicrosPerMilli)) + ", P50 " +
         FormatDuration(Millis(P50(run, task) / kMicrosPerMilli));
}

}  // namespace apollo11::actors
