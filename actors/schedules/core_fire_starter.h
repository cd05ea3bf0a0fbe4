#pragma once
// The FireStarter of a coordinator: a fire of a registered pipeline starts
// a run of the schedule's version through RegistryService::StartPinned, keyed
// "schedule:<time>" (refused while the pipeline is paused); a schedule that
// came with `submit` starts its snapshot through SchedulerCore::Submit.
// Either way the fire record is staged in the core's batch, so a fire and
// the run it starts are committed together by the turn's Flush.

#include "actors/scheduler/scheduler_core.h"
#include "actors/schedules/fire_starter.h"

namespace apollo11::actors {

class CoreFireStarter final : public FireStarter {
 public:
  // `core` must outlive this.
  explicit CoreFireStarter(SchedulerCore* core) : core_(core) {}
  Result<std::string> StartFiredRun(const storage::ScheduleRecord& schedule,
                                    storage::FireRecord fire) override;
  void StageFire(storage::FireRecord fire) override;
  void StageSchedule(storage::ScheduleRecord schedule) override;
  void RunCapReached(const std::string& why) override { core_->StageRunCapAlert(why); }
  void FiresMissed(const std::string& pipeline, size_t count) override;
  // Whether a run was started since the last call (for the test fault hooks).
  bool TakeStarted();

 private:
  SchedulerCore* core_;
  bool started_ = false;
};

}  // namespace apollo11::actors
