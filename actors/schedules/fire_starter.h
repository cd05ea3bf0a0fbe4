#pragma once
// The seam between the schedule logic and whatever starts runs (the
// scheduler's, CoreFireStarter; a fake in the unit tests). Whatever implements it stages
// the fire record in the same commit as the run it starts, so "fire
// journaled" and "run created" are one atomic step.

#include <string>

#include "common/status.h"
#include "storage/schedule_records.h"

namespace apollo11::actors {

class FireStarter {
 public:
  virtual ~FireStarter() = default;
  // Starts a run of `schedule`'s snapshot for `fire` and stages `fire`, its
  // run_id set, in the same commit. Returns the run id.
  virtual Result<std::string> StartFiredRun(const storage::ScheduleRecord& schedule,
                                            storage::FireRecord fire) = 0;
  // Stages a fire record that starts nothing (skipped or queued).
  virtual void StageFire(storage::FireRecord fire) = 0;
  // Stages a schedule record (registered or replaced).
  virtual void StageSchedule(storage::ScheduleRecord schedule) = 0;
  // A fire was skipped at a cap of the coordinator (`why` names it): raise
  // the run_cap_reached alert once the skip is durable. Default: nothing.
  virtual void RunCapReached(const std::string& why) { (void)why; }
  // `count` due times of `pipeline` passed with no fire decided for them
  // (the coordinator saw them later than `catchup` allows, e.g. it was
  // down): nothing is journaled for them. Default: nothing.
  virtual void FiresMissed(const std::string& pipeline, size_t count) {
    (void)pipeline;
    (void)count;
  }
};

}  // namespace apollo11::actors
