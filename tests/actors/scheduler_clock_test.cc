// The scheduler's timers run on the monotonic clock: a step of the wall clock
// (NTP, `date -s`) neither fires a retry or a slow flag early nor delays it.
// What is journaled stays wall time.

#include <catch2/catch.hpp>

#include "actors/scheduler/scheduler_core.h"
#include "dsl/pipeline_json.h"
#include "storage/memory_run_store.h"

using namespace apollo11;          // NOLINT: test file
using namespace apollo11::actors;  // NOLINT: test file

namespace {

constexpr Micros kHour = 3600 * kMicrosPerSecond;
constexpr Micros kMilli = kMicrosPerMilli;

SubmitRun OneTask(double jitter = 0.0) {
  dsl::PipelineSpec spec;
  spec.version = "1.0";
  spec.name = "test.clock";
  dsl::TaskSpec t;
  t.id = "a";
  t.type = dsl::TaskType::kShell;
  t.command = "true";
  dsl::RetryPolicy retry;
  retry.max_retries = 2;
  retry.delay = Millis(10'000);
  retry.jitter = jitter;
  t.retry = retry;
  spec.tasks.push_back(t);
  SubmitRun s;
  s.pipeline_json = dsl::CanonicalJson(spec);
  s.pipeline_hash = dsl::ContentHash(spec);
  return s;
}

ResultBatch Outcome(const std::string& exec_id, uint32_t attempt, transport::Outcome outcome) {
  ResultBatch b;
  ResultFrom r;
  r.worker_id = "w1";
  r.result.exec_id = exec_id;
  r.result.attempt = attempt;
  r.result.outcome = static_cast<uint8_t>(outcome);
  r.result.exit_code = outcome == transport::Outcome::kSuccess ? 0 : 1;
  b.items.push_back(r);
  return b;
}

struct ClockFixture {
  FakeClock clock;
  storage::MemoryRunStore store;
  std::unique_ptr<SchedulerCore> core;
  SchedulerOutbox out;
  std::string exec_id;

  explicit ClockFixture(SchedulerOptions options = {}) {
    core = std::make_unique<SchedulerCore>(&store, &clock, options);
  }
  void Flush() {
    out.Clear();
    REQUIRE(core->Flush(&out).ok());
  }
  void Tick() {
    core->OnTimers();
    Flush();
  }
  // Submits, places attempt 1 on w1 and returns its exec id.
  std::string Start(const SubmitRun& submit) {
    auto run_id = core->Submit(submit);
    REQUIRE(run_id.ok());
    Flush();
    REQUIRE(out.enqueue.execs.size() == 1);
    exec_id = out.enqueue.execs[0].dispatch.exec_id;
    core->OnPlaced({{{"w1", exec_id, 1}}, clock.Now()});
    // Its STARTED: the slow check counts from it, not from the placement.
    StartedBatch started;
    started.items.push_back({"w1", transport::Started{exec_id, 1, clock.Now()}});
    core->OnStarted(started);
    Flush();
    return exec_id;
  }
  // Attempt 1 fails: the task waits 10 s to retry.
  void FailFirstAttempt() {
    core->OnResults(Outcome(exec_id, 1, transport::Outcome::kFailed));
    Flush();
    REQUIRE(State() == TaskState::kRetrying);
  }
  TaskState State() {
    auto e = store.GetExecution(exec_id);
    REQUIRE(e.ok());
    REQUIRE(e->has_value());
    return (*e)->state;
  }
};

}  // namespace

TEST_CASE("a wall clock stepped forward does not fire a retry early", "[scheduler][clock]") {
  ClockFixture f;
  f.Start(OneTask());
  f.FailFirstAttempt();
  const Micros due_wall = f.clock.Now() + 10'000 * kMilli;
  CHECK(f.store.GetExecution(f.exec_id)->value().next_retry_at == due_wall);

  f.clock.StepWall(+kHour);
  f.Tick();
  CHECK(f.State() == TaskState::kRetrying);
  CHECK(f.out.enqueue.execs.empty());
  // The loop's wake-up still lies 10 s ahead of the (stepped) wall clock.
  CHECK(f.core->NextTimer() == f.clock.Now() + 10'000 * kMilli);
  f.clock.Advance(9'999 * kMilli);
  f.Tick();
  CHECK(f.State() == TaskState::kRetrying);
  f.clock.Advance(1 * kMilli);
  f.Tick();
  CHECK(f.State() == TaskState::kReady);
  REQUIRE(f.out.enqueue.execs.size() == 1);
  CHECK(f.out.enqueue.execs[0].dispatch.attempt == 2);
}

TEST_CASE("a wall clock stepped back does not delay a retry", "[scheduler][clock]") {
  ClockFixture f;
  f.Start(OneTask());
  f.FailFirstAttempt();
  f.clock.StepWall(-kHour);
  f.clock.Advance(9'999 * kMilli);
  f.Tick();
  CHECK(f.State() == TaskState::kRetrying);
  f.clock.Advance(1 * kMilli);
  f.Tick();
  CHECK(f.State() == TaskState::kReady);
  CHECK(f.out.enqueue.execs.size() == 1);
}

TEST_CASE("a retry due time survives a restart as wall time and waits on the new steady clock",
          "[scheduler][clock][recovery]") {
  ClockFixture f;
  f.Start(OneTask());
  f.FailFirstAttempt();
  const Micros due_wall = f.clock.Now() + 10'000 * kMilli;
  f.core.reset();

  // A new process: its steady clock has another origin; 4 s have passed.
  FakeClock later(5 * kMicrosPerSecond);
  later.StepWall(due_wall - 6'000 * kMilli - later.Now());
  SchedulerCore after(&f.store, &later, {});
  RecoveryReport report = after.Recover();
  CHECK(report.retrying == 1);
  CHECK(after.NextTimer() == due_wall);
  SchedulerOutbox out;
  REQUIRE(after.Flush(&out).ok());
  later.Advance(5'999 * kMilli);
  after.OnTimers();
  REQUIRE(after.Flush(&out).ok());
  CHECK(out.enqueue.execs.empty());
  later.Advance(1 * kMilli);
  after.OnTimers();
  out.Clear();
  REQUIRE(after.Flush(&out).ok());
  REQUIRE(out.enqueue.execs.size() == 1);
  CHECK(out.enqueue.execs[0].dispatch.attempt == 2);
}

namespace {

// Task "a" has a P50 of 200 ms: flagged slow after max(5 x 200 ms, 300 ms) = 1 s.
struct SlowClockFixture : ClockFixture {
  static SchedulerOptions Options() {
    SchedulerOptions o;
    o.slow_min = Millis(300);
    return o;
  }
  SlowClockFixture() : ClockFixture(Options()) {
    storage::RunBatch history;
    for (Micros d : {100, 200, 300}) history.RecordDuration("test.clock/a", d * kMilli);
    REQUIRE(store.Commit(history).ok());
  }
  storage::SlowFlag Slow() { return store.GetExecution(exec_id)->value().slow; }
};

}  // namespace

TEST_CASE("a wall clock step neither flags a slow task early nor delays the flag",
          "[scheduler][clock][slow]") {
  for (Micros step : {+kHour, -kHour}) {
    SlowClockFixture f;
    f.Start(OneTask());
    f.clock.StepWall(step);
    f.Tick();
    CHECK(f.Slow() == storage::SlowFlag::kNone);
    f.clock.Advance(999 * kMilli);
    f.Tick();
    CHECK(f.Slow() == storage::SlowFlag::kNone);
    f.clock.Advance(2 * kMilli);
    f.Tick();
    REQUIRE(f.Slow() == storage::SlowFlag::kFlagged);
    // It ran 1 s by the steady clock, whatever the wall clock says.
    const storage::ExecutionRecord rec = f.store.GetExecution(f.exec_id)->value();
    CHECK(rec.slow_reason->find("running 1s1ms,") != std::string::npos);
    CHECK(rec.flagged_at == f.clock.Now());
  }
}

TEST_CASE("retry jitter comes from the injected source: one seed, one schedule",
          "[scheduler][random]") {
  auto due_with_seed = [](uint64_t seed) {
    auto random = engine::NewSeededRandom(seed);
    SchedulerOptions options;
    options.random = random.get();
    ClockFixture f(options);
    f.Start(OneTask(/*jitter=*/0.5));
    f.FailFirstAttempt();
    return f.store.GetExecution(f.exec_id)->value().next_retry_at - f.clock.Now();
  };
  const Micros first = due_with_seed(11);
  CHECK(first == due_with_seed(11));
  CHECK(first >= 5'000 * kMilli);
  CHECK(first <= 15'000 * kMilli);
}
