// foreach fan-out in the DAG engine: expansion, max_parallel, an empty list,
// the cap, a failing instance, cancel and recovery.

#include <algorithm>
#include <catch2/catch.hpp>

#include "engine/dag_run.h"
#include "tests/engine/pipeline_builder.h"

using apollo11::AttemptOutcome;
using apollo11::RunStatus;
using apollo11::StatusCode;
using apollo11::engine::DagRun;
using apollo11::engine::DagRunOptions;
using apollo11::engine::Effects;
using apollo11::engine::testing::Harness;
using apollo11::engine::testing::PipelineBuilder;
using S = apollo11::TaskState;
using O = AttemptOutcome;

namespace {

// gen -> work (foreach gen, max_parallel) -> after.
PipelineBuilder FanOut(int max_parallel) {
  PipelineBuilder b;
  b.Task("gen").Task("work").Foreach("gen", max_parallel).Task("after").After("work");
  return b;
}

int Active(const Harness& h, int task) {
  int active = 0;
  for (int i = 0; i < h.run.InstanceCount(task); ++i) {
    const S s = h.run.state(h.run.InstanceSlot(task, i));
    if (s == S::kReady || s == S::kRunning || s == S::kRetrying) ++active;
  }
  return active;
}

}  // namespace

TEST_CASE("a foreach task goes READY for expansion, not for dispatch", "[dag_run][foreach]") {
  Harness h(FanOut(0));
  h.Start();
  REQUIRE(h.Finish("gen", O::kSuccess).ok());
  CHECK(h.S("work") == S::kReady);
  CHECK(h.expand == std::vector<int>{h.T("work")});
  CHECK(h.dispatched == std::vector<int>{h.T("gen")});
}

TEST_CASE("foreach expands into instances that run and end their task", "[dag_run][foreach]") {
  Harness h(FanOut(0));
  h.Start();
  REQUIRE(h.Finish("gen", O::kSuccess).ok());
  const int work = h.T("work");
  REQUIRE(h.run.Expand(work, 3, "gen's output lines", &h.fx).ok());
  h.Absorb();
  CHECK(h.S("work") == S::kRunning);
  CHECK(h.Reason("work", S::kRunning) ==
        "foreach over gen's output lines: expanded into 3 instances");
  REQUIRE(h.run.InstanceCount(work) == 3);
  CHECK(h.run.Id(h.run.InstanceSlot(work, 2)) == "work[2]");
  CHECK(h.run.ParentOf(h.run.InstanceSlot(work, 2)) == work);
  CHECK(h.run.InstanceIndex(h.run.InstanceSlot(work, 2)) == 2);
  CHECK(Active(h, work) == 3);
  // A stray result for the task itself changes nothing.
  CHECK(h.run.OnResult(work, 1, O::kSuccess, 0, true, "", h.now, 0.5, &h.fx).code() ==
        StatusCode::kNotFound);
  for (int i = 0; i < 3; ++i) {
    CHECK(h.S("after") == S::kPending);
    REQUIRE(h.FinishTask(h.run.InstanceSlot(work, i), O::kSuccess).ok());
  }
  CHECK(h.S("work") == S::kSuccess);
  CHECK(h.Reason("work", S::kSuccess) == "all 3 foreach instances succeeded");
  CHECK(h.S("after") == S::kReady);
  REQUIRE(h.Finish("after", O::kSuccess).ok());
  CHECK(h.run.Finished());
  CHECK(h.run.Outcome() == RunStatus::kSuccess);
  CHECK(h.run.count(S::kSuccess) == 6);
}

TEST_CASE("max_parallel caps the instances active at once", "[dag_run][foreach]") {
  Harness h(FanOut(2));
  h.Start();
  REQUIRE(h.Finish("gen", O::kSuccess).ok());
  const int work = h.T("work");
  REQUIRE(h.run.Expand(work, 5, "gen's output lines", &h.fx).ok());
  h.Absorb();
  CHECK(Active(h, work) == 2);
  CHECK(h.run.Explain(h.run.InstanceSlot(work, 4)) ==
        "work[4] is PENDING: waiting for one of work's max_parallel (2) slots");
  int steps = 0;
  while (h.S("work") == S::kRunning && steps++ < 20) {
    for (int i = 0; i < 5; ++i) {
      const int slot = h.run.InstanceSlot(work, i);
      if (h.run.state(slot) == S::kReady) {
        REQUIRE(h.FinishTask(slot, O::kSuccess).ok());
        CHECK(Active(h, work) <= 2);
        break;
      }
    }
  }
  CHECK(h.S("work") == S::kSuccess);
  // A retrying instance keeps its slot.
  Harness r([] {
    PipelineBuilder b;
    b.Task("gen").Task("work").Foreach("gen", 1).Retry(1, 1000);
    return b;
  }());
  r.Start();
  REQUIRE(r.Finish("gen", O::kSuccess).ok());
  const int w = r.T("work");
  REQUIRE(r.run.Expand(w, 2, "gen's output lines", &r.fx).ok());
  r.Absorb();
  REQUIRE(r.FinishTask(r.run.InstanceSlot(w, 0), O::kFailed, 1).ok());
  CHECK(r.run.state(r.run.InstanceSlot(w, 0)) == S::kRetrying);
  CHECK(r.run.state(r.run.InstanceSlot(w, 1)) == S::kPending);
  REQUIRE(r.RetryDue(r.run.InstanceSlot(w, 0)).ok());
  REQUIRE(r.FinishTask(r.run.InstanceSlot(w, 0), O::kSuccess).ok());
  CHECK(r.run.state(r.run.InstanceSlot(w, 1)) == S::kReady);
}

TEST_CASE("an empty foreach list ends the task SKIPPED with a reason", "[dag_run][foreach]") {
  Harness h(FanOut(0));
  h.Start();
  REQUIRE(h.Finish("gen", O::kSuccess).ok());
  REQUIRE(h.run.Expand(h.T("work"), 0, "gen's output lines", &h.fx).ok());
  h.Absorb();
  h.Promote();
  CHECK(h.S("work") == S::kSkipped);
  CHECK(h.Reason("work", S::kSkipped) == "foreach over gen's output lines: no items");
  CHECK(h.S("after") == S::kSkipped);
  CHECK(h.run.Finished());
  CHECK(h.run.Outcome() == RunStatus::kSuccess);
}

TEST_CASE("a foreach over the items cap fails the task clearly", "[dag_run][foreach]") {
  DagRunOptions options;
  options.max_foreach_items = 10;
  Harness h(FanOut(0), options);
  h.Start();
  REQUIRE(h.Finish("gen", O::kSuccess).ok());
  REQUIRE(h.run.Expand(h.T("work"), 11, "gen's output lines", &h.fx).ok());
  h.Absorb();
  CHECK(h.S("work") == S::kFailed);
  CHECK(h.Reason("work", S::kFailed) ==
        "foreach over gen's output lines gave 11 items, over the cap of 10 (the coordinator's "
        "--max-foreach-items)");
  CHECK(h.run.InstanceCount(h.T("work")) == 0);
  CHECK(h.S("after") == S::kCanceled);
  CHECK(h.run.Outcome() == RunStatus::kFailed);
}

TEST_CASE("one failed instance fails its task after the others end", "[dag_run][foreach]") {
  PipelineBuilder b;
  b.Task("gen").Task("work").Foreach("gen").Task("after").After("work").Task("cleanup").After(
      "work", apollo11::dsl::DependencyCondition::kDone);
  Harness h(b);
  h.Start();
  REQUIRE(h.Finish("gen", O::kSuccess).ok());
  const int work = h.T("work");
  REQUIRE(h.run.Expand(work, 3, "gen's output lines", &h.fx).ok());
  h.Absorb();
  REQUIRE(h.FinishTask(h.run.InstanceSlot(work, 1), O::kFailed, 2).ok());
  CHECK(h.S("work") == S::kRunning);  // the others still run
  REQUIRE(h.FinishTask(h.run.InstanceSlot(work, 0), O::kSuccess).ok());
  REQUIRE(h.FinishTask(h.run.InstanceSlot(work, 2), O::kSuccess).ok());
  CHECK(h.S("work") == S::kFailed);
  CHECK(h.Reason("work", S::kFailed) == "1 of 3 foreach instances did not succeed: work[1] FAILED");
  CHECK(h.S("after") == S::kSkipped);
  CHECK(h.S("cleanup") == S::kReady);
}

TEST_CASE("trigger all waits for every instance, trigger any for the first success",
          "[dag_run][foreach]") {
  PipelineBuilder b;
  b.Task("gen").Task("slow").Task("work").Foreach("gen");
  b.Task("all").After("work").Task("any").After("work").After("slow").Any();
  Harness h(b);
  h.Start();
  REQUIRE(h.Finish("gen", O::kSuccess).ok());
  const int work = h.T("work");
  REQUIRE(h.run.Expand(work, 3, "gen's output lines", &h.fx).ok());
  h.Absorb();
  REQUIRE(h.FinishTask(h.run.InstanceSlot(work, 0), O::kFailed, 1).ok());
  CHECK(h.S("any") == S::kPending);  // a failure is not the success it waits on
  REQUIRE(h.FinishTask(h.run.InstanceSlot(work, 1), O::kSuccess).ok());
  CHECK(h.S("any") == S::kReady);
  CHECK(h.Reason("any", S::kReady) ==
        "dependency met (trigger: any): work has an instance that succeeded");
  CHECK(h.S("all") == S::kPending);
  REQUIRE(h.FinishTask(h.run.InstanceSlot(work, 2), O::kSuccess).ok());
  CHECK(h.S("work") == S::kFailed);
  CHECK(h.S("all") == S::kCanceled);
  CHECK(h.S("any") == S::kReady);  // already started: the task's end changes nothing
}

TEST_CASE("cancel kills running instances, not their task", "[dag_run][foreach]") {
  Harness h(FanOut(0));
  h.Start();
  REQUIRE(h.Finish("gen", O::kSuccess).ok());
  const int work = h.T("work");
  REQUIRE(h.run.Expand(work, 2, "gen's output lines", &h.fx).ok());
  h.Absorb();
  REQUIRE(h.Dispatch(h.run.InstanceSlot(work, 0)).ok());
  h.run.Cancel("canceled by test", &h.fx);
  h.Absorb();
  CHECK(h.killed == std::vector<int>{h.run.InstanceSlot(work, 0)});
  CHECK(h.run.Finished());
  CHECK(h.run.Outcome() == RunStatus::kCanceled);
}

TEST_CASE("recovery rebuilds instances and never restarts a finished one", "[dag_run][foreach]") {
  auto graph = FanOut(2).Build();
  DagRun run(graph);
  const int gen = graph->Find("gen"), work = graph->Find("work");
  REQUIRE(run.Restore(gen, S::kSuccess, 1, 0, 0).ok());
  REQUIRE(run.Restore(work, S::kRunning, 1, 0, 0).ok());
  REQUIRE(run.RestoreExpansion(work, 4).ok());
  REQUIRE(run.Restore(run.InstanceSlot(work, 0), S::kSuccess, 1, 0, 0).ok());
  REQUIRE(run.Restore(run.InstanceSlot(work, 1), S::kRunning, 1, 0, 0).ok());
  Effects fx;
  REQUIRE(run.Resume(0, &fx).ok());
  // work[1] still runs (its worker claims it); one slot of two is free: work[2].
  CHECK(fx.dispatch == std::vector<int>{run.InstanceSlot(work, 2)});
  CHECK(fx.expand.empty());
  CHECK(run.state(run.InstanceSlot(work, 0)) == S::kSuccess);
  CHECK(run.state(run.InstanceSlot(work, 3)) == S::kPending);
  // A READY foreach task whose expansion was never journaled expands again.
  DagRun again(graph);
  REQUIRE(again.Restore(gen, S::kSuccess, 1, 0, 0).ok());
  REQUIRE(again.Restore(work, S::kReady, 1, 0, 0).ok());
  Effects fx2;
  REQUIRE(again.Resume(0, &fx2).ok());
  CHECK(fx2.expand == std::vector<int>{work});
  CHECK(fx2.dispatch.empty());
}

TEST_CASE("a rerun's expansion reuses the items given, under max_parallel and after recovery",
          "[dag_run][foreach][rerun]") {
  Harness h(FanOut(1));
  h.Start();
  REQUIRE(h.Finish("gen", O::kSuccess).ok());
  const int work = h.T("work");
  // Items 1 and 3 of 4 succeeded in the run being rerun.
  REQUIRE(h.run
              .Expand(work, 4, "gen's output lines", &h.fx, {false, true, false, true},
                      "reused from r0")
              .ok());
  h.Absorb();
  const auto slot = [&](int i) { return h.run.InstanceSlot(work, i); };
  CHECK(h.run.state(slot(1)) == S::kSuccess);
  CHECK(h.run.attempt(slot(1)) == 0);
  const auto reused_log = std::find_if(h.log.begin(), h.log.end(), [&](const auto& t) {
    return t.task == slot(1) && t.to == S::kSuccess;
  });
  REQUIRE(reused_log != h.log.end());
  CHECK(reused_log->reason == "reused from r0");
  CHECK(reused_log->from == S::kPending);
  CHECK(h.run.state(slot(3)) == S::kSuccess);
  // max_parallel 1 holds: one of the two to run at a time, reused ones
  // taking no slot.
  CHECK(Active(h, work) == 1);
  CHECK(h.run.state(slot(0)) == S::kReady);
  CHECK(h.run.state(slot(2)) == S::kPending);

  // A coordinator restart here: the journal holds what the run did so far.
  auto graph = FanOut(1).Build();
  DagRun back(graph);
  REQUIRE(back.Restore(graph->Find("gen"), S::kSuccess, 1, 0, 0).ok());
  REQUIRE(back.Restore(work, S::kRunning, 1, 0, 0).ok());
  REQUIRE(back.RestoreExpansion(work, 4).ok());
  REQUIRE(back.Restore(back.InstanceSlot(work, 0), S::kRunning, 1, 0, 0).ok());
  REQUIRE(back.Restore(back.InstanceSlot(work, 1), S::kSuccess, 0, 0, 0).ok());
  REQUIRE(back.Restore(back.InstanceSlot(work, 3), S::kSuccess, 0, 0, 0).ok());
  Effects fx;
  REQUIRE(back.Resume(0, &fx).ok());
  CHECK(fx.dispatch.empty());  // work[0] still holds the one slot
  REQUIRE(back.OnResult(back.InstanceSlot(work, 0), 1, O::kSuccess, 0, true, "", 0, 0.5, &fx).ok());
  CHECK(fx.dispatch == std::vector<int>{back.InstanceSlot(work, 2)});
  CHECK(back.state(back.InstanceSlot(work, 3)) == S::kSuccess);

  // Here: the other item finishes; the task succeeds on the reused two.
  REQUIRE(h.FinishTask(slot(0), O::kSuccess).ok());
  CHECK(h.run.state(slot(2)) == S::kReady);
  CHECK(Active(h, work) == 1);
  REQUIRE(h.FinishTask(slot(2), O::kSuccess).ok());
  CHECK(h.S("work") == S::kSuccess);

  // Every item reused: the task ends at once.
  Harness all(FanOut(0));
  all.Start();
  REQUIRE(all.Finish("gen", O::kSuccess).ok());
  REQUIRE(
      all.run.Expand(all.T("work"), 2, "gen's output lines", &all.fx, {true, true}, "reused").ok());
  all.Absorb();
  CHECK(all.S("work") == S::kSuccess);
  all.Promote();
  CHECK(all.S("after") == S::kReady);
}
