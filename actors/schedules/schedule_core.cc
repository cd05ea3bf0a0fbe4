#include "actors/schedules/schedule_core.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <climits>

#include "dsl/pipeline_json.h"

namespace apollo11::actors {

using storage::FireRecord;
using storage::FireState;
using storage::ScheduleRecord;

namespace {
constexpr size_t kMaxTimesPerTick = 100000;
constexpr size_t kMaxBackfill = 10000;

int64_t FloorSeconds(Micros t) {
  return t >= 0 ? t / kMicrosPerSecond : -((-t + kMicrosPerSecond - 1) / kMicrosPerSecond);
}
}  // namespace

struct ScheduleCore::Entry {
  ScheduleRecord record;
  dsl::PipelineSpec spec;  // its schedule fields
  dsl::CronSchedule cron;
  TimeZone zone;
  Micros last = 0;  // the latest scheduled time decided (or the registration)
  Micros next = 0;  // the first fire time after `last`; 0 none
  std::deque<FireRecord> queue;
  int backfill_max = 0;  // cap for backfill fires; 0: max_active_runs
};

ScheduleCore::ScheduleCore(storage::ScheduleStore* store, storage::RunReader* runs,
                           const Clock* clock, FireStarter* starter)
    : store_(store), runs_(runs), clock_(clock), starter_(starter) {}

ScheduleCore::~ScheduleCore() = default;

Result<std::unique_ptr<ScheduleCore::Entry>> ScheduleCore::MakeEntry(
    const ScheduleRecord& record) const {
  auto spec = dsl::PipelineFromJsonText(record.snapshot);
  if (!spec.ok()) return spec.status();
  auto cron = dsl::CronSchedule::Parse(spec->schedule);
  if (!cron.ok()) return cron.status();
  auto zone =
      spec->timezone.empty() ? Result<TimeZone>(TimeZone()) : TimeZone::Load(spec->timezone);
  if (!zone.ok()) return zone.status();
  auto e = std::make_unique<Entry>(Entry{record, std::move(*spec), *cron, *zone, 0, 0, {}, 0});
  e->last = record.registered_at;
  return e;
}

std::vector<Micros> ScheduleCore::TimesIn(const Entry& e, Micros after, Micros until,
                                          size_t limit) const {
  std::vector<Micros> out;
  int64_t t = FloorSeconds(after);
  while (out.size() < limit) {
    std::optional<int64_t> next = e.cron.NextAfter(t, e.zone);
    if (!next || *next * kMicrosPerSecond > until) break;
    t = *next;
    if (t * kMicrosPerSecond > after) out.push_back(t * kMicrosPerSecond);
  }
  return out;
}

Status ScheduleCore::Load() {
  auto schedules = store_->Schedules();
  if (!schedules.ok()) return schedules.status();
  for (const ScheduleRecord& record : *schedules) {
    auto entry = MakeEntry(record);
    if (!entry.ok()) {
      spdlog::error("schedule of {} not loaded: {}", record.pipeline, entry.status().message());
      continue;
    }
    Entry& e = **entry;
    auto last = store_->LastFire(record.pipeline);
    if (!last.ok()) return last.status();
    if (last->has_value()) e.last = std::max(e.last, (*last)->scheduled_at);
    auto fires = store_->Fires(record.pipeline, INT64_MIN, INT64_MAX);
    if (!fires.ok()) return fires.status();
    for (FireRecord& f : *fires) {
      if (f.state == FireState::kQueued) e.queue.push_back(std::move(f));
    }
    std::vector<Micros> next = TimesIn(e, e.last, INT64_MAX, 1);
    e.next = next.empty() ? 0 : next[0];
    entries_[record.pipeline] = std::move(*entry);
  }
  auto unfinished = runs_->UnfinishedRuns();
  if (!unfinished.ok()) return unfinished.status();
  for (const storage::RunRecord& r : *unfinished) OnRunStarted(r.pipeline_name, r.run_id);
  return Status::Ok();
}

Status ScheduleCore::Register(const std::string& snapshot, const std::string& hash,
                              const dsl::PipelineSpec& spec) {
  ScheduleRecord record{spec.name, hash, snapshot, clock_->Now()};
  auto entry = MakeEntry(record);
  if (!entry.ok()) return entry.status();
  Entry& e = **entry;
  auto old = entries_.find(spec.name);
  if (old != entries_.end()) {
    e.queue = std::move(old->second->queue);
    e.last = std::max(e.last, old->second->last);
  }
  std::vector<Micros> next = TimesIn(e, e.last, INT64_MAX, 1);
  e.next = next.empty() ? 0 : next[0];
  starter_->StageSchedule(std::move(record));
  entries_[spec.name] = std::move(*entry);
  return Status::Ok();
}

bool ScheduleCore::Fires(const std::string& pipeline, const std::string& hash) const {
  auto it = entries_.find(pipeline);
  return it != entries_.end() && it->second->record.pipeline_hash == hash;
}

void ScheduleCore::Unregister(const std::string& pipeline, const std::string& why) {
  auto it = entries_.find(pipeline);
  if (it == entries_.end()) return;
  const Micros now = clock_->Now();
  for (FireRecord fire : it->second->queue) {
    fire.state = FireState::kSkipped;
    fire.decided_at = now;
    fire.reason = "the schedule was removed: " + why;
    starter_->StageFire(std::move(fire));
  }
  starter_->StageSchedule(ScheduleRecord{pipeline, "", "", now});
  entries_.erase(it);
}

size_t ScheduleCore::Tick() {
  const Micros now = clock_->Now();
  size_t started = 0;
  for (auto& [name, entry] : entries_) {
    Entry& e = *entry;
    const size_t before = active_[name];
    if (e.next != 0 && e.next <= now) {
      const std::string& catchup = e.spec.catchup;
      Micros from = catchup == "none" ? now - kOnTimeGrace
                                      : now - e.spec.catchup_window.count() * kMicrosPerMilli;
      if (from - 1 > e.last) {  // times before the catch-up window: never decided
        const size_t missed = TimesIn(e, e.last, from - 1, kMaxTimesPerTick).size();
        if (missed > 0) starter_->FiresMissed(name, missed);
      }
      std::vector<Micros> due = TimesIn(e, std::max(e.last, from - 1), now, kMaxTimesPerTick);
      if (due.size() > 1 && catchup != "all") {  // only the latest is owed a run
        starter_->FiresMissed(name, due.size() - 1);
        due.erase(due.begin(), due.end() - 1);
      }
      for (Micros at : due) {
        Decide(e, at, now - at > kOnTimeGrace ? "catchup" : "schedule", now);
      }
      e.last = now;
      std::vector<Micros> next = TimesIn(e, e.last, INT64_MAX, 1);
      e.next = next.empty() ? 0 : next[0];
    }
    Drain(e, now);
    started += active_[name] - std::min(before, active_[name]);
  }
  return started;
}

void ScheduleCore::Decide(Entry& e, Micros at, const std::string& origin, Micros now) {
  for (const FireRecord& q : e.queue) {
    if (q.scheduled_at == at) return;
  }
  auto known = store_->Fires(e.record.pipeline, at, at);
  if (!known.ok() || !known->empty()) return;  // decided before (or unreadable: not twice)
  FireRecord fire;
  fire.pipeline = e.record.pipeline;
  fire.scheduled_at = at;
  fire.origin = origin;
  fire.decided_at = now;
  if (e.queue.empty() && HasRoom(e, fire)) {
    Start(e, std::move(fire), now);
    return;
  }
  const size_t active = active_[e.record.pipeline];
  // `catchup: all` promises every missed time a run: those wait their turn
  // (oldest first, max_active_runs at once) whatever `overlap` says, which
  // rules the fires that come on time.
  const bool owed = fire.origin == "catchup" && e.spec.catchup == "all";
  if (e.spec.overlap == "allow" && fire.origin != "backfill" && (!owed || HasRoom(e, fire))) {
    // Backfill fires may wait in the queue: `allow` starts this one anyway
    // while under the ceiling.
    if (HasRoom(e, fire)) {
      Start(e, std::move(fire), now);
      return;
    }
    // Past the coordinator's ceiling for overlapping runs: never queued
    // (a queue behind a schedule that fires faster than it runs only grows).
    fire.state = FireState::kSkipped;
    fire.reason = std::to_string(active) +
                  " run(s) active, the coordinator's cap for overlap: allow "
                  "(--max-schedule-overlap " +
                  std::to_string(max_overlap_) + ")";
    starter_->RunCapReached(e.record.pipeline + ": the fire at " +
                            FormatTimestamp(fire.scheduled_at) + " was skipped: " + fire.reason);
  } else if (e.spec.overlap == "skip" && !owed) {
    fire.state = FireState::kSkipped;
    fire.reason = std::to_string(active) + " run(s) active (max_active_runs " +
                  std::to_string(e.spec.max_active_runs) + ", overlap: skip)";
  } else {
    fire.state = FireState::kQueued;
    fire.reason = std::to_string(active) + " run(s) active: waits for one to end" +
                  (owed ? " (a missed time, owed a run by catchup: all)" : "");
    e.queue.push_back(fire);
  }
  starter_->StageFire(std::move(fire));
}

bool ScheduleCore::HasRoom(const Entry& e, const FireRecord& fire) const {
  auto it = active_.find(e.record.pipeline);
  const size_t active = it == active_.end() ? 0 : it->second;
  size_t cap = static_cast<size_t>(e.spec.max_active_runs);
  if (fire.origin == "backfill" && e.backfill_max > 0) {
    cap = static_cast<size_t>(e.backfill_max);
  } else if (e.spec.overlap == "allow") {
    cap = max_overlap_;
  }
  return active < cap;
}

bool ScheduleCore::Start(Entry& e, FireRecord fire, Micros now) {
  fire.state = FireState::kStarted;
  fire.decided_at = now;
  fire.reason.clear();
  auto run_id = starter_->StartFiredRun(e.record, fire);
  if (!run_id.ok()) {
    // A paused pipeline (Conflict) is the operator's choice, not a fault.
    const auto level =
        run_id.status().code() == StatusCode::kConflict ? spdlog::level::info : spdlog::level::err;
    spdlog::log(level, "schedule of {}: the fire at {} started no run: {}", e.record.pipeline,
                FormatTimestamp(fire.scheduled_at), run_id.status().message());
    fire.state = FireState::kSkipped;
    fire.reason = "the run could not start: " + run_id.status().message();  // kFireNotStarted
    starter_->StageFire(std::move(fire));
    return false;
  }
  OnRunStarted(e.record.pipeline, *run_id);
  return true;
}

void ScheduleCore::Drain(Entry& e, Micros now) {
  while (!e.queue.empty() && HasRoom(e, e.queue.front())) {
    FireRecord fire = std::move(e.queue.front());
    e.queue.pop_front();
    Start(e, std::move(fire), now);
  }
}

Micros ScheduleCore::NextWake() const {
  Micros wake = 0;
  for (const auto& [name, e] : entries_) {
    Micros at = e->next;
    if (!e->queue.empty() && HasRoom(*e, e->queue.front())) at = clock_->Now();
    if (at != 0 && (wake == 0 || at < wake)) wake = at;
  }
  return wake;
}

void ScheduleCore::OnRunStarted(const std::string& pipeline, const std::string& run_id) {
  if (run_pipeline_.emplace(run_id, pipeline).second) ++active_[pipeline];
}

void ScheduleCore::OnRunFinished(const std::string& run_id) {
  auto it = run_pipeline_.find(run_id);
  if (it == run_pipeline_.end()) return;
  size_t& active = active_[it->second];
  if (active > 0) --active;
  run_pipeline_.erase(it);
}

Result<std::vector<Micros>> ScheduleCore::BackfillTimes(const std::string& pipeline, Micros from,
                                                        Micros to) const {
  auto it = entries_.find(pipeline);
  if (it == entries_.end()) return Status::NotFound("pipeline " + pipeline + " has no schedule");
  if (to < from) return Status::InvalidInput("backfill: --to is before --from");
  if (to > clock_->Now()) return Status::InvalidInput("backfill: --to is in the future");
  const Entry& e = *it->second;
  std::vector<Micros> times = TimesIn(e, from - 1, to, kMaxBackfill + 1);
  if (times.size() > kMaxBackfill) {
    return Status::InvalidInput("backfill: more than 10000 scheduled times in the interval");
  }
  // Times already queued or fired are left out.
  std::vector<Micros> out;
  for (Micros at : times) {
    bool known = std::any_of(e.queue.begin(), e.queue.end(),
                             [&](const FireRecord& q) { return q.scheduled_at == at; });
    auto stored = store_->Fires(pipeline, at, at);
    if (!stored.ok()) return stored.status();
    if (!known && stored->empty()) out.push_back(at);
  }
  return out;
}

Result<size_t> ScheduleCore::Backfill(const std::string& pipeline, Micros from, Micros to,
                                      int max_active) {
  auto times = BackfillTimes(pipeline, from, to);
  if (!times.ok()) return times.status();
  const Micros now = clock_->Now();
  Entry& e = *entries_.find(pipeline)->second;
  e.backfill_max = max_active;
  for (Micros at : *times) {
    FireRecord fire{pipeline, at, FireState::kQueued, "", now, "backfill", "backfill"};
    starter_->StageFire(fire);
    e.queue.push_back(std::move(fire));
  }
  e.last = std::max(e.last, to);
  Drain(e, now);
  return times->size();
}

std::vector<ScheduleView> ScheduleCore::Views() const {
  std::vector<ScheduleView> out;
  for (const auto& [name, e] : entries_) {
    ScheduleView v{name, e->spec.schedule, e->spec.timezone.empty() ? "UTC" : e->spec.timezone};
    auto last = store_->LastFire(name);
    if (last.ok() && last->has_value()) v.last_fire = (*last)->scheduled_at;
    v.next_fire = e->next;
    auto active = active_.find(name);
    v.active = active == active_.end() ? 0 : active->second;
    v.queued = e->queue.size();
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace apollo11::actors
