#include "actors/schedules/registry_schedules.h"

#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/json_dump.h"
#include "dsl/pipeline_json.h"

namespace apollo11::actors {
namespace {

const char* ZoneName(const dsl::PipelineSpec& spec) {
  return spec.timezone.empty() ? "UTC" : spec.timezone.c_str();
}

}  // namespace

void RegisterSubmittedSchedule(ScheduleCore* schedules, const std::string& snapshot,
                               const std::string& hash, const std::string& run_id) {
  auto spec = dsl::PipelineFromJsonText(snapshot);
  if (!spec.ok() || spec->schedule.empty()) return;
  schedules->OnRunStarted(spec->name, run_id);
  Status s = schedules->Register(snapshot, hash, *spec);
  if (!s.ok()) {
    spdlog::error("schedule of {} not registered: {}", spec->name, s.message());
    return;
  }
  spdlog::info("schedule of {} registered: '{}' in {}", spec->name, spec->schedule,
               ZoneName(*spec));
}

void FollowRegisteredVersion(ScheduleCore* schedules, const RegistryRequest& request,
                             const std::string& added_json) {
  auto added = ParseJsonBounded(added_json);
  auto spec = dsl::PipelineFromJsonText(request.pipeline_json);
  if (added.is_discarded() || !spec.ok()) return;  // RegistryService::Apply parsed both already
  const std::string hash = added.value("hash", "");
  const std::string label = added.value("label", "");
  if (spec->schedule.empty()) {
    if (schedules->Has(request.name)) {
      schedules->Unregister(request.name, "version " + label + " has no schedule");
      spdlog::info("schedule of {} removed: version {} has none", request.name, label);
    }
    return;
  }
  if (schedules->Fires(request.name, hash)) return;  // the same version again
  Status s = schedules->Register(request.pipeline_json, hash, *spec);
  if (!s.ok()) {
    spdlog::error("schedule of {}@{} not registered: {}", request.name, label, s.message());
    return;
  }
  spdlog::info("schedule of {}@{} registered: '{}' in {}", request.name, label, spec->schedule,
               ZoneName(*spec));
}

Result<std::string> QueueBackfill(ScheduleCore* schedules, const RegistryRequest& request) {
  if (request.dry_run) {
    auto times = schedules->BackfillTimes(request.name, request.from, request.to);
    if (!times.ok()) return times.status();
    constexpr size_t kListed = 1000;
    nlohmann::json listed = nlohmann::json::array();
    for (size_t i = 0; i < times->size() && i < kListed; ++i) {
      listed.push_back(FormatTimestamp((*times)[i]));
    }
    return nlohmann::json{{"name", request.name},
                          {"dry_run", true},
                          {"would_queue", times->size()},
                          {"times", std::move(listed)}}
        .dump();
  }
  auto queued = schedules->Backfill(request.name, request.from, request.to, request.max_active);
  if (!queued.ok()) return queued.status();
  spdlog::info("backfill of {} from {} to {} by {}: {} scheduled time(s) queued", request.name,
               FormatTimestamp(request.from), FormatTimestamp(request.to),
               request.actor.substr(0, 64), *queued);
  return nlohmann::json{{"name", request.name}, {"queued", *queued}}.dump();
}

}  // namespace apollo11::actors
