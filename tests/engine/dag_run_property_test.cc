// Property test: random DAGs with random conditions, triggers, retry policies
// and outcomes, driven to completion in a random order. Whatever happens, the
// run must finish with every task final, only legal transitions, consistent
// counts, and each task's end explained by the rules applied independently.

#include <catch2/catch.hpp>
#include <random>

#include "engine/dag_run.h"
#include "tests/engine/pipeline_builder.h"

using apollo11::AttemptOutcome;
using apollo11::IsFinal;
using apollo11::RunStatus;
using apollo11::engine::DagRunOptions;
using apollo11::engine::EdgeMet;
using apollo11::engine::RunGraph;
using apollo11::engine::testing::Harness;
using apollo11::engine::testing::PipelineBuilder;
using C = apollo11::dsl::DependencyCondition;
using S = apollo11::TaskState;

namespace {

constexpr int kTasks = 50;

PipelineBuilder RandomPipeline(std::mt19937& rng) {
  auto pick = [&rng](int n) { return static_cast<int>(rng() % n); };
  PipelineBuilder b;
  if (pick(3) == 0) b.Concurrency(1 + pick(5));
  for (int i = 0; i < kTasks; ++i) {
    b.Task("t" + std::to_string(i));
    const int deps = i == 0 ? 0 : pick(4);
    for (int d = 0; d < deps; ++d) {
      const int r = pick(20);
      const C on = r < 12 ? C::kSuccess : r < 15 ? C::kFailure : r < 17 ? C::kTimeout : C::kDone;
      b.After("t" + std::to_string(pick(i)), on);  // duplicates allowed
    }
    if (pick(5) == 0) b.Any();
    if (pick(3) == 0) {
      std::vector<int> codes;
      if (pick(3) == 0) codes = {75};
      b.Retry(pick(3), 10 + pick(1000),
              pick(2) ? apollo11::dsl::Backoff::kExponential : apollo11::dsl::Backoff::kFixed,
              pick(2) ? 0 : 500, pick(2) ? 0.2 : 0.0, codes);
    }
    b.Priority(pick(3));
  }
  return b;
}

bool Cancels(const RunGraph& g, const Harness& h, int u) {
  const S s = h.run.state(u);
  return s == S::kCanceled || (s == S::kFailed && !g.FailureHandled(u)) ||
         (s == S::kTimeout && !g.TimeoutHandled(u));
}

}  // namespace

TEST_CASE("random DAGs always finish with every task final and every end explained",
          "[dag_run][property]") {
  std::mt19937 rng(20240611);
  auto pick = [&rng](int n) { return static_cast<int>(rng() % n); };
  for (int iteration = 0; iteration < 500; ++iteration) {
    INFO("iteration " << iteration);
    PipelineBuilder b = RandomPipeline(rng);
    Harness h(b, DagRunOptions{.max_requeues = 1 + pick(2)});
    const RunGraph& g = h.run.graph();
    const bool will_cancel = pick(10) == 0;
    bool canceled = false;

    h.run.Start(h.now, &h.fx);
    h.Absorb();
    for (int steps = 0; !h.run.Finished(); ++steps) {
      REQUIRE(steps < 100000);
      h.now += pick(1000);
      if (will_cancel && !canceled && pick(40) == 0) {
        h.run.Cancel("canceled by test", &h.fx);
        h.Absorb();
        canceled = true;
        break;
      }
      h.run.PromoteEligible(pick(4), &h.fx);
      h.Absorb();
      std::vector<int> actionable;
      for (int i = 0; i < h.run.size(); ++i) {
        const S s = h.run.state(i);
        if (s == S::kReady || s == S::kRunning || s == S::kRetrying) actionable.push_back(i);
      }
      if (actionable.empty()) {
        // Only eligible PENDING tasks may remain, waiting for budget.
        REQUIRE(h.run.PromoteEligible(INT_MAX, &h.fx) > 0);
        h.Absorb();
        continue;
      }
      const int task = actionable[pick(static_cast<int>(actionable.size()))];
      const uint32_t attempt = h.run.attempt(task);
      switch (h.run.state(task)) {
        case S::kReady:
          REQUIRE(h.Dispatch(task).ok());
          break;
        case S::kRetrying:
          REQUIRE(h.RetryDue(task).ok());
          break;
        default: {  // RUNNING
          if (pick(20) == 0) {
            REQUIRE(h.run.OnRequeue(task, attempt, "worker lost", &h.fx).ok());
            h.Absorb();
            break;
          }
          if (pick(15) == 0) {  // a duplicate of an older attempt is refused
            CHECK_FALSE(h.run
                            .OnResult(task, attempt + 1, AttemptOutcome::kSuccess, 0, true, "",
                                      h.now, 0.5, &h.fx)
                            .ok());
            CHECK(h.fx.transitions.empty());
          }
          const int r = pick(20);
          const AttemptOutcome o = r < 12   ? AttemptOutcome::kSuccess
                                   : r < 17 ? AttemptOutcome::kFailed
                                            : AttemptOutcome::kTimeout;
          const int codes[] = {0, 1, 2, 75};
          REQUIRE(h.run
                      .OnResult(task, attempt, o,
                                o == AttemptOutcome::kSuccess ? 0 : codes[1 + pick(3)],
                                pick(10) != 0, "boom", h.now, pick(1000) / 1000.0, &h.fx)
                      .ok());
          h.Absorb();
        }
      }
    }

    // Every task final; counts consistent with the states.
    REQUIRE(h.run.Finished());
    int counts[apollo11::kTaskStateCount] = {};
    for (int i = 0; i < h.run.size(); ++i) {
      CHECK(IsFinal(h.run.state(i)));
      CHECK(h.shadow[i] == h.run.state(i));
      ++counts[static_cast<int>(h.run.state(i))];
    }
    for (int s = 0; s < apollo11::kTaskStateCount; ++s) {
      CHECK(counts[s] == h.run.count(static_cast<S>(s)));
    }
    CHECK(h.run.active() == 0);

    // Attempts: one per READY, starting at 1.
    std::vector<uint32_t> readies(h.run.size(), 0);
    for (const auto& t : h.log) {
      if (t.to == S::kReady) CHECK(t.attempt == ++readies[t.task]);
    }
    for (int i = 0; i < h.run.size(); ++i) CHECK(h.run.attempt(i) == readies[i]);

    // Each task's end follows from its upstreams' ends.
    bool any_unhandled = false;
    for (int v = 0; v < h.run.size(); ++v) {
      INFO("task " << g.id(v) << " ended " << ToString(h.run.state(v)));
      int in = g.InDegree(v), met = 0, unmet_cancel = 0, unmet_other = 0;
      for (const auto& e : g.Upstream(v)) {
        if (EdgeMet(e.on, h.run.state(e.task))) {
          ++met;
        } else if (Cancels(g, h, e.task)) {
          ++unmet_cancel;
        } else {
          ++unmet_other;
        }
      }
      const bool all = g.task(v).trigger == apollo11::dsl::Trigger::kAll;
      const bool satisfiable = in == 0 || (all ? met == in : met > 0);
      if (Cancels(g, h, v)) any_unhandled = true;
      if (h.run.attempt(v) > 0) {
        CHECK(satisfiable);  // it ran, so it was allowed to
      } else if (!canceled) {
        CHECK_FALSE(satisfiable);
        if (all) {
          if (unmet_other == 0) CHECK(h.run.state(v) == S::kCanceled);
          if (unmet_cancel == 0) CHECK(h.run.state(v) == S::kSkipped);
        } else {
          CHECK(h.run.state(v) == (unmet_cancel > 0 ? S::kCanceled : S::kSkipped));
        }
      }
    }
    CHECK(h.run.Outcome() == (canceled        ? RunStatus::kCanceled
                              : any_unhandled ? RunStatus::kFailed
                                              : RunStatus::kSuccess));
  }
}
