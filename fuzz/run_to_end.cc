#include "fuzz/run_to_end.h"

#include <algorithm>
#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "engine/dag_run.h"
#include "fuzz/fuzz_check.h"

namespace apollo11::fuzz {
namespace {

// Enough for every task of a fuzz-sized pipeline to use a few retries; a
// pipeline asking for more is legal and simply not followed to its end.
constexpr int kMaxEvents = 20000;

// FNV-1a of the task id and attempt: the same input always takes the same
// branches, so a crash reproduces.
uint64_t Hash(const std::string& id, uint32_t attempt) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : id) h = (h ^ c) * 0x100000001b3ULL;
  return (h ^ attempt) * 0x100000001b3ULL;
}

}  // namespace

void DriveRunToEnd(std::shared_ptr<const engine::RunGraph> graph) {
  engine::DagRun run(graph);
  engine::Effects fx;
  Micros now = 1'000'000;
  std::deque<int> ready;
  std::vector<std::pair<int, Micros>> timers;  // task, due
  auto absorb = [&] {
    // A foreach task that went READY is expanded at once, as the scheduler
    // does, into 0..3 instances (0: SKIPPED), or its items "cannot be read".
    while (!fx.expand.empty()) {
      std::vector<int> expand;
      expand.swap(fx.expand);
      for (int task : expand) {
        const uint64_t h = Hash(run.Id(task), 0);
        const Status s = h % 8 == 7 ? run.FailExpansion(task, "fuzz: items unreadable", &fx)
                                    : run.Expand(task, static_cast<int>(h % 4), "fuzz", &fx);
        Require(s.ok(), "a READY foreach task can be expanded");
      }
    }
    ready.insert(ready.end(), fx.dispatch.begin(), fx.dispatch.end());
    timers.insert(timers.end(), fx.retry_timers.begin(), fx.retry_timers.end());
    fx.clear();
  };
  run.Start(now, &fx);
  absorb();
  for (int event = 0; event < kMaxEvents && !run.Finished(); ++event) {
    run.PromoteEligible(1000, &fx);
    absorb();
    if (run.Finished()) break;  // a foreach expanded into no items can end the run here
    if (!ready.empty()) {
      const int task = ready.front();
      ready.pop_front();
      if (run.state(task) != TaskState::kReady) continue;  // canceled meanwhile
      const uint32_t attempt = run.attempt(task);
      Require(run.OnDispatched(task, attempt, "w1", now, &fx).ok(),
              "a READY task's current attempt can be dispatched");
      absorb();
      const uint64_t h = Hash(run.Id(task), attempt);
      const auto outcome = static_cast<AttemptOutcome>(h % 4);
      const int exit_code = outcome == AttemptOutcome::kFailed ? 1 + (h >> 8) % 255 : 0;
      now += 1000;
      Require(run.OnResult(task, attempt, outcome, exit_code, (h >> 16) % 4 != 0, "fuzz", now,
                           static_cast<double>((h >> 24) % 1000) / 1000.0, &fx)
                  .ok(),
              "the result of a RUNNING task's current attempt is accepted");
      absorb();
      continue;
    }
    if (!timers.empty()) {
      auto next = std::min_element(timers.begin(), timers.end(), [](const auto& a, const auto& b) {
        return a.second < b.second;
      });
      const int task = next->first;
      now = std::max(now, next->second);
      timers.erase(next);
      if (run.state(task) != TaskState::kRetrying) continue;  // canceled meanwhile
      Require(run.OnRetryDue(task, now, &fx).ok(), "a due retry of a RETRYING task is accepted");
      absorb();
      continue;
    }
    Require(false, "an unfinished run has a task READY or a retry due (the run stalled)");
  }
  if (run.Finished()) {
    Require(run.Outcome() != RunStatus::kRunning && run.Outcome() != RunStatus::kPending,
            "a finished run has a final outcome");
  }
}

}  // namespace apollo11::fuzz
