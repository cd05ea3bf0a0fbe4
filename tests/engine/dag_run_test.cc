#include "engine/dag_run.h"

#include <catch2/catch.hpp>

#include "tests/engine/pipeline_builder.h"

using apollo11::AttemptOutcome;
using apollo11::kMicrosPerMilli;
using apollo11::RunStatus;
using apollo11::StatusCode;
using apollo11::engine::DagRun;
using apollo11::engine::DagRunOptions;
using apollo11::engine::Effects;
using apollo11::engine::testing::Harness;
using apollo11::engine::testing::PipelineBuilder;
using C = apollo11::dsl::DependencyCondition;
using S = apollo11::TaskState;
using O = AttemptOutcome;

TEST_CASE("a sequential chain runs one task after the other", "[dag_run]") {
  PipelineBuilder b;
  b.Task("fetch").Task("clean").After("fetch").Task("store").After("clean");
  Harness h(b);
  h.Start();
  CHECK(h.S("fetch") == S::kReady);
  CHECK(h.Reason("fetch", S::kReady) == "no dependencies");
  CHECK(h.run.attempt(h.T("fetch")) == 1);
  CHECK(h.S("clean") == S::kPending);
  CHECK(h.run.Explain(h.T("clean")) ==
        "clean is PENDING: waiting on 1 of 1 dependencies: fetch (READY)");
  REQUIRE(h.Finish("fetch", O::kSuccess).ok());
  CHECK(h.Reason("fetch", S::kRunning) == "dispatched to worker w1");
  CHECK(h.Reason("fetch", S::kSuccess) == "exited 0");
  CHECK(h.S("clean") == S::kReady);
  CHECK(h.Reason("clean", S::kReady) == "dependency met: fetch succeeded");
  CHECK(h.S("store") == S::kPending);
  REQUIRE(h.Finish("clean", O::kSuccess).ok());
  CHECK_FALSE(h.run.Finished());
  CHECK(h.run.Outcome() == RunStatus::kRunning);
  REQUIRE(h.Finish("store", O::kSuccess).ok());
  CHECK(h.run.Finished());
  CHECK(h.run.Outcome() == RunStatus::kSuccess);
  CHECK(h.run.count(S::kSuccess) == 3);
  CHECK(h.dispatched == std::vector<int>{0, 1, 2});
}

TEST_CASE("a parallel join waits for every upstream", "[dag_run]") {
  PipelineBuilder b;
  b.Task("a").Task("b").Task("c").Task("d").Task("join").After("a").After("b").After("c").After(
      "d");
  Harness h(b);
  h.Start();
  CHECK(h.run.count(S::kReady) == 4);
  for (const char* id : {"a", "b", "c"}) {
    REQUIRE(h.Finish(id, O::kSuccess).ok());
    CHECK(h.S("join") == S::kPending);
  }
  CHECK(h.run.Explain(h.T("join")) == "join is PENDING: waiting on 1 of 4 dependencies: d (READY)");
  REQUIRE(h.Finish("d", O::kSuccess).ok());
  CHECK(h.S("join") == S::kReady);
  CHECK(h.Reason("join", S::kReady) ==
        "dependencies met: a succeeded, b succeeded, c succeeded +1 more");
}

TEST_CASE("trigger any starts on the first met dependency while others still run", "[dag_run]") {
  PipelineBuilder b;
  b.Task("mirror1").Task("mirror2").Task("use").After("mirror1").After("mirror2").Any();
  Harness h(b);
  h.Start();
  REQUIRE(h.Finish("mirror2", O::kSuccess).ok());
  CHECK(h.S("use") == S::kReady);
  CHECK(h.Reason("use", S::kReady) == "dependency met (trigger: any): mirror2 succeeded");
  REQUIRE(h.Finish("use", O::kSuccess).ok());
  REQUIRE(h.Finish("mirror1", O::kFailed, 1).ok());
  CHECK(h.run.Finished());
  CHECK(h.run.Outcome() == RunStatus::kFailed);  // mirror1's failure has no handler
}

TEST_CASE("trigger any is canceled when every upstream fails unhandled", "[dag_run]") {
  PipelineBuilder b;
  b.Task("m1").Task("m2").Task("use").After("m1").After("m2").Any();
  Harness h(b);
  h.Start();
  REQUIRE(h.Finish("m1", O::kFailed, 1).ok());
  CHECK(h.S("use") == S::kPending);
  REQUIRE(h.Finish("m2", O::kFailed, 1).ok());
  CHECK(h.S("use") == S::kCanceled);
  CHECK(h.Reason("use", S::kCanceled) == "none of 2 dependencies met; upstream m1 failed");
}

TEST_CASE("a failure branch is taken and the success branch is skipped", "[dag_run]") {
  PipelineBuilder b;
  b.Task("load")
      .Task("on_ok")
      .After("load")
      .Task("on_fail")
      .After("load", C::kFailure)
      .Task("after_ok")
      .After("on_ok");
  Harness h(b);
  h.Start();
  REQUIRE(h.Finish("load", O::kFailed, 2).ok());
  CHECK(h.Reason("load", S::kFailed) == "attempt 1 failed (exit code 2)");
  CHECK(h.S("on_fail") == S::kReady);
  CHECK(h.Reason("on_fail", S::kReady) == "dependency met: load failed (on: failure)");
  CHECK(h.S("on_ok") == S::kSkipped);
  CHECK(h.Reason("on_ok", S::kSkipped) == "branch not taken: load failed (waits on success)");
  CHECK(h.S("after_ok") == S::kSkipped);
  CHECK(h.Reason("after_ok", S::kSkipped) == "upstream on_ok skipped");
  REQUIRE(h.Finish("on_fail", O::kSuccess).ok());
  CHECK(h.run.Finished());
  CHECK(h.run.Outcome() == RunStatus::kSuccess);  // handled failure
}

TEST_CASE("a failure branch is skipped when the upstream succeeds", "[dag_run]") {
  PipelineBuilder b;
  b.Task("load").Task("on_fail").After("load", C::kFailure).Task("cleanup").After("on_fail");
  Harness h(b);
  h.Start();
  REQUIRE(h.Finish("load", O::kSuccess).ok());
  CHECK(h.S("on_fail") == S::kSkipped);
  CHECK(h.Reason("on_fail", S::kSkipped) == "branch not taken: load succeeded (waits on failure)");
  CHECK(h.S("cleanup") == S::kSkipped);
  CHECK(h.run.Finished());
  CHECK(h.run.Outcome() == RunStatus::kSuccess);
}

TEST_CASE("on done always runs, whatever the upstream's end", "[dag_run]") {
  for (O outcome : {O::kSuccess, O::kFailed, O::kTimeout}) {
    PipelineBuilder b;
    b.Task("work").Task("report").After("work", C::kDone);
    Harness h(b);
    h.Start();
    REQUIRE(h.Finish("work", outcome, outcome == O::kSuccess ? 0 : 1).ok());
    CHECK(h.S("report") == S::kReady);
    REQUIRE(h.Finish("report", O::kSuccess).ok());
    CHECK(h.run.Outcome() == RunStatus::kSuccess);
  }
}

TEST_CASE("an unhandled failure cancels its transitive chain and fails the run", "[dag_run]") {
  PipelineBuilder b;
  b.Task("a").Task("b").After("a").Task("c").After("b").Task("d").After("c").Task("side");
  Harness h(b);
  h.Start();
  REQUIRE(h.Finish("a", O::kFailed, 1).ok());
  CHECK(h.S("b") == S::kCanceled);
  CHECK(h.Reason("b", S::kCanceled) == "upstream a failed");
  CHECK(h.S("c") == S::kCanceled);
  CHECK(h.Reason("c", S::kCanceled) == "upstream b canceled");
  CHECK(h.S("d") == S::kCanceled);
  CHECK(h.run.attempt(h.T("d")) == 0);
  CHECK_FALSE(h.run.Finished());
  REQUIRE(h.Finish("side", O::kSuccess).ok());
  CHECK(h.run.Finished());
  CHECK(h.run.Outcome() == RunStatus::kFailed);
  CHECK(h.run.count(S::kCanceled) == 3);
}

TEST_CASE("a timeout takes the on-timeout branch", "[dag_run]") {
  PipelineBuilder b;
  b.Task("slow")
      .Timeout(5000)
      .Task("fallback")
      .After("slow", C::kTimeout)
      .Task("next")
      .After("slow")
      .Task("on_fail")
      .After("slow", C::kFailure);
  Harness h(b);
  h.Start();
  REQUIRE(h.Finish("slow", O::kTimeout, -1).ok());
  CHECK(h.S("slow") == S::kTimeout);
  CHECK(h.Reason("slow", S::kTimeout) == "attempt 1 timed out after 5s");
  CHECK(h.S("fallback") == S::kReady);
  CHECK(h.S("next") == S::kSkipped);
  CHECK(h.Reason("next", S::kSkipped) == "branch not taken: slow timed out (waits on success)");
  CHECK(h.S("on_fail") == S::kSkipped);
  REQUIRE(h.Finish("fallback", O::kSuccess).ok());
  CHECK(h.run.Outcome() == RunStatus::kSuccess);
}

TEST_CASE("a timeout without a timeout handler cancels downstream and fails the run", "[dag_run]") {
  PipelineBuilder b;
  b.Task("slow").Task("on_fail").After("slow", C::kFailure);
  Harness h(b);
  h.Start();
  REQUIRE(h.Finish("slow", O::kTimeout).ok());
  CHECK(h.S("on_fail") == S::kCanceled);
  CHECK(h.Reason("on_fail", S::kCanceled) == "upstream slow timed out");
  CHECK(h.run.Outcome() == RunStatus::kFailed);
}

TEST_CASE("a failed attempt retries after its delay with a new attempt number", "[dag_run]") {
  PipelineBuilder b;
  b.Task("flaky").Retry(2, 1200).Task("next").After("flaky");
  Harness h(b);
  h.Start();
  const int f = h.T("flaky");
  REQUIRE(h.Finish("flaky", O::kFailed, 1).ok());
  CHECK(h.S("flaky") == S::kRetrying);
  CHECK(h.Reason("flaky", S::kRetrying) == "attempt 1 failed (exit code 1); retry 1 of 2 in 1.2s");
  REQUIRE(h.timers.size() == 1);
  CHECK(h.timers[0] == std::make_pair(f, h.now + 1200 * kMicrosPerMilli));
  CHECK(h.run.retries_used(f) == 1);
  CHECK(h.run.Explain(f).find("flaky is RETRYING: attempt 1 failed; retry 1 of 2 due at ") == 0);
  CHECK(h.run.active() == 1);  // keeps its concurrency slot

  REQUIRE(h.RetryDue(f).ok());
  CHECK(h.S("flaky") == S::kReady);
  CHECK(h.run.attempt(f) == 2);
  CHECK(h.RetryDue(f).code() == StatusCode::kNotFound);  // stale timer
  REQUIRE(h.Finish("flaky", O::kFailed, 1).ok());
  REQUIRE(h.RetryDue(f).ok());
  REQUIRE(h.Finish("flaky", O::kSuccess).ok());
  CHECK(h.run.attempt(f) == 3);
  CHECK(h.S("next") == S::kReady);
}

TEST_CASE("retries run out and the task ends FAILED", "[dag_run]") {
  PipelineBuilder b;
  b.Task("flaky").Retry(1, 10);
  Harness h(b);
  h.Start();
  REQUIRE(h.Finish("flaky", O::kFailed, 1).ok());
  REQUIRE(h.RetryDue(0).ok());
  REQUIRE(h.Finish("flaky", O::kFailed, 1).ok());
  CHECK(h.S("flaky") == S::kFailed);
  CHECK(h.Reason("flaky", S::kFailed) ==
        "attempt 2 failed (exit code 1); retries exhausted (1 of 1)");
  CHECK(h.run.Outcome() == RunStatus::kFailed);
}

TEST_CASE("a timeout retries like a failure", "[dag_run]") {
  PipelineBuilder b;
  b.Task("slow").Retry(1, 10, apollo11::dsl::Backoff::kFixed, 0, 0, {75});
  Harness h(b);
  h.Start();
  REQUIRE(h.Finish("slow", O::kTimeout, 137).ok());
  CHECK(h.S("slow") == S::kRetrying);
}

TEST_CASE("on_exit_codes limits retries to the listed exit codes", "[dag_run]") {
  PipelineBuilder b;
  b.Task("t").Retry(3, 10, apollo11::dsl::Backoff::kFixed, 0, 0, {75});
  Harness h(b);
  h.Start();
  REQUIRE(h.Finish("t", O::kFailed, 75).ok());
  CHECK(h.S("t") == S::kRetrying);
  REQUIRE(h.RetryDue(0).ok());
  REQUIRE(h.Finish("t", O::kFailed, 1).ok());
  CHECK(h.S("t") == S::kFailed);
  CHECK(h.Reason("t", S::kFailed) ==
        "attempt 2 failed (exit code 1); exit code 1 is not in on_exit_codes");
}

TEST_CASE("a non-retryable error is not retried", "[dag_run]") {
  PipelineBuilder b;
  b.Task("http").Retry(3, 10);
  Harness h(b);
  h.Start();
  REQUIRE(h.Finish("http", O::kFailed, 404, /*retryable=*/false).ok());
  CHECK(h.S("http") == S::kFailed);
  CHECK(h.Reason("http", S::kFailed).find("; not retryable") != std::string::npos);
}

TEST_CASE("a task without a retry policy is not retried", "[dag_run]") {
  PipelineBuilder b;
  b.Task("once");
  Harness h(b);
  h.Start();
  REQUIRE(h.Finish("once", O::kFailed, 1).ok());
  CHECK(h.S("once") == S::kFailed);
  CHECK(h.timers.empty());
}

TEST_CASE("stale results are refused and change nothing", "[dag_run]") {
  PipelineBuilder b;
  b.Task("t").Retry(1, 10);
  Harness h(b);
  h.Start();
  Effects fx;
  // Not yet RUNNING.
  CHECK(h.run.OnResult(0, 1, O::kSuccess, 0, true, "", h.now, 0.5, &fx).code() ==
        StatusCode::kNotFound);
  REQUIRE(h.Dispatch(0).ok());
  CHECK(h.run.OnDispatched(0, 1, "w2", h.now, &fx).code() == StatusCode::kNotFound);
  // Wrong attempt.
  auto s = h.run.OnResult(0, 7, O::kSuccess, 0, true, "", h.now, 0.5, &fx);
  CHECK(s.code() == StatusCode::kNotFound);
  CHECK(s.message().find("stale result for attempt 7 (current 1") == 0);
  CHECK(fx.transitions.empty());
  CHECK(h.S("t") == S::kRunning);
  // Attempt 1 fails, attempt 2 runs, then attempt 1's duplicate arrives.
  REQUIRE(h.Finish("t", O::kFailed, 1).ok());
  REQUIRE(h.RetryDue(0).ok());
  REQUIRE(h.Dispatch(0).ok());
  CHECK(h.run.OnResult(0, 1, O::kSuccess, 0, true, "", h.now, 0.5, &fx).code() ==
        StatusCode::kNotFound);
  CHECK(h.S("t") == S::kRunning);
  REQUIRE(h.Finish("t", O::kSuccess).ok());
  CHECK(h.run.OnResult(0, 2, O::kSuccess, 0, true, "", h.now, 0.5, &fx).code() ==
        StatusCode::kNotFound);
  CHECK(fx.transitions.empty());
  CHECK(h.run.OnResult(99, 1, O::kSuccess, 0, true, "", h.now, 0.5, &fx).code() ==
        StatusCode::kInvalidInput);
}

TEST_CASE("a lost worker requeues without using retries, up to max_requeues", "[dag_run]") {
  PipelineBuilder b;
  b.Task("t").Task("next").After("t");
  Harness h(b, DagRunOptions{.max_requeues = 2});
  h.Start();
  for (uint32_t n = 1; n <= 2; ++n) {
    REQUIRE(h.Dispatch(0).ok());
    REQUIRE(h.run.OnRequeue(0, n, "no heartbeat from worker w1 for 30s", &h.fx).ok());
    h.Absorb();
    CHECK(h.S("t") == S::kReady);
    CHECK(h.run.attempt(0) == n + 1);
    CHECK(h.run.requeues(0) == static_cast<int>(n));
    CHECK(h.run.retries_used(0) == 0);
  }
  CHECK(h.Reason("t", S::kReady) == "no heartbeat from worker w1 for 30s (requeue 2 of 2)");
  REQUIRE(h.Dispatch(0).ok());
  CHECK(h.run.OnRequeue(0, 1, "late", &h.fx).code() == StatusCode::kNotFound);
  REQUIRE(h.run.OnRequeue(0, 3, "worker w9 lost", &h.fx).ok());
  h.Absorb();
  CHECK(h.S("t") == S::kFailed);
  CHECK(h.Reason("t", S::kFailed) == "requeued 2 times after worker loss; then worker w9 lost");
  CHECK(h.S("next") == S::kCanceled);
  CHECK(h.run.Outcome() == RunStatus::kFailed);
}

TEST_CASE("cancel ends every unfinished task and kills running ones", "[dag_run]") {
  PipelineBuilder b;
  b.Task("done")
      .Task("running")
      .Task("retrying")
      .Retry(3, 1000)
      .Task("ready")
      .Task("waiting")
      .After("running");
  Harness h(b);
  h.Start();
  REQUIRE(h.Finish("done", O::kSuccess).ok());
  REQUIRE(h.Dispatch(h.T("running")).ok());
  REQUIRE(h.Finish("retrying", O::kFailed, 1).ok());
  h.run.Cancel("canceled by alice", &h.fx);
  h.Absorb();
  CHECK(h.run.Finished());
  CHECK(h.run.Outcome() == RunStatus::kCanceled);
  CHECK(h.S("done") == S::kSuccess);
  for (const char* id : {"running", "retrying", "ready", "waiting"}) {
    CHECK(h.S(id) == S::kCanceled);
    CHECK(h.Reason(id, S::kCanceled) == "canceled by alice");
  }
  CHECK(h.killed == std::vector<int>{h.T("running")});
  // The killed task's late result is stale.
  Effects fx;
  CHECK(h.run.OnResult(h.T("running"), 1, O::kSuccess, 0, true, "", h.now, 0.5, &fx).code() ==
        StatusCode::kNotFound);
  CHECK(h.run.OnRetryDue(h.T("retrying"), h.now, &fx).code() == StatusCode::kNotFound);
}

TEST_CASE("promotion takes higher priority first, then older tasks", "[dag_run]") {
  PipelineBuilder b;
  b.Task("low").Priority(-1).Task("a").Task("urgent").Priority(10).Task("b").Task("high").Priority(
      5);
  Harness h(b);
  h.run.Start(h.now, &h.fx);
  h.Absorb();
  for (int i = 0; i < h.run.size(); ++i) CHECK(h.run.IsEligible(i));
  CHECK(h.run.PromoteEligible(2, &h.fx) == 2);
  h.Absorb();
  CHECK(h.dispatched == std::vector<int>{h.T("urgent"), h.T("high")});
  h.Promote();
  CHECK(h.dispatched ==
        std::vector<int>{h.T("urgent"), h.T("high"), h.T("a"), h.T("b"), h.T("low")});
}

TEST_CASE("the backlog budget holds eligible tasks PENDING", "[dag_run]") {
  PipelineBuilder b;
  for (int i = 0; i < 10; ++i) b.Task("t" + std::to_string(i));
  Harness h(b);
  h.run.Start(h.now, &h.fx);
  CHECK(h.run.PromoteEligible(0, &h.fx) == 0);
  CHECK(h.run.PromoteEligible(3, &h.fx) == 3);
  h.Absorb();
  CHECK(h.run.count(S::kReady) == 3);
  CHECK(h.run.count(S::kPending) == 7);
  CHECK(h.run.IsEligible(h.T("t5")));
  CHECK(h.run.Explain(h.T("t5")) == "t5 is eligible, waiting for room in the dispatch backlog");
  CHECK(h.run.PromoteEligible(100, &h.fx) == 7);
}

TEST_CASE("the pipeline's concurrency caps ready, running and retrying tasks", "[dag_run]") {
  PipelineBuilder b;
  b.Concurrency(2);
  for (int i = 0; i < 5; ++i) b.Task("t" + std::to_string(i)).Retry(1, 10);
  Harness h(b);
  h.Start();
  CHECK(h.run.count(S::kReady) == 2);
  CHECK(h.run.Explain(h.T("t2")) ==
        "t2 is eligible, held by the run's concurrency limit (2 of 2 active)");
  REQUIRE(h.Finish("t0", O::kFailed, 1).ok());  // RETRYING keeps its slot
  CHECK(h.run.active() == 2);
  CHECK(h.run.count(S::kReady) == 1);
  REQUIRE(h.Finish("t1", O::kSuccess).ok());
  CHECK(h.run.count(S::kReady) == 1);  // t2 took t1's slot
  CHECK(h.S("t2") == S::kReady);
  REQUIRE(h.RetryDue(h.T("t0")).ok());
  CHECK(h.run.active() == 2);
  h.SucceedAll();
  CHECK(h.run.Finished());
  CHECK(h.run.Outcome() == RunStatus::kSuccess);
}

TEST_CASE("an already-done precheck counts as success, and success reasons name the code",
          "[dag_run]") {
  PipelineBuilder b;
  b.Task("t").Task("u").After("t");
  Harness h(b);
  h.Start();
  REQUIRE(h.Finish("t", O::kAlreadyDone, 3).ok());
  CHECK(h.Reason("t", S::kSuccess) == "precheck says already done");
  REQUIRE(h.Dispatch(h.T("u")).ok());
  REQUIRE(h.run.OnResult(h.T("u"), 1, O::kSuccess, 200, true, "", h.now, 0.5, &h.fx).ok());
  h.Absorb();
  CHECK(h.Reason("u", S::kSuccess) == "succeeded (code 200)");
}

TEST_CASE("explain says what a task waits for", "[dag_run]") {
  PipelineBuilder b;
  b.Task("a")
      .Task("b")
      .Task("c")
      .Task("d")
      .Task("e")
      .Task("j")
      .After("a")
      .After("b", C::kFailure)
      .After("c")
      .After("d")
      .After("e");
  Harness h(b);
  CHECK(h.run.Explain(h.T("j")) == "j is PENDING: the run has not started");
  h.Start();
  REQUIRE(h.Finish("a", O::kSuccess).ok());
  CHECK(h.run.Explain(h.T("j")) ==
        "j is PENDING: waiting on 4 of 5 dependencies: b (READY, on: failure), c (READY), "
        "d (READY) +1 more");
  CHECK(h.run.Explain(h.T("a")) == "a is SUCCESS after 1 attempt");
  CHECK(h.run.Explain(h.T("b")) == "b is READY (attempt 1), waiting for a worker");
  REQUIRE(h.Finish("b", O::kSuccess).ok());
  CHECK(h.run.Explain(h.T("j")) == "j is SKIPPED (never ran)");
  CHECK(h.run.Explain(99) == "no such task");
}

TEST_CASE("restore and resume reproduce the same eligibility and effects", "[dag_run]") {
  PipelineBuilder b;
  b.Task("a")
      .Task("b")
      .After("a")
      .Task("c")
      .After("a", C::kFailure)
      .Task("d")
      .After("b")
      .Task("e")
      .Retry(2, 1000)
      .Task("f")
      .Task("g")
      .After("f")
      .Task("h")
      .After("c");
  Harness h(b);
  h.Start();
  REQUIRE(h.Finish("a", O::kSuccess).ok());    // b READY, c+h SKIPPED
  REQUIRE(h.Finish("e", O::kFailed, 1).ok());  // e RETRYING
  REQUIRE(h.Dispatch(h.T("f")).ok());          // f RUNNING
  const auto retry_due = h.timers.at(0).second;

  DagRun copy(b.Build());
  for (int i = 0; i < h.run.size(); ++i) {
    REQUIRE(copy.Restore(i, h.run.state(i), h.run.attempt(i), h.run.retries_used(i),
                         h.run.requeues(i), h.run.state(i) == S::kRetrying ? retry_due : 0)
                .ok());
  }
  Effects fx;
  REQUIRE(copy.Resume(h.now, &fx).ok());
  CHECK(fx.transitions.empty());
  CHECK(fx.dispatch == std::vector<int>{h.T("b")});
  REQUIRE(fx.retry_timers.size() == 1);
  CHECK(fx.retry_timers[0] == std::make_pair(h.T("e"), retry_due));
  for (int i = 0; i < h.run.size(); ++i) {
    INFO(h.run.graph().id(i));
    CHECK(copy.state(i) == h.run.state(i));
    CHECK(copy.IsEligible(i) == h.run.IsEligible(i));
    CHECK(copy.Explain(i) == h.run.Explain(i));
  }
  for (int s = 0; s < apollo11::kTaskStateCount; ++s) {
    CHECK(copy.count(static_cast<S>(s)) == h.run.count(static_cast<S>(s)));
  }
  CHECK(copy.active() == h.run.active());
  // Both continue identically.
  Effects fx2;
  REQUIRE(copy.OnDispatched(h.T("f"), 1, "w1", h.now, &fx2).code() == StatusCode::kNotFound);
  REQUIRE(copy.OnResult(h.T("f"), 1, O::kSuccess, 0, true, "", h.now, 0.5, &fx2).ok());
  CHECK(copy.IsEligible(h.T("g")));
}

TEST_CASE("resume settles a task whose fate a crash left open", "[dag_run]") {
  PipelineBuilder b;
  b.Task("a").Task("b").After("a").Task("c").After("b");
  auto g = b.Build();
  DagRun run(g);
  REQUIRE(run.Restore(0, S::kFailed, 1, 0, 0).ok());
  Effects fx;
  REQUIRE(run.Resume(0, &fx).ok());
  CHECK(run.state(1) == S::kCanceled);
  CHECK(run.state(2) == S::kCanceled);
  REQUIRE(fx.transitions.size() == 2);
  CHECK(fx.transitions[0].reason == "upstream a failed");
  CHECK(run.Finished());
  CHECK(run.Outcome() == RunStatus::kFailed);
  CHECK(run.Resume(0, &fx).code() == StatusCode::kInternal);
  CHECK(run.Restore(0, S::kRunning, 0, 0, 0).code() == StatusCode::kInternal);
}

TEST_CASE("restore refuses impossible records", "[dag_run]") {
  PipelineBuilder b;
  b.Task("a");
  DagRun run(b.Build());
  CHECK(run.Restore(0, S::kRunning, 0, 0, 0).code() == StatusCode::kInvalidInput);
  CHECK(run.Restore(5, S::kPending, 0, 0, 0).code() == StatusCode::kInvalidInput);
  CHECK(run.Restore(0, S::kPending, 0, -1, 0).code() == StatusCode::kInvalidInput);
}
