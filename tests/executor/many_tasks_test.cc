// Many tasks through one Executor, the way a busy worker feeds it: every
// attempt is reported exactly once and no process is left behind. How fast
// this goes is measured in bench/micro_bench.cc (BM_ExecutorSpawnReap,
// BM_ExecutorNoop), not here.

#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <utility>
#include <vector>
#include <zmq.hpp>

#include "common/clock.h"
#include "executor/executor.h"

namespace {

using apollo11::SystemClock;
using apollo11::dsl::TaskType;
using apollo11::executor::ExecOutcome;
using apollo11::executor::ExecOutcomeKind;
using apollo11::executor::ExecRequest;
using apollo11::executor::Executor;
using apollo11::executor::ExecutorOptions;

}  // namespace

TEST_CASE("300 short processes through two slots each succeed and are reported once",
          "[executor]") {
  constexpr int kTasks = 300;
  constexpr size_t kSlots = 2;
  SystemClock clock;
  Executor ex(ExecutorOptions{}, clock);
  int launched = 0;
  std::set<uint32_t> reported;
  std::vector<ExecOutcome> out;
  while (reported.size() < static_cast<size_t>(kTasks)) {
    while (ex.running() < kSlots && launched < kTasks) {
      ExecRequest r;
      r.exec_id = "many.t";
      r.attempt = static_cast<uint32_t>(launched++);
      r.type = TaskType::kShell;
      r.command = "/bin/true";
      REQUIRE(ex.Launch(r).ok());
    }
    REQUIRE(ex.running() <= kSlots);
    std::vector<zmq_pollitem_t> items;
    ex.AppendPollItems(&items);
    zmq::poll(items, std::chrono::milliseconds(1000));
    out.clear();
    ex.Process(clock.Steady(), &out);
    for (const auto& o : out) {
      CHECK(o.kind == ExecOutcomeKind::kSuccess);
      CHECK(reported.insert(o.attempt).second);
    }
  }
  CHECK(ex.running() == 0u);
}

TEST_CASE("a hundred thousand noops launched in bursts are each reported exactly once",
          "[executor]") {
  constexpr int kTasks = 100'000;
  SystemClock clock;
  Executor ex(ExecutorOptions{}, clock);
  ExecRequest r;
  r.exec_id = "many.noop";
  r.type = TaskType::kNoop;
  std::vector<bool> seen(kTasks, false);
  std::vector<ExecOutcome> out;
  int done = 0;
  auto drain = [&] {
    out.clear();
    ex.Process(clock.Steady(), &out);
    for (const auto& o : out) {
      REQUIRE(o.attempt < static_cast<uint32_t>(kTasks));
      CHECK_FALSE(seen[o.attempt]);
      CHECK(o.kind == ExecOutcomeKind::kSuccess);
      seen[o.attempt] = true;
      ++done;
    }
  };
  for (int i = 0; i < kTasks; ++i) {
    r.attempt = static_cast<uint32_t>(i);
    REQUIRE(ex.Launch(r).ok());
    if (i % 32 == 31) drain();
  }
  drain();
  CHECK(done == kTasks);
}
