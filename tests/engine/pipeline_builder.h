#pragma once
// Test helpers: build pipelines in C++ (no YAML parser needed) and drive a
// DagRun step by step while checking every emitted transition against a
// shadow copy of the states.

#include <catch2/catch.hpp>
#include <climits>
#include <memory>
#include <string>
#include <vector>

#include "dsl/pipeline.h"
#include "engine/dag_run.h"
#include "engine/run_graph.h"

namespace apollo11::engine::testing {

using dsl::DependencyCondition;

// Fluent pipeline construction: Task("b").After("a", kFailure).Any().
class PipelineBuilder {
 public:
  PipelineBuilder& Task(const std::string& id) {
    spec_.tasks.emplace_back();
    spec_.tasks.back().id = id;
    return *this;
  }
  PipelineBuilder& After(const std::string& up,
                         DependencyCondition on = DependencyCondition::kSuccess) {
    dsl::Dependency d;
    d.task = up;
    d.on = on;
    spec_.tasks.back().depends_on.push_back(d);
    return *this;
  }
  PipelineBuilder& Any() {
    spec_.tasks.back().trigger = dsl::Trigger::kAny;
    return *this;
  }
  PipelineBuilder& Priority(int p) {
    spec_.tasks.back().priority = p;
    return *this;
  }
  PipelineBuilder& Timeout(int64_t ms) {
    spec_.tasks.back().timeout = Millis(ms);
    return *this;
  }
  PipelineBuilder& Retry(int max_retries, int64_t delay_ms,
                         dsl::Backoff backoff = dsl::Backoff::kFixed, int64_t max_delay_ms = 0,
                         double jitter = 0.0, std::vector<int> on_exit_codes = {}) {
    dsl::RetryPolicy p;
    p.max_retries = max_retries;
    p.delay = Millis(delay_ms);
    p.backoff = backoff;
    p.max_delay = Millis(max_delay_ms);
    p.jitter = jitter;
    p.on_exit_codes = std::move(on_exit_codes);
    spec_.tasks.back().retry = p;
    return *this;
  }
  // Fans the last task out over `up` (also made a dependency).
  PipelineBuilder& Foreach(const std::string& up, int max_parallel = 0) {
    After(up);
    spec_.tasks.back().foreach = up;
    spec_.tasks.back().max_parallel = max_parallel;
    return *this;
  }
  PipelineBuilder& Concurrency(int c) {
    spec_.concurrency = c;
    return *this;
  }
  const dsl::PipelineSpec& spec() const { return spec_; }
  std::shared_ptr<const RunGraph> Build() const {
    auto g = RunGraph::Compile(spec_);
    REQUIRE(g.ok());
    return std::make_shared<const RunGraph>(std::move(g).value());
  }

 private:
  dsl::PipelineSpec spec_;
};

// Drives one DagRun; every transition it emits is checked (legal edge, `from`
// equal to the shadow state) and kept in `log`.
class Harness {
 public:
  explicit Harness(std::shared_ptr<const RunGraph> graph, DagRunOptions options = {})
      : run(std::move(graph), options), shadow(run.size(), TaskState::kPending) {}
  explicit Harness(const PipelineBuilder& b, DagRunOptions options = {})
      : Harness(b.Build(), options) {}

  int T(const std::string& id) const {
    int i = run.graph().Find(id);
    REQUIRE(i >= 0);
    return i;
  }
  TaskState S(const std::string& id) const { return run.state(T(id)); }
  // The reason of the last transition of `id` into `to`, or "".
  std::string Reason(const std::string& id, TaskState to) const {
    for (auto it = log.rbegin(); it != log.rend(); ++it) {
      if (it->task == T(id) && it->to == to) return it->reason;
    }
    return "";
  }

  void Start() {
    run.Start(now, &fx);
    Absorb();
    Promote();
  }
  // A rerun's reused task, before Start: checked as the one edge outside the
  // table (IsReuseTransition), then absorbed like any transition.
  Status Reuse(const std::string& id, const std::string& reason = "reused from r1") {
    Status s = run.Reuse(T(id), reason, &fx);
    for (const TaskTransition& t : fx.transitions) {
      CHECK(IsReuseTransition(t.from, t.to));
      CHECK(t.reason == reason);
      CHECK(t.attempt == 0);
      shadow[t.task] = t.to;
      log.push_back(t);
    }
    fx.transitions.clear();
    return s;
  }
  int Promote(int budget = INT_MAX) {
    int n = run.PromoteEligible(budget, &fx);
    Absorb();
    return n;
  }
  Status Dispatch(int task) {
    Status s = run.OnDispatched(task, run.attempt(task), "w1", now, &fx);
    Absorb();
    return s;
  }
  // Dispatches `id` if READY, reports `outcome` for its current attempt, then
  // promotes whatever became eligible.
  Status Finish(const std::string& id, AttemptOutcome outcome, int exit_code = 0,
                bool retryable = true, double u01 = 0.5) {
    return FinishTask(T(id), outcome, exit_code, retryable, u01);
  }
  Status FinishTask(int task, AttemptOutcome outcome, int exit_code = 0, bool retryable = true,
                    double u01 = 0.5) {
    if (run.state(task) == TaskState::kReady) {
      Status d = Dispatch(task);
      if (!d.ok()) return d;
    }
    Status s =
        run.OnResult(task, run.attempt(task), outcome, exit_code, retryable,
                     exit_code == 0 ? "" : "exit code " + std::to_string(exit_code), now, u01, &fx);
    Absorb();
    Promote();
    return s;
  }
  Status RetryDue(int task) {
    Status s = run.OnRetryDue(task, now, &fx);
    Absorb();
    return s;
  }
  void Absorb() {
    if (shadow.size() < static_cast<size_t>(run.slots())) {
      shadow.resize(static_cast<size_t>(run.slots()), TaskState::kPending);
    }
    for (const TaskTransition& t : fx.transitions) {
      INFO(run.Id(t.task) << ": " << ToString(t.from) << " -> " << ToString(t.to) << " ("
                          << t.reason << ")");
      // The one edge outside the table: a rerun's reused foreach item.
      CHECK((IsAllowedTransition(t.from, t.to) ||
             (IsReuseTransition(t.from, t.to) && t.attempt == 0 && run.IsInstance(t.task))));
      CHECK(t.from == shadow[t.task]);
      CHECK_FALSE(t.reason.empty());
      shadow[t.task] = t.to;
      log.push_back(t);
    }
    for (int task : fx.dispatch) dispatched.push_back(task);
    for (auto& timer : fx.retry_timers) timers.push_back(timer);
    for (int task : fx.kill) killed.push_back(task);
    for (int task : fx.expand) expand.push_back(task);
    fx.clear();
  }
  // Reports success for everything until nothing is READY.
  void SucceedAll() {
    for (bool progress = true; progress;) {
      progress = false;
      for (int i = 0; i < run.size(); ++i) {
        if (run.state(i) == TaskState::kReady) {
          REQUIRE(FinishTask(i, AttemptOutcome::kSuccess).ok());
          progress = true;
        }
      }
    }
  }

  DagRun run;
  Effects fx;
  Micros now = 1'700'000'000 * kMicrosPerSecond;
  std::vector<TaskState> shadow;
  std::vector<TaskTransition> log;
  std::vector<int> dispatched;
  std::vector<std::pair<int, Micros>> timers;
  std::vector<int> killed;
  std::vector<int> expand;  // foreach tasks listed for expansion
};

}  // namespace apollo11::engine::testing
