#include "actors/core_fire_starter.h"

namespace apollo11::actors {

Result<std::string> CoreFireStarter::StartFiredRun(const storage::ScheduleRecord& schedule,
                                                   storage::FireRecord fire) {
  SubmitRun submit;
  submit.pipeline_json = schedule.snapshot;
  submit.pipeline_hash = schedule.pipeline_hash;
  auto run_id = core_->Submit(std::move(submit));
  if (!run_id.ok()) return run_id.status();
  fire.run_id = *run_id;
  core_->StageFire(std::move(fire));
  started_ = true;
  return run_id;
}

void CoreFireStarter::StageFire(storage::FireRecord fire) { core_->StageFire(std::move(fire)); }

void CoreFireStarter::StageSchedule(storage::ScheduleRecord schedule) {
  core_->StageSchedule(std::move(schedule));
}

bool CoreFireStarter::TakeStarted() {
  const bool started = started_;
  started_ = false;
  return started;
}

}  // namespace apollo11::actors
