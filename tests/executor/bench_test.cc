// Spawn+reap throughput, off the default test path: run with
//   executor_test "[.bench]"

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/clock.h"
#include "executor/executor.h"
#include "tests/executor/executor_test_util.h"

namespace {

using apollo11::SystemClock;
using apollo11::dsl::TaskType;
using apollo11::executor::ExecOutcome;
using apollo11::executor::ExecOutcomeKind;
using apollo11::executor::ExecRequest;
using apollo11::executor::Executor;
using apollo11::executor::ExecutorOptions;

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST_CASE("spawn and reap rate of /bin/true with 2 slots vs a shell loop", "[.bench]") {
  constexpr int kTasks = 1000;
  constexpr size_t kSlots = 2;
  SystemClock clock;
  Executor ex(ExecutorOptions{}, clock);
  int launched = 0;
  int done = 0;
  auto t0 = std::chrono::steady_clock::now();
  std::vector<ExecOutcome> out;
  while (done < kTasks) {
    while (ex.running() < kSlots && launched < kTasks) {
      ExecRequest r;
      r.exec_id = "bench.t" + std::to_string(launched++);
      r.type = TaskType::kShell;
      r.command = "/bin/true";
      REQUIRE(ex.Launch(r).ok());
    }
    std::vector<zmq_pollitem_t> items;
    ex.AppendPollItems(&items);
    zmq::poll(items, std::chrono::milliseconds(100));
    out.clear();
    ex.Process(clock.Now(), &out);
    for (const auto& o : out) REQUIRE(o.kind == ExecOutcomeKind::kSuccess);
    done += static_cast<int>(out.size());
  }
  double executor_s = SecondsSince(t0);

  t0 = std::chrono::steady_clock::now();
  REQUIRE(std::system("for i in $(seq 1000); do /bin/true; done") == 0);
  double loop_s = SecondsSince(t0);

  std::printf("executor (sh -c /bin/true, 2 slots): %d tasks in %.3f s = %.0f tasks/s\n", kTasks,
              executor_s, kTasks / executor_s);
  std::printf("shell loop (/bin/true, sequential):  %d runs in %.3f s = %.0f runs/s\n", kTasks,
              loop_s, kTasks / loop_s);
}

TEST_CASE("noop launch and report rate", "[.bench]") {
  constexpr int kTasks = 1'000'000;
  SystemClock clock;
  Executor ex(ExecutorOptions{"/tmp/unused-for-noop", 1 << 20, 1024}, clock);
  ExecRequest r;
  r.exec_id = "bench.noop";
  r.type = TaskType::kNoop;
  std::vector<ExecOutcome> out;
  out.reserve(64);
  int done = 0;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kTasks; ++i) {
    r.attempt = static_cast<uint32_t>(i);
    REQUIRE(ex.Launch(r).ok());
    if (i % 32 == 31) {
      ex.Process(clock.Now(), &out);
      done += static_cast<int>(out.size());
      out.clear();
    }
  }
  ex.Process(clock.Now(), &out);
  done += static_cast<int>(out.size());
  double s = SecondsSince(t0);
  CHECK(done == kTasks);
  std::printf("noop through Executor: %d in %.3f s = %.0f tasks/s\n", kTasks, s, kTasks / s);
}
