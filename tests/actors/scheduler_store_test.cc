// The scheduler over the in-memory RunStore, with commits failed on demand:
// what a full disk does to a loop turn, without a disk.

#include <catch2/catch.hpp>
#include <cstdio>
#include <map>
#include <set>
#include <string>

#include "actors/scheduler/scheduler_core.h"
#include "dsl/pipeline_json.h"
#include "engine/random_source.h"
#include "storage/faulty_run_store.h"
#include "storage/memory_run_store.h"

using namespace apollo11;          // NOLINT: test file
using namespace apollo11::actors;  // NOLINT: test file

namespace {

SubmitRun TwoTasks() {
  dsl::PipelineSpec spec;
  spec.version = "1.0";
  spec.name = "test.store";
  for (const char* id : {"a", "b"}) {
    dsl::TaskSpec t;
    t.id = id;
    t.type = dsl::TaskType::kShell;
    t.command = "true";
    spec.tasks.push_back(t);
  }
  spec.tasks[1].depends_on.push_back({"a", dsl::DependencyCondition::kSuccess, {}});
  SubmitRun s;
  s.pipeline_json = dsl::CanonicalJson(spec);
  s.pipeline_hash = dsl::ContentHash(spec);
  return s;
}

// `n` shell tasks, all after the first ("t00000" .. ): one READY at the
// start, the rest PENDING.
SubmitRun ManyTasks(int n) {
  dsl::PipelineSpec spec;
  spec.version = "1.0";
  spec.name = "test.many";
  for (int i = 0; i < n; ++i) {
    dsl::TaskSpec t;
    char id[16];
    std::snprintf(id, sizeof id, "t%05d", i);
    t.id = id;
    t.type = dsl::TaskType::kShell;
    t.command = "true";
    if (i > 0) t.depends_on.push_back({"t00000", dsl::DependencyCondition::kSuccess, {}});
    spec.tasks.push_back(std::move(t));
  }
  SubmitRun s;
  s.pipeline_json = dsl::CanonicalJson(spec);
  s.pipeline_hash = dsl::ContentHash(spec);
  return s;
}

ResultBatch Success(const std::string& exec_id) {
  ResultBatch b;
  ResultFrom r;
  r.worker_id = "w1";
  r.result.exec_id = exec_id;
  r.result.attempt = 1;
  r.result.outcome = static_cast<uint8_t>(transport::Outcome::kSuccess);
  b.items.push_back(r);
  return b;
}

struct StoreFixture {
  FakeClock clock;
  storage::MemoryRunStore memory;
  storage::FaultyRunStore store{&memory};
  SchedulerCore core{&store, &clock, {}};
  SchedulerOutbox out;
};

}  // namespace

TEST_CASE("a failed commit releases nothing and the next successful one releases everything",
          "[scheduler][store]") {
  StoreFixture f;
  auto run_id = f.core.Submit(TwoTasks());
  REQUIRE(run_id.ok());
  REQUIRE(f.core.Flush(&f.out).ok());
  REQUIRE(f.out.enqueue.execs.size() == 1);
  const std::string a = *run_id + ".a";
  const uint64_t seq = f.memory.last_seq();

  // The disk fills up: a's placement and result are staged, the commit fails.
  f.store.FailCommits();
  f.core.OnPlaced({{{"w1", a, 1}}, f.clock.Now()});
  f.core.OnResults(Success(a));
  f.out.Clear();
  Status failed = f.core.Flush(&f.out);
  CHECK(failed.code() == StatusCode::kFull);
  CHECK(f.out.Empty());
  CHECK(f.memory.last_seq() == seq);
  CHECK(f.core.staged_transitions() == 3);  // a RUNNING, a SUCCESS, b READY
  // While commits fail, nothing more is handed to the dispatcher.
  Enqueue early;
  f.core.TakeEnqueue(&early);
  CHECK(early.execs.empty());
  // Retried, and still failing: still nothing released.
  CHECK_FALSE(f.core.Flush(&f.out).ok());
  CHECK(f.out.Empty());
  CHECK(f.store.failed_commits() == 2);

  // Space returns: one commit makes all of it durable and releases all of it.
  f.store.Heal();
  REQUIRE(f.core.Flush(&f.out).ok());
  CHECK(f.memory.last_seq() == seq + 3);
  REQUIRE(f.out.release.execs.size() == 1);
  CHECK(f.out.release.execs[0].exec_id == a);
  REQUIRE(f.out.acks.acks.size() == 1);
  CHECK(f.out.acks.acks[0].exec_id == a);
  REQUIRE(f.out.enqueue.execs.size() == 1);
  CHECK(f.out.enqueue.execs[0].dispatch.exec_id == *run_id + ".b");
  CHECK(f.core.staged_transitions() == 0);
  auto stored = f.memory.GetExecution(a);
  REQUIRE(stored.ok());
  REQUIRE(stored->has_value());
  CHECK((*stored)->state == TaskState::kSuccess);
  // The scheduler keeps the run and trace ids once per run and makes exec
  // ids from them; every journaled record carries all three, the trace id
  // the one the workers were given.
  const std::string trace_id = f.out.enqueue.execs[0].dispatch.trace_id;
  CHECK(trace_id.size() == 16);
  for (const std::string& exec_id : {a, *run_id + ".b"}) {
    auto record = f.memory.GetExecution(exec_id);
    REQUIRE(record.ok());
    REQUIRE(record->has_value());
    CHECK((*record)->exec_id == exec_id);
    CHECK((*record)->run_id == *run_id);
    CHECK((*record)->trace_id == trace_id);
  }
}

TEST_CASE("a submission whose commit fails is not started until a commit succeeds",
          "[scheduler][store]") {
  StoreFixture f;
  f.store.FailNextCommits(1);
  auto run_id = f.core.Submit(TwoTasks());
  REQUIRE(run_id.ok());
  CHECK_FALSE(f.core.Flush(&f.out).ok());
  CHECK(f.out.Empty());
  auto run = f.memory.GetRun(*run_id);
  REQUIRE(run.ok());
  CHECK_FALSE(run->has_value());
  // The next commit goes through: the run, its snapshot and a's READY together.
  REQUIRE(f.core.Flush(&f.out).ok());
  REQUIRE(f.out.enqueue.execs.size() == 1);
  run = f.memory.GetRun(*run_id);
  REQUIRE(run.ok());
  CHECK(run->has_value());
  auto snapshot = f.memory.GetPipeline(TwoTasks().pipeline_hash);
  REQUIRE(snapshot.ok());
  CHECK(snapshot->has_value());
}

TEST_CASE("a result resent while commits fail is acknowledged once", "[scheduler][store]") {
  StoreFixture f;
  auto run_id = f.core.Submit(TwoTasks());
  REQUIRE(run_id.ok());
  REQUIRE(f.core.Flush(&f.out).ok());
  const std::string a = *run_id + ".a";
  f.core.OnPlaced({{{"w1", a, 1}}, f.clock.Now()});
  REQUIRE(f.core.Flush(&f.out).ok());

  // The worker resends its unacknowledged result every heartbeat of the
  // outage; each resend must not add an ACK (nor memory) of its own.
  f.store.FailCommits();
  for (int resend = 0; resend < 5; ++resend) {
    f.core.OnResults(Success(a));
    f.out.Clear();
    CHECK_FALSE(f.core.Flush(&f.out).ok());
  }
  f.store.Heal();
  f.core.OnResults(Success(a));  // one more after space came back
  f.out.Clear();
  REQUIRE(f.core.Flush(&f.out).ok());
  REQUIRE(f.out.acks.acks.size() == 1);
  CHECK(f.out.acks.acks[0].exec_id == a);

  // A resend after the release (its ACK was lost) is acknowledged again.
  f.core.OnResults(Success(a));
  f.out.Clear();
  REQUIRE(f.core.Flush(&f.out).ok());
  CHECK(f.out.acks.acks.size() == 1);
}

TEST_CASE("run ids come from the injected random source: one seed, one id", "[scheduler][random]") {
  auto first_run_id = [](uint64_t seed) {
    auto random = engine::NewSeededRandom(seed);
    FakeClock clock;
    storage::MemoryRunStore store;
    SchedulerOptions options;
    options.random = random.get();
    SchedulerCore core(&store, &clock, options);
    auto run_id = core.Submit(TwoTasks());
    REQUIRE(run_id.ok());
    return *run_id;
  };
  CHECK(first_run_id(7) == first_run_id(7));
}

TEST_CASE("submissions on a frozen clock get distinct run ids, and a restart continues after them",
          "[scheduler][ids]") {
  FakeClock clock;
  storage::MemoryRunStore store;
  std::set<std::string> ids;
  std::string last;
  {
    SchedulerCore core(&store, &clock, {});
    SchedulerOutbox out;
    for (int i = 0; i < 5000; ++i) {
      auto run_id = core.Submit(TwoTasks());
      REQUIRE(run_id.ok());
      REQUIRE(ids.insert(*run_id).second);
      last = *run_id;
      if (i % 100 == 99) REQUIRE(core.Flush(&out).ok());
    }
    REQUIRE(core.Flush(&out).ok());
  }
  // The coordinator restarts with its clock an hour behind.
  clock.StepWall(-3600 * kMicrosPerSecond);
  SchedulerCore restarted(&store, &clock, {});
  auto next = restarted.Submit(TwoTasks());
  REQUIRE(next.ok());
  CHECK(*next > last);
  CHECK(ids.count(*next) == 0);
  SchedulerOutbox out;
  REQUIRE(restarted.Flush(&out).ok());
  CHECK(store.ListRuns(10'000)->size() == 5001);
}

TEST_CASE("a large run's PENDING records are committed in parts ahead of the commit creating it",
          "[scheduler][store]") {
  StoreFixture f;
  const uint64_t before = f.memory.last_batch();
  auto run_id = f.core.Submit(ManyTasks(20'000));
  REQUIRE(run_id.ok());
  REQUIRE(f.core.Flush(&f.out).ok());
  // 19,999 PENDING records in parts of 8,192, then the run with its READY root.
  CHECK(f.memory.last_batch() - before == 4);
  auto run = f.memory.GetRun(*run_id);
  REQUIRE(run.ok());
  REQUIRE(run->has_value());
  CHECK((*run)->status == RunStatus::kRunning);
  auto records = f.memory.ExecutionsOfRun(*run_id);
  REQUIRE(records.ok());
  REQUIRE(records->size() == 20'000);
  std::map<TaskState, int> by_state;
  for (const storage::ExecutionRecord& r : *records) {
    ++by_state[r.state];
    CHECK(r.run_id == *run_id);
  }
  CHECK(by_state[TaskState::kPending] == 19'999);
  CHECK(by_state[TaskState::kReady] == 1);
  CHECK(f.out.enqueue.execs.size() == 1);
}

TEST_CASE(
    "records committed ahead of a run that never landed leave no run, and their id is not reused",
    "[scheduler][store]") {
  FakeClock clock;
  storage::MemoryRunStore memory;
  storage::FaultyRunStore store(&memory);
  // One seed for both processes: the restarted one would draw the same id.
  auto random = engine::NewSeededRandom(11);
  SchedulerOptions options;
  options.random = random.get();
  std::string crashed;
  {
    SchedulerCore core(&store, &clock, options);
    store.FailCommitsAfter(3);  // the three parts land; the run's own commit does not
    auto run_id = core.Submit(ManyTasks(20'000));
    REQUIRE(run_id.ok());
    crashed = *run_id;
    SchedulerOutbox out;
    CHECK_FALSE(core.Flush(&out).ok());
    CHECK(out.Empty());
  }  // the coordinator dies here
  CHECK_FALSE(memory.GetRun(crashed)->has_value());
  CHECK(*memory.HasExecutionsOf(crashed));
  CHECK(memory.ExecutionsOfRun(crashed)->size() == 19'999);

  store.Heal();
  random = engine::NewSeededRandom(11);
  options.random = random.get();
  SchedulerCore restarted(&store, &clock, options);
  CHECK(restarted.Recover().runs == 0);
  auto next = restarted.Submit(TwoTasks());
  REQUIRE(next.ok());
  CHECK(*next != crashed);
  SchedulerOutbox out;
  REQUIRE(restarted.Flush(&out).ok());
  CHECK(memory.ExecutionsOfRun(*next)->size() == 2);
  CHECK(memory.ExecutionsOfRun(crashed)->size() == 19'999);
}

TEST_CASE("a part that fails stops the split: the run's own commit carries every record",
          "[scheduler][store]") {
  StoreFixture f;
  f.store.FailCommits();  // a full disk
  const uint64_t before = f.memory.last_batch();
  auto run_id = f.core.Submit(ManyTasks(20'000));
  REQUIRE(run_id.ok());
  CHECK_FALSE(f.core.Flush(&f.out).ok());
  CHECK(f.store.failed_commits() == 2);  // the first part, then the turn's commit
  CHECK_FALSE(f.core.Flush(&f.out).ok());
  CHECK(f.store.failed_commits() == 3);  // the parts are not tried again
  f.store.Heal();
  REQUIRE(f.core.Flush(&f.out).ok());
  CHECK(f.memory.last_batch() - before == 1);
  auto records = f.memory.ExecutionsOfRun(*run_id);
  REQUIRE(records.ok());
  CHECK(records->size() == 20'000);
  CHECK(f.memory.GetRun(*run_id)->has_value());
}
