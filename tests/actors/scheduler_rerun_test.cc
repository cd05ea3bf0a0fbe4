// SchedulerCore::Rerun over the in-memory RunStore: the new run's record and
// reused executions, what it dispatches (templates reading a reused output),
// its refusals, and its recovery after a restart.

#include <catch2/catch.hpp>
#include <string>

#include "actors/scheduler/scheduler_core.h"
#include "dsl/pipeline_json.h"
#include "storage/memory_run_store.h"

using namespace apollo11;          // NOLINT: test file
using namespace apollo11::actors;  // NOLINT: test file

namespace {

// a -> b, where b's command reads a's JSON output through a template.
SubmitRun Chain() {
  dsl::PipelineSpec spec;
  spec.version = "1.0";
  spec.name = "test.rerun";
  for (const char* id : {"a", "b"}) {
    dsl::TaskSpec t;
    t.id = id;
    t.type = dsl::TaskType::kShell;
    t.command = "true";
    spec.tasks.push_back(t);
  }
  spec.tasks[1].command = "echo ${tasks.a.output.x}";
  spec.tasks[1].depends_on.push_back({"a", dsl::DependencyCondition::kSuccess, {}});
  SubmitRun s;
  s.pipeline_json = dsl::CanonicalJson(spec);
  s.pipeline_hash = dsl::ContentHash(spec);
  s.params = {{"day", "2026-12-01"}};
  return s;
}

ResultBatch Report(const std::string& exec_id, transport::Outcome outcome,
                   const std::string& task_output = "") {
  ResultBatch b;
  ResultFrom r;
  r.worker_id = "w1";
  r.result.exec_id = exec_id;
  r.result.attempt = 1;
  r.result.outcome = static_cast<uint8_t>(outcome);
  r.result.exit_code = outcome == transport::Outcome::kSuccess ? 0 : 1;
  r.result.output = "a says hello\n";
  r.result.task_output = task_output;
  b.items.push_back(r);
  return b;
}

struct Fixture {
  FakeClock clock;
  storage::MemoryRunStore store;
  SchedulerCore core{&store, &clock, {}};
  SchedulerOutbox out;

  void Flush() {
    out.Clear();
    REQUIRE(core.Flush(&out).ok());
  }
  // Places `task` of `run` on w1 and reports `outcome` for attempt 1.
  void Run(const std::string& run, const std::string& task, transport::Outcome outcome,
           const std::string& task_output = "") {
    core.OnPlaced({{{"w1", run + "." + task, 1}}, clock.Now()});
    core.OnResults(Report(run + "." + task, outcome, task_output));
    Flush();
  }
  // A finished run in which a succeeded with {"x":7} and b failed.
  std::string FailedRun() {
    auto id = core.Submit(Chain());
    REQUIRE(id.ok());
    Flush();
    Run(*id, "a", transport::Outcome::kSuccess, R"({"x":7})");
    Run(*id, "b", transport::Outcome::kFailed);
    auto rec = store.GetRun(*id);
    REQUIRE(rec.ok());
    REQUIRE((*rec)->status == RunStatus::kFailed);
    return *id;
  }
};

RerunRun Failed(const std::string& run) {
  RerunRun r;
  r.run_id = run;
  return r;
}

}  // namespace

TEST_CASE("a rerun reuses a's SUCCESS and output and dispatches b with it", "[scheduler][rerun]") {
  Fixture f;
  const std::string original = f.FailedRun();
  auto rerun = f.core.Rerun(Failed(original));
  REQUIRE(rerun.ok());
  f.Flush();
  auto rec = f.store.GetRun(*rerun);
  REQUIRE(rec.ok());
  REQUIRE(rec->has_value());
  CHECK((*rec)->rerun_of == original);
  CHECK((*rec)->params == Chain().params);
  CHECK((*rec)->pipeline_hash == Chain().pipeline_hash);
  auto a = f.store.GetExecution(*rerun + ".a");
  REQUIRE(a.ok());
  CHECK((*a)->state == TaskState::kSuccess);
  CHECK((*a)->attempt == 0);
  CHECK((*a)->task_output == R"({"x":7})");
  CHECK((*a)->output == "a says hello\n");
  auto history = f.store.HistoryOfExecution(*rerun + ".a");
  REQUIRE(history.ok());
  REQUIRE(history->size() == 1);
  CHECK((*history)[0].from == TaskState::kPending);
  CHECK((*history)[0].reason == "reused from " + original);
  // Only b goes to a worker, its template filled from the reused output.
  REQUIRE(f.out.enqueue.execs.size() == 1);
  CHECK(f.out.enqueue.execs[0].dispatch.exec_id == *rerun + ".b");
  CHECK(f.out.enqueue.execs[0].dispatch.task.command == "echo '7'");  // shell-quoted
  f.Run(*rerun, "b", transport::Outcome::kSuccess);
  CHECK((*f.store.GetRun(*rerun))->status == RunStatus::kSuccess);
}

TEST_CASE("a rerun is refused for an unknown or unfinished run and an unknown task",
          "[scheduler][rerun]") {
  Fixture f;
  CHECK(f.core.Rerun(Failed("nope")).status().code() == StatusCode::kNotFound);
  CHECK(f.core.Rerun(Failed("a.b")).status().code() == StatusCode::kInvalidInput);
  auto running = f.core.Submit(Chain());
  REQUIRE(running.ok());
  f.Flush();
  auto busy = f.core.Rerun(Failed(*running));
  CHECK(busy.status().code() == StatusCode::kInvalidInput);
  CHECK(busy.status().message().find("still RUNNING") != std::string::npos);
  const std::string done = f.FailedRun();
  RerunRun from = Failed(done);
  from.failed = false;
  from.from_task = "zz";
  CHECK(f.core.Rerun(from).status().code() == StatusCode::kNotFound);
  CHECK(f.core.staged_transitions() == 0);  // nothing was started
}

TEST_CASE("a rerun recovered after a restart keeps its reused output", "[scheduler][rerun]") {
  Fixture f;
  const std::string original = f.FailedRun();
  auto rerun = f.core.Rerun(Failed(original));
  REQUIRE(rerun.ok());
  f.Flush();
  // The coordinator dies before b is placed; a new one recovers the rerun.
  SchedulerCore again(&f.store, &f.clock, {});
  auto report = again.Recover();
  CHECK(report.runs == 1);
  SchedulerOutbox out;
  REQUIRE(again.Flush(&out).ok());
  REQUIRE(out.enqueue.execs.size() == 1);
  CHECK(out.enqueue.execs[0].dispatch.exec_id == *rerun + ".b");
  CHECK(out.enqueue.execs[0].dispatch.task.command == "echo '7'");  // shell-quoted
}
