// sched: what the pipeline queries show of schedules: the cron, zone, next
// and last fire of each (from the scheduler's ScheduleCore) and a
// pipeline's newest fire records (from the journal), so "why did my 03:00
// run not happen?" has an answer: skipped (and why), queued, or started.

#include <climits>

#include "actors/queries/query_service.h"
#include "common/json_dump.h"

namespace apollo11::actors {

void QueryService::AddSchedules(const QueryContext& ctx, nlohmann::json* pipelines) {
  if (ctx.schedules == nullptr) return;
  for (const ScheduleView& v : ctx.schedules->Views()) {
    nlohmann::json* entry = &EntryOf(pipelines, v.pipeline);
    nlohmann::json s = {{"cron", v.cron},
                        {"timezone", v.timezone},
                        {"active_runs", v.active},
                        {"queued_fires", v.queued}};
    s["next_fire"] = v.next_fire != 0 ? nlohmann::json(FormatTimestamp(v.next_fire)) : nullptr;
    s["last_fire"] = v.last_fire != 0 ? nlohmann::json(FormatTimestamp(v.last_fire)) : nullptr;
    (*entry)["schedule"] = std::move(s);
  }
}

Result<nlohmann::json> QueryService::RecentFires(const std::string& name, size_t limit) const {
  auto last = schedules_->LastFire(name);
  if (!last.ok()) return last.status();
  nlohmann::json out = nlohmann::json::array();
  if (!last->has_value()) return out;
  // Fires are keyed by scheduled time: widen a window back from the newest
  // until it holds `limit` of them (an every-second schedule has thousands
  // an hour, a daily one a few a week).
  const Micros newest = (*last)->scheduled_at;
  std::vector<storage::FireRecord> fires;
  for (Micros window = 60 * kMicrosPerSecond;; window *= 4) {
    const bool all = window > (Micros{1} << 58);  // 9000 years: take everything
    auto got = schedules_->Fires(name, all ? INT64_MIN : newest - window, newest);
    if (!got.ok()) return got.status();
    fires = std::move(*got);
    if (fires.size() >= limit || all) break;
  }
  const size_t skip = fires.size() > limit ? fires.size() - limit : 0;
  for (size_t i = fires.size(); i > skip; --i) {
    const storage::FireRecord& f = fires[i - 1];
    nlohmann::json j = {{"scheduled_at", FormatTimestamp(f.scheduled_at)},
                        {"state", storage::FireStateName(f.state)},
                        {"origin", f.origin},
                        {"decided_at", FormatTimestamp(f.decided_at)}};
    if (!f.run_id.empty()) j["run_id"] = f.run_id;
    if (!f.reason.empty()) j["reason"] = f.reason;
    out.push_back(std::move(j));
  }
  return out;
}

}  // namespace apollo11::actors
