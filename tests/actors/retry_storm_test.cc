// Retry-storm control (brief 5.3) without sockets or sleeps: the RetryGate's
// slots and queue, the per-domain stagger, and the scheduler capping the
// retries that wait with a timer, journaling the queued ones, explaining
// them and starting them oldest first as slots free, on a FakeClock.

#include <catch2/catch.hpp>
#include <set>

#include "actors/scheduler/retry_gate.h"
#include "actors/scheduler/scheduler_core.h"
#include "dsl/pipeline_json.h"
#include "engine/retry.h"
#include "storage/memory_run_store.h"

using namespace apollo11;          // NOLINT: test file
using namespace apollo11::actors;  // NOLINT: test file

namespace {

constexpr Micros kMilli = kMicrosPerMilli;

SubmitRun FailingTasks(int n, const std::string& name = "shop.load") {
  dsl::PipelineSpec spec;
  spec.version = "1.0";
  spec.name = name;
  for (int i = 0; i < n; ++i) {
    dsl::TaskSpec t;
    t.id = "t" + std::to_string(i);
    t.type = dsl::TaskType::kShell;
    t.command = "false";
    dsl::RetryPolicy retry;
    retry.max_retries = 5;
    retry.delay = Millis(1000);
    t.retry = retry;
    spec.tasks.push_back(t);
  }
  SubmitRun s;
  s.pipeline_json = dsl::CanonicalJson(spec);
  s.pipeline_hash = dsl::ContentHash(spec);
  return s;
}

struct StormFixture {
  FakeClock clock;
  storage::MemoryRunStore store;
  std::unique_ptr<SchedulerCore> core;
  SchedulerOutbox out;
  std::string run_id;
  std::vector<std::string> execs;

  explicit StormFixture(SchedulerOptions options) {
    core = std::make_unique<SchedulerCore>(&store, &clock, options);
  }
  void Flush() {
    out.Clear();
    REQUIRE(core->Flush(&out).ok());
  }
  // Places what the last Flush made READY; returns the exec refs placed.
  std::vector<std::pair<std::string, uint32_t>> PlaceAll() {
    std::vector<WorkerExecRef> placed;
    std::vector<std::pair<std::string, uint32_t>> refs;
    for (const auto& e : out.enqueue.execs) {
      placed.push_back({"w1", e.dispatch.exec_id, e.dispatch.attempt});
      refs.emplace_back(e.dispatch.exec_id, e.dispatch.attempt);
    }
    core->OnPlaced({placed, clock.Now()});
    Flush();
    return refs;
  }
  void FailAll(const std::vector<std::pair<std::string, uint32_t>>& refs) {
    ResultBatch b;
    for (const auto& [exec_id, attempt] : refs) {
      ResultFrom r;
      r.worker_id = "w1";
      r.result.exec_id = exec_id;
      r.result.attempt = attempt;
      r.result.outcome = static_cast<uint8_t>(transport::Outcome::kFailed);
      r.result.exit_code = 1;
      b.items.push_back(r);
    }
    core->OnResults(b);
    Flush();
  }
  void Start(const SubmitRun& submit) {
    auto id = core->Submit(submit);
    REQUIRE(id.ok());
    run_id = *id;
    Flush();
    FailAll(PlaceAll());
  }
  void Tick() {
    core->OnTimers();
    Flush();
  }
  std::vector<std::string> Notes(const std::string& exec_id) {
    std::vector<std::string> notes;
    auto h = store.HistoryOfExecution(exec_id);
    REQUIRE(h.ok());
    for (const auto& t : *h) {
      if (t.note) notes.push_back(t.reason);
    }
    return notes;
  }
};

}  // namespace

TEST_CASE("the retry gate holds at most N slots and starts queued retries oldest first",
          "[retry][gate]") {
  RetryGate gate(2);
  CHECK(gate.Admit("r", 0, 100));
  CHECK(gate.Admit("r", 1, 200));
  CHECK_FALSE(gate.Admit("r", 2, 300));
  CHECK_FALSE(gate.Admit("q", 0, 400));
  CHECK(gate.waiting() == 2);
  CHECK(gate.queued() == 2);
  CHECK(gate.deferred_total() == 2);
  CHECK(gate.QueuePosition("q", 0) == 2u);
  CHECK_FALSE(gate.QueuePosition("r", 0).has_value());

  std::vector<RetryGate::Entry> start;
  gate.Leave("q", 0, &start);  // a queued retry canceled: no slot freed
  CHECK(start.empty());
  CHECK(gate.queued() == 1);
  gate.Leave("r", 0, &start);
  REQUIRE(start.size() == 1);
  CHECK(start[0].run_id == "r");
  CHECK(start[0].task == 2);
  CHECK(start[0].delay == 300);
  CHECK(gate.waiting() == 2);
  gate.Leave("nobody", 7, &start);  // unknown: ignored
  CHECK(start.size() == 1);

  RetryGate off(0);
  for (int i = 0; i < 1000; ++i) CHECK(off.Admit("r", i, 1));
  CHECK(off.deferred_total() == 0);
}

TEST_CASE("the retry stagger is deterministic, within its bound and spreads one domain",
          "[retry][stagger]") {
  using engine::StaggerOffset;
  CHECK(engine::RetryDomain("order.sync.daily") == "order");
  CHECK(engine::RetryDomain("nightly") == "nightly");
  CHECK(StaggerOffset(Millis(1000), 0.5, "order", "r1.a") ==
        StaggerOffset(Millis(1000), 0.5, "order", "r1.a"));
  CHECK(StaggerOffset(Millis(1000), 0.0, "order", "r1.a") == Millis(0));
  std::set<int64_t> distinct;
  for (int i = 0; i < 500; ++i) {
    const Millis off = StaggerOffset(Millis(1000), 0.5, "order", "r1.t" + std::to_string(i));
    CHECK(off >= Millis(0));
    CHECK(off < Millis(500));
    distinct.insert(off.count() / 50);  // 10 buckets of 50 ms
  }
  CHECK(distinct.size() == 10);  // all buckets used: spread, not clustered
}

TEST_CASE("at most max_retrying retries wait with a timer, the rest queue with a journaled reason",
          "[retry][scheduler]") {
  SchedulerOptions options;
  options.max_retrying = 3;
  StormFixture f(options);
  f.Start(FailingTasks(10));
  CHECK(f.core->retry_gate().waiting() == 3);
  CHECK(f.core->retry_gate().queued() == 7);
  CHECK(f.core->retry_gate().deferred_total() == 7);

  // Retries are admitted in result order: t0..t2 hold slots, t3.. queue.
  const std::string queued = f.run_id + ".t5";
  auto notes = f.Notes(queued);
  REQUIRE(notes.size() == 1);
  CHECK_THAT(notes[0], Catch::Contains("retry deferred: 3 retries already wait with a timer "
                                       "(--max-retrying 3); queued at position 3"));
  CHECK(f.store.GetExecution(queued)->value().next_retry_at == 0);
  CHECK(f.store.GetExecution(f.run_id + ".t0")->value().next_retry_at ==
        f.clock.Now() + 1000 * kMilli);
  auto why = f.core->Explain(f.run_id, "t5", WorkersSnapshot{});
  REQUIRE(why.ok());
  CHECK_THAT(*why, Catch::Contains("waits for a retry slot"));
  CHECK_THAT(*why, Catch::Contains("queued at position 3 because 3 retries already wait"));

  // The first three come due and leave RETRYING: three queued ones start
  // their full backoff now, oldest first.
  f.clock.Advance(1000 * kMilli);
  f.Tick();
  CHECK(f.out.enqueue.execs.size() == 3);
  CHECK(f.core->retry_gate().waiting() == 3);
  CHECK(f.core->retry_gate().queued() == 4);
  const Micros started = f.clock.Now();
  for (const char* t : {"t3", "t4", "t5"}) {
    INFO(t);
    auto rec = f.store.GetExecution(f.run_id + "." + t)->value();
    CHECK(rec.state == TaskState::kRetrying);
    CHECK(rec.next_retry_at == started + 1000 * kMilli);
  }
  notes = f.Notes(queued);
  REQUIRE(notes.size() == 2);
  CHECK_THAT(notes[1], Catch::Contains("retry slot free: backoff of 1s started"));
  CHECK(f.store.GetExecution(f.run_id + ".t6")->value().next_retry_at == 0);

  // The retried ones fail again: they queue behind the older ones.
  f.FailAll(f.PlaceAll());
  CHECK(f.core->retry_gate().queued() == 7);
  CHECK(f.core->retry_gate().waiting() == 3);

  // Draining: every step starts at most three; the cap is never passed.
  for (int i = 0; i < 6; ++i) {
    f.clock.Advance(1000 * kMilli);
    f.Tick();
    CHECK(f.core->retry_gate().waiting() <= 3);
    f.PlaceAll();
  }
}

TEST_CASE("canceling a run frees its retry slots for other runs' queued retries",
          "[retry][scheduler]") {
  SchedulerOptions options;
  options.max_retrying = 2;
  StormFixture f(options);
  f.Start(FailingTasks(2, "a.first"));
  const std::string first = f.run_id;
  f.Start(FailingTasks(2, "b.second"));
  CHECK(f.core->retry_gate().waiting() == 2);
  CHECK(f.core->retry_gate().queued() == 2);
  REQUIRE(f.core->Cancel(first, "test", "tester").ok());
  f.Flush();
  CHECK(f.core->retry_gate().waiting() == 2);
  CHECK(f.core->retry_gate().queued() == 0);
  CHECK(f.store.GetExecution(f.run_id + ".t0")->value().next_retry_at ==
        f.clock.Now() + 1000 * kMilli);
}

TEST_CASE("a retry's delay carries its domain stagger when the scheduler enables it",
          "[retry][stagger][scheduler]") {
  SchedulerOptions options;
  options.retry_stagger = 0.5;
  options.max_retrying = 0;
  StormFixture f(options);
  const Micros failed_at = f.clock.Now();
  f.Start(FailingTasks(50));
  std::set<Micros> dues;
  for (int i = 0; i < 50; ++i) {
    const Micros due =
        f.store.GetExecution(f.run_id + ".t" + std::to_string(i))->value().next_retry_at;
    const Micros expected =
        failed_at + 1000 * kMilli +
        engine::StaggerOffset(Millis(1000), 0.5, "shop", f.run_id + ".t" + std::to_string(i))
                .count() *
            kMilli;
    CHECK(due == expected);
    dues.insert(due);
  }
  CHECK(dues.size() > 40);  // spread over 500 ms, not all at once
  CHECK(*dues.begin() >= failed_at + 1000 * kMilli);
  CHECK(*dues.rbegin() < failed_at + 1500 * kMilli);
}
