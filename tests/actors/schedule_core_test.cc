// ScheduleCore with a fake clock and an in-memory store: catch-up policies,
// overlap, max_active_runs, idempotent fires across a crash, backfill.

#include "actors/schedules/schedule_core.h"

#include <catch2/catch.hpp>
#include <memory>
#include <string>

#include "dsl/pipeline_json.h"
#include "storage/memory_run_store.h"

namespace apollo11::actors {
namespace {

using storage::FireRecord;
using storage::FireState;

constexpr Micros kMinute = 60 * kMicrosPerSecond;
constexpr Micros kT0 = 1'767'225'600LL * kMicrosPerSecond;  // 2026-01-01 00:00:00Z

// Starts "runs" as run records in a batch the test commits (or drops, as a
// crash before the commit would).
class FakeStarter final : public FireStarter {
 public:
  explicit FakeStarter(storage::RunStore* store) : store_(store) {}
  Result<std::string> StartFiredRun(const storage::ScheduleRecord& schedule,
                                    FireRecord fire) override {
    storage::RunRecord run;
    run.run_id = schedule.pipeline + "-" + std::to_string(fire.scheduled_at / kMicrosPerSecond) +
                 "-" + std::to_string(++started_);
    run.pipeline_name = schedule.pipeline;
    run.status = RunStatus::kRunning;
    batch_.CreateRun(run);
    fire.run_id = run.run_id;
    batch_.PutFire(fire);
    return run.run_id;
  }
  void StageFire(FireRecord fire) override { batch_.PutFire(std::move(fire)); }
  void StageSchedule(storage::ScheduleRecord s) override { batch_.PutSchedule(std::move(s)); }
  void RunCapReached(const std::string& why) override { caps.push_back(why); }
  void FiresMissed(const std::string& pipeline, size_t count) override {
    CHECK(pipeline == "t.sched");
    missed += count;
  }
  size_t missed = 0;              // FiresMissed reports
  std::vector<std::string> caps;  // RunCapReached reports
  void Commit() { REQUIRE(store_->Commit(batch_).ok()); }
  void Crash() { batch_.Clear(); }

 private:
  storage::RunStore* store_;
  storage::RunBatch batch_;
  int started_ = 0;
};

// A store, a clock and a core over them that the test can "restart".
struct Fixture {
  storage::MemoryRunStore store;
  FakeClock clock{kT0};
  FakeStarter starter{&store};
  std::unique_ptr<ScheduleCore> core =
      std::make_unique<ScheduleCore>(&store, &store, &clock, &starter);

  void Register(const std::string& extra, const std::string& cron = "* * * * *") {
    dsl::PipelineSpec spec;
    spec.version = "1.0";
    spec.name = "t.sched";
    spec.schedule = cron;
    dsl::TaskSpec task;
    task.id = "a";
    spec.tasks.push_back(task);
    if (extra == "none" || extra == "all" || extra == "latest") {
      spec.catchup = extra;
      spec.overlap = "queue";
    }
    if (extra == "queue" || extra == "allow" || extra == "skip") spec.overlap = extra;
    if (extra == "window") {
      spec.catchup = "all";
      spec.overlap = "queue";
      spec.catchup_window = Millis(250 * 1000);
    }
    if (extra == "all-skip" || extra == "all-allow") {  // catchup: all beside an overlap
      spec.catchup = "all";
      spec.overlap = extra == "all-skip" ? "skip" : "allow";
    }
    if (extra == "max2") {
      spec.overlap = "queue";
      spec.max_active_runs = 2;
    }
    REQUIRE(core->Register(dsl::CanonicalJson(spec), "h", spec).ok());
    starter.Commit();
  }
  void Restart() {
    core = std::make_unique<ScheduleCore>(&store, &store, &clock, &starter);
    REQUIRE(core->Load().ok());
  }
  size_t Tick() {
    size_t n = core->Tick();
    starter.Commit();
    return n;
  }
  std::vector<FireRecord> Fires() { return *store.Fires("t.sched", INT64_MIN, INT64_MAX); }
  size_t Started() {
    size_t n = 0;
    for (const FireRecord& f : Fires()) n += f.state == FireState::kStarted;
    return n;
  }
  void FinishAll() {
    for (const FireRecord& f : Fires()) {
      if (f.state == FireState::kStarted) core->OnRunFinished(f.run_id);
    }
  }
};

}  // namespace

TEST_CASE("a schedule fires once per scheduled time, never before its registration", "[schedule]") {
  Fixture f;
  f.clock.Set(kT0 + 30 * kMicrosPerSecond);
  f.Register("skip");
  CHECK(f.core->NextWake() == kT0 + kMinute);
  CHECK(f.Tick() == 0);
  f.clock.Set(kT0 + kMinute);
  CHECK(f.Tick() == 1);
  CHECK(f.Tick() == 0);
  f.FinishAll();
  f.clock.Set(kT0 + 2 * kMinute + 5 * kMicrosPerSecond);
  CHECK(f.Tick() == 1);
  REQUIRE(f.Fires().size() == 2);
  CHECK(f.Fires()[1].scheduled_at == kT0 + 2 * kMinute);
  CHECK(f.Fires()[1].origin == "schedule");
}

TEST_CASE("catch-up after a coordinator down for three fire times, each policy",
          "[schedule][catchup]") {
  struct Case {
    const char* policy;
    size_t fired;
  };
  for (Case c : {Case{"none", 0}, Case{"latest", 1}, Case{"all", 3}, Case{"window", 2}}) {
    INFO(c.policy);
    Fixture f;
    f.Register(c.policy, "*/2 * * * *");
    f.clock.Set(kT0 + 2 * kMinute);
    REQUIRE(f.Tick() == 1);
    f.FinishAll();
    // Down from 2:10 to 9:05: the fires at 4, 6 and 8 minutes are missed; at
    // 9:05 the 8-minute one is 65 s late, past the on-time grace.
    f.clock.Set(kT0 + 9 * kMinute + 5 * kMicrosPerSecond);
    f.Restart();
    for (int i = 0; i < 4; ++i) {
      f.Tick();
      f.FinishAll();
    }
    CHECK(f.Started() == 1 + c.fired);
    // The times no run is owed are reported missed (a metric), once.
    CHECK(f.starter.missed == 3 - c.fired);
    for (const FireRecord& fire : f.Fires()) {
      CHECK(fire.scheduled_at <= kT0 + 8 * kMinute);
      if (fire.scheduled_at > kT0 + 2 * kMinute) CHECK(fire.origin == "catchup");
    }
    // And nothing fires twice after yet another restart.
    f.Restart();
    f.Tick();
    CHECK(f.Started() == 1 + c.fired);
  }
}

TEST_CASE(
    "catchup: all runs every missed time one after another under overlap: skip, and none is "
    "skipped",
    "[schedule][catchup]") {
  for (const char* policy : {"all-skip", "all-allow"}) {
    INFO(policy);
    Fixture f;
    f.Register(policy, "*/2 * * * *");
    f.clock.Set(kT0 + 2 * kMinute);
    REQUIRE(f.Tick() == 1);
    f.FinishAll();
    // Down from 2:10 to 9:05: 4, 6 and 8 are missed. The run of each must
    // end before the next starts (max_active_runs 1), oldest first.
    f.clock.Set(kT0 + 9 * kMinute + 5 * kMicrosPerSecond);
    f.Restart();  // the 2-minute run is still RUNNING in the store: active
    f.Tick();
    std::vector<FireRecord> fires = f.Fires();
    REQUIRE(fires.size() == 4);
    if (std::string(policy) == "all-skip") {
      for (size_t i = 1; i < 4; ++i) {
        CHECK(fires[i].state == FireState::kQueued);
        CHECK(fires[i].reason.find("owed a run by catchup: all") != std::string::npos);
      }
      for (size_t started = 2; started <= 4; ++started) {  // one at a time
        f.FinishAll();
        f.Tick();
        CHECK(f.Started() == started);
      }
    } else {
      CHECK(f.Started() == 4);  // allow: together, under the ceiling
    }
    f.FinishAll();
    fires = f.Fires();
    REQUIRE(fires.size() == 4);
    for (size_t i = 1; i < fires.size(); ++i) {
      INFO(i << ": " << fires[i].reason);
      CHECK(fires[i].state == FireState::kStarted);
      CHECK(fires[i].origin == "catchup");
      CHECK(fires[i].scheduled_at == kT0 + (2 + 2 * static_cast<Micros>(i)) * kMinute);
    }
    // An on-time fire while a run is active still follows overlap: skip.
    f.clock.Set(kT0 + 10 * kMinute);
    f.Tick();
    fires = f.Fires();
    REQUIRE(fires.size() == 5);
    CHECK(fires[4].origin == "schedule");
  }
}

TEST_CASE("overlap skip journals a skipped fire, queue starts it when a run ends, allow starts it",
          "[schedule][overlap]") {
  for (const char* policy : {"skip", "queue", "allow"}) {
    INFO(policy);
    Fixture f;
    f.Register(policy);
    f.clock.Set(kT0 + kMinute);
    REQUIRE(f.Tick() == 1);
    f.clock.Set(kT0 + 2 * kMinute);
    f.Tick();  // the first run is still active
    std::vector<FireRecord> fires = f.Fires();
    REQUIRE(fires.size() == 2);
    std::string p = policy;
    CHECK(fires[1].state == (p == "skip"    ? FireState::kSkipped
                             : p == "queue" ? FireState::kQueued
                                            : FireState::kStarted));
    f.FinishAll();
    f.Tick();
    CHECK(f.Fires()[1].state == (p == "skip" ? FireState::kSkipped : FireState::kStarted));
  }
}

TEST_CASE("max_active_runs caps the runs of a schedule at once, the rest queued in order",
          "[schedule][overlap]") {
  Fixture f;
  f.Register("max2");
  for (int m = 1; m <= 4; ++m) {
    f.clock.Set(kT0 + m * kMinute);
    f.Tick();
  }
  std::vector<FireRecord> fires = f.Fires();
  REQUIRE(fires.size() == 4);
  CHECK(f.Started() == 2);
  CHECK(fires[2].state == FireState::kQueued);
  f.core->OnRunFinished(fires[0].run_id);
  f.Tick();
  CHECK(f.Fires()[2].state == FireState::kStarted);
  CHECK(f.Fires()[3].state == FireState::kQueued);
  // Queued fires survive a restart.
  f.Restart();  // the fake store still holds run 0 as unfinished
  f.core->OnRunFinished(f.Fires()[0].run_id);
  f.core->OnRunFinished(f.Fires()[1].run_id);
  f.Tick();
  CHECK(f.Fires()[3].state == FireState::kStarted);
}

TEST_CASE("a crash before the fire's commit fires it again once, a crash after never twice",
          "[schedule][crash]") {
  SECTION("killed after the fire and its run were staged, before the commit") {
    Fixture f;
    f.Register("latest");
    f.clock.Set(kT0 + kMinute);
    CHECK(f.core->Tick() == 1);
    f.starter.Crash();
    f.clock.Set(kT0 + kMinute + 10 * kMicrosPerSecond);
    f.Restart();
    CHECK(f.Tick() == 1);
    CHECK(f.Started() == 1);
    CHECK(f.store.UnfinishedRuns()->size() == 1);
  }
  SECTION("killed after the commit, before the run's first dispatch") {
    Fixture f;
    f.Register("all");
    f.clock.Set(kT0 + kMinute);
    CHECK(f.Tick() == 1);
    f.Restart();
    CHECK(f.Tick() == 0);
    CHECK(f.Started() == 1);
    CHECK(f.store.UnfinishedRuns()->size() == 1);
  }
}

TEST_CASE("a wall clock stepped back fires no time twice", "[schedule][clock]") {
  Fixture f;
  f.Register("all");
  f.clock.Set(kT0 + kMinute);
  CHECK(f.Tick() == 1);
  f.FinishAll();
  f.clock.StepWall(-5 * kMinute);
  CHECK(f.Tick() == 0);
  f.clock.StepWall(5 * kMinute);
  CHECK(f.Tick() == 0);
  f.clock.StepWall(kMinute);
  CHECK(f.Tick() == 1);
}

TEST_CASE("backfill starts one run per scheduled time, idempotent with the schedule's fires",
          "[schedule][backfill]") {
  Fixture f;
  f.Register("skip");
  f.clock.Set(kT0 + 10 * kMinute);
  f.Tick();  // the schedule's own fire of minute 10
  f.FinishAll();
  CHECK(f.core->Backfill("t.sched", kT0 + 10 * kMinute, kT0 + 20 * kMinute, 1).status().code() ==
        StatusCode::kInvalidInput);  // the future
  // A dry run names the times a backfill would queue, and queues nothing.
  auto times = f.core->BackfillTimes("t.sched", kT0 + 7 * kMinute, kT0 + 10 * kMinute);
  REQUIRE(times.ok());
  CHECK(*times == std::vector<Micros>{kT0 + 7 * kMinute, kT0 + 8 * kMinute, kT0 + 9 * kMinute});
  CHECK(*f.core->BackfillTimes("t.sched", kT0 + 7 * kMinute, kT0 + 10 * kMinute) == *times);
  CHECK(f.core->BackfillTimes("t.sched", kT0 + 10 * kMinute, kT0 + 20 * kMinute).status().code() ==
        StatusCode::kInvalidInput);
  auto queued = f.core->Backfill("t.sched", kT0 + 7 * kMinute, kT0 + 10 * kMinute, 2);
  REQUIRE(queued.ok());
  CHECK(*queued == 3);  // 7, 8, 9; 10 fired already
  f.starter.Commit();
  CHECK(f.Started() == 3);  // minute 10 and two backfills (max 2 at once)
  CHECK(*f.core->Backfill("t.sched", kT0 + 7 * kMinute, kT0 + 10 * kMinute, 2) == 0);
  CHECK(f.core->BackfillTimes("t.sched", kT0 + 7 * kMinute, kT0 + 10 * kMinute)->empty());
  f.FinishAll();
  f.Tick();
  CHECK(f.Started() == 4);
  for (const FireRecord& fire : f.Fires()) {
    if (fire.scheduled_at < kT0 + 10 * kMinute) CHECK(fire.origin == "backfill");
  }
  CHECK(f.core->Backfill("t.other", kT0, kT0, 1).status().code() == StatusCode::kNotFound);
}

TEST_CASE("a removed schedule fires nothing more, its queue skipped, across a restart",
          "[schedule]") {
  Fixture f;
  f.Register("queue");
  f.clock.Set(kT0 + kMinute);
  CHECK(f.Tick() == 1);
  f.clock.Set(kT0 + 2 * kMinute);
  CHECK(f.Tick() == 0);  // queued behind the running one
  REQUIRE(f.Fires().back().state == FireState::kQueued);
  CHECK(f.core->Fires("t.sched", "h"));
  CHECK_FALSE(f.core->Fires("t.sched", "other"));
  f.core->Unregister("t.sched", "the pipeline was removed");
  f.starter.Commit();
  CHECK_FALSE(f.core->Has("t.sched"));
  CHECK(f.store.Schedules()->empty());
  CHECK(f.Fires().back().state == FireState::kSkipped);
  CHECK(f.Fires().back().reason.find("the pipeline was removed") != std::string::npos);
  CHECK(f.core->NextWake() == 0);
  f.FinishAll();
  f.Restart();
  f.clock.Set(kT0 + 5 * kMinute);
  CHECK(f.Tick() == 0);
  CHECK(f.Fires().size() == 2);
  f.core->Unregister("t.sched", "again");  // no schedule: nothing happens
  f.starter.Commit();
  CHECK(f.Fires().size() == 2);
}

TEST_CASE("overlap: allow stops at the coordinator's ceiling: later fires are skipped, not queued",
          "[schedule][overlap]") {
  Fixture f;
  f.core->set_max_overlap(3);
  f.Register("allow");
  for (int m = 1; m <= 6; ++m) {  // no run ever ends
    f.clock.Set(kT0 + m * kMinute);
    f.Tick();
  }
  std::vector<FireRecord> fires = f.Fires();
  REQUIRE(fires.size() == 6);
  CHECK(f.Started() == 3);
  for (int i = 3; i < 6; ++i) {
    CHECK(fires[i].state == FireState::kSkipped);
    CHECK(fires[i].reason ==
          "3 run(s) active, the coordinator's cap for overlap: allow (--max-schedule-overlap 3)");
  }
  REQUIRE(f.starter.caps.size() == 3);
  CHECK(f.starter.caps[0].find("t.sched: the fire at ") == 0);
  // A run ends: the next fire starts again.
  f.core->OnRunFinished(fires[0].run_id);
  f.clock.Set(kT0 + 7 * kMinute);
  f.Tick();
  CHECK(f.Fires().back().state == FireState::kStarted);
}

}  // namespace apollo11::actors
