#pragma once
// The cron schedules of a coordinator, apart from its actor loop: decides
// which scheduled times fire, when, and what each fire does (start a run,
// skip, queue), and journals every decision through a FireStarter.
//
// Fires are idempotent by (pipeline, scheduled time): a time with a fire
// record is never decided again, and the record is committed with the run it
// starts. After a restart the schedule resumes after its last fire record,
// so a crash before the commit fires the time again (subject to catch-up)
// and a crash after it never fires it twice.
//
// Time: fire times are wall-clock instants (cron is about the calendar).
// The loop calls Tick() when NextWake() (wall) has passed; a wall clock
// stepped back fires nothing until the clock passes the last fire again (no
// time fires twice); a wall clock stepped forward makes the skipped times
// "missed", handled by the catch-up policy like a coordinator that was down.
//
// Single-threaded: the scheduler actor's thread calls everything.

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "actors/schedules/fire_starter.h"
#include "common/clock.h"
#include "common/status.h"
#include "common/time_zone.h"
#include "dsl/cron_schedule.h"
#include "dsl/pipeline.h"
#include "storage/run_reader.h"
#include "storage/schedule_store.h"

namespace apollo11::actors {

// What `apollo11 schedules` shows of one schedule.
struct ScheduleView {
  std::string pipeline;
  std::string cron;
  std::string timezone;
  Micros last_fire = 0;  // scheduled time of the last decided fire; 0 none
  Micros next_fire = 0;  // 0: none within eight years
  size_t active = 0;     // runs of the pipeline active now
  size_t queued = 0;
};

class ScheduleCore {
 public:
  // With `catchup: none` a time fires only if the coordinator sees it at
  // most this late.
  static constexpr Micros kOnTimeGrace = 60 * kMicrosPerSecond;

  // `store` (schedules and fires), `runs` (the unfinished runs at Load),
  // `clock` and `starter` must outlive the core.
  ScheduleCore(storage::ScheduleStore* store, storage::RunReader* runs, const Clock* clock,
               FireStarter* starter);
  ~ScheduleCore();

  // Once at start, after the scheduler's Recover: reads the registered
  // schedules, their last and queued fires, and counts the unfinished runs
  // of each pipeline. A schedule that no longer parses is logged and left out.
  Status Load();
  // Registers (or replaces) the schedule of a pipeline submitted with
  // `schedule:`; it fires from now on (never for times before `now`).
  Status Register(const std::string& snapshot, const std::string& hash,
                  const dsl::PipelineSpec& spec);
  // Whether `pipeline` has a schedule firing the snapshot `hash`.
  bool Fires(const std::string& pipeline, const std::string& hash) const;
  bool Has(const std::string& pipeline) const { return entries_.count(pipeline) > 0; }
  // Removes the schedule of `pipeline` (journaled): nothing fires any more,
  // and its queued fires are journaled as skipped for `why`. Its fire
  // records stay. No schedule: nothing happens.
  void Unregister(const std::string& pipeline, const std::string& why);
  // Runs of one `overlap: allow` schedule active at once; a fire beyond it
  // is skipped (SchedulerOptions::max_schedule_overlap).
  void set_max_overlap(size_t runs) { max_overlap_ = runs; }
  // Decides every fire due at the clock's now. Returns how many runs started.
  size_t Tick();
  // The wall time at which Tick next has work, or 0 when none.
  Micros NextWake() const;
  // Every run start and end of any pipeline, for max_active_runs.
  void OnRunStarted(const std::string& pipeline, const std::string& run_id);
  void OnRunFinished(const std::string& run_id);
  // Queues one fire (origin "backfill") per scheduled time of `pipeline` in
  // [from, to] that has no fire record yet, started at most `max_active` at
  // once (0: the schedule's max_active_runs). Returns how many were queued.
  // NotFound: no such schedule; InvalidInput: to < from, to in the future, or
  // more than 10000 times.
  Result<size_t> Backfill(const std::string& pipeline, Micros from, Micros to, int max_active);
  // The scheduled times Backfill(pipeline, from, to, ...) would queue now,
  // in order, changing nothing; the same refusals.
  Result<std::vector<Micros>> BackfillTimes(const std::string& pipeline, Micros from,
                                            Micros to) const;
  std::vector<ScheduleView> Views() const;

 private:
  struct Entry;
  Result<std::unique_ptr<Entry>> MakeEntry(const storage::ScheduleRecord& record) const;
  // The fire times of `e` in (after, until], at most `limit`, oldest first.
  std::vector<Micros> TimesIn(const Entry& e, Micros after, Micros until, size_t limit) const;
  // Decides one scheduled time: start, skip or queue.
  void Decide(Entry& e, Micros at, const std::string& origin, Micros now);
  // Starts queued fires while there is room.
  void Drain(Entry& e, Micros now);
  bool HasRoom(const Entry& e, const storage::FireRecord& fire) const;
  bool Start(Entry& e, storage::FireRecord fire, Micros now);

  storage::ScheduleStore* store_;
  storage::RunReader* runs_;
  const Clock* clock_;
  FireStarter* starter_;
  std::map<std::string, std::unique_ptr<Entry>> entries_;  // by pipeline
  std::map<std::string, std::string> run_pipeline_;        // active run -> pipeline
  std::map<std::string, size_t> active_;                   // pipeline -> active runs
  size_t max_overlap_ = 100;
};

}  // namespace apollo11::actors
