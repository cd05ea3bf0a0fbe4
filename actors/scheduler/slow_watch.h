#pragma once
// The slow-task rule: an attempt of a task with duration history is slow once
// it has run max(slow_factor x P50, slow_min). Flagging journals a note and
// waits for the operator; it never kills. Times here are on the Steady()
// clock, except what is journaled (flagged_at, wall). Pure: the caller passes
// the clocks' readings and keeps the timers.

#include <optional>
#include <string>

#include "actors/scheduler/scheduler_run.h"
#include "common/duration.h"
#include "common/status.h"

namespace apollo11::actors {

class SlowWatch {
 public:
  SlowWatch(Millis slow_min, int slow_factor) : slow_min_(slow_min), slow_factor_(slow_factor) {}

  // How long an attempt of `task` runs before it is slow.
  Micros Threshold(const SchedulerRun& run, int task) const;
  // Records that `task`'s current attempt was placed at `placed_steady` and
  // returns the Steady() time at which it becomes slow, or 0 when the task
  // has no history (never flagged).
  Micros Watch(SchedulerRun& run, int task, Micros placed_steady) const;
  // How long the current attempt has run at `steady_now`; from the record's
  // start time when the placement is not known (`wall_now` converts it).
  Micros Ran(const SchedulerRun& run, int task, Micros steady_now, Micros wall_now) const;
  // The slow check of `attempt` is due: flags the record (journaled at the
  // turn's commit, flagged_at = wall_now) and returns the reason, or nullopt
  // when the check no longer applies (the attempt ended, was requeued, or was
  // flagged or kept already).
  std::optional<std::string> Flag(SchedulerRun& run, int task, uint32_t attempt, Micros ran,
                                  Micros wall_now) const;
  // Ok when the operator may confirm `task` (RUNNING and flagged); otherwise
  // InvalidInput saying why.
  Status CheckConfirmable(const SchedulerRun& run, int task) const;
  // "ran T, P50 P", for the operator's answers.
  std::string Figures(const SchedulerRun& run, int task, Micros ran) const;

 private:
  Micros P50(const SchedulerRun& run, int task) const;

  Millis slow_min_;
  int slow_factor_;
};

}  // namespace apollo11::actors
