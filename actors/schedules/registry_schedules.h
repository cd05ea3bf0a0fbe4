#pragma once
// Keeps the schedules in step with what clients register and submit: the
// client gate calls these after the scheduler accepted the request, in the
// same turn, so the schedule change is committed with it.
//
// Scheduler thread only.

#include <string>

#include "actors/client_protocol.h"
#include "actors/schedules/schedule_core.h"
#include "common/status.h"

namespace apollo11::actors {

// A pipeline submitted with `schedule:` (snapshot `snapshot`, content hash
// `hash`) registers its schedule, and the run `run_id` its submission started
// counts as one of its active runs. A snapshot without a schedule changes
// nothing; a schedule that cannot be registered is logged.
void RegisterSubmittedSchedule(ScheduleCore* schedules, const std::string& snapshot,
                               const std::string& hash, const std::string& run_id);

// Version `added_json` (RegistryService::Apply's answer to kAdd:
// name, hash, label) of `request.name` was registered: its schedule, if it
// has one, replaces the pipeline's, and a version without one removes it.
// The same version again changes nothing.
void FollowRegisteredVersion(ScheduleCore* schedules, const RegistryRequest& request,
                             const std::string& added_json);

// A kBackfill request: queues its scheduled times (ScheduleCore::Backfill)
// and returns the reply's JSON, {name, queued}; with dry_run queues nothing
// and returns {name, dry_run, would_queue, times} (the first 1000 times).
Result<std::string> QueueBackfill(ScheduleCore* schedules, const RegistryRequest& request);

}  // namespace apollo11::actors
