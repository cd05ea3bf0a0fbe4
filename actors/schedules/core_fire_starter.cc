#include "actors/schedules/core_fire_starter.h"

#include <spdlog/spdlog.h>

#include <string>

namespace apollo11::actors {

namespace {
// The idempotency key of a fire: the schedule's own fire and a backfill of
// the same time share it, so at most one run exists per scheduled time.
std::string FireKeyOf(const storage::FireRecord& fire) {
  return "schedule:" + std::to_string(fire.scheduled_at);
}
}  // namespace

Result<std::string> CoreFireStarter::StartFiredRun(const storage::ScheduleRecord& schedule,
                                                   storage::FireRecord fire) {
  auto state = core_->registry().pipelines().State(schedule.pipeline);
  if (!state.ok()) return state.status();
  std::string run_id;
  if (state->has_value() && (*state)->active != 0) {
    // A registered pipeline: a run pinned to the version the schedule came
    // with; refused (Busy) while the pipeline is paused.
    StartRequest start;
    start.name = schedule.pipeline;
    // Two versions may hold the same content (1, 2, then 1's again as 3):
    // the active one when it is the schedule's, else the hash resolves (or
    // says why not, in the skipped fire's reason).
    auto active = core_->registry().pipelines().Resolve(schedule.pipeline, "");
    start.version = active.ok() && active->hash == schedule.pipeline_hash
                        ? std::to_string(active->version)
                        : schedule.pipeline_hash;
    start.trigger_key = FireKeyOf(fire);
    start.actor = fire.origin;
    auto started = core_->registry().StartPinned(start);
    if (!started.ok()) return started.status();
    if (started->existing) {
      return Status::InvalidInput("run " + started->run_id +
                                  " was started for this scheduled time already");
    }
    run_id = started->run_id;
  } else {
    // Submitted with `submit`: the schedule fires the snapshot it holds.
    SubmitRun submit;
    submit.pipeline_json = schedule.snapshot;
    submit.pipeline_hash = schedule.pipeline_hash;
    auto submitted = core_->Submit(std::move(submit));
    if (!submitted.ok()) return submitted.status();
    run_id = *submitted;
  }
  fire.run_id = run_id;
  core_->StageFire(std::move(fire));
  started_ = true;
  return run_id;
}

void CoreFireStarter::StageFire(storage::FireRecord fire) { core_->StageFire(std::move(fire)); }

void CoreFireStarter::StageSchedule(storage::ScheduleRecord schedule) {
  core_->StageSchedule(std::move(schedule));
}

void CoreFireStarter::FiresMissed(const std::string& pipeline, size_t count) {
  spdlog::warn(
      "schedule of {}: {} due time(s) passed without a fire (catchup does not cover "
      "them)",
      pipeline, count);
  core_->metrics().schedule_fires_missed.Inc(count);
}

bool CoreFireStarter::TakeStarted() {
  const bool started = started_;
  started_ = false;
  return started;
}

}  // namespace apollo11::actors
