// Nothing a task starts outlives it: background children at a success,
// setsid'd daemons at a timeout or a cancel, and what a killed worker left in
// its cgroup. Real processes, found in /proc by a unique marker argument
// (sleep 30.<pid><n>), in both containment modes where this machine allows
// them (a cgroup v2 leaf needs a writable, delegated cgroup).

#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "executor/cgroup_tree.h"
#include "executor/child_process.h"
#include "executor/executor.h"
#include "executor/process_group.h"
#include "tests/executor/executor_test_util.h"

namespace {

using apollo11::Millis;
using apollo11::SystemClock;
using apollo11::dsl::TaskType;
using apollo11::executor::CgroupTree;
using apollo11::executor::ContainmentMode;
using apollo11::executor::ExecOutcome;
using apollo11::executor::ExecOutcomeKind;
using apollo11::executor::ExecRequest;
using apollo11::executor::Executor;
using apollo11::executor::ExecutorOptions;
using apollo11::executor::testing::RunToCompletion;
using std::chrono::milliseconds;

std::string Marker() { return apollo11::executor::testing::UniqueSleepMarker(); }

std::vector<int> WithMarker(const std::string& marker) {
  return apollo11::executor::testing::LiveWithMarker(marker);
}

// True once no live process has `marker` (SIGKILL completes asynchronously).
bool MarkerGone(const std::string& marker, milliseconds limit = milliseconds(3000)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!WithMarker(marker).empty()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(milliseconds(20));
  }
  return true;
}

// Waits until a process with `marker` runs.
bool MarkerRuns(const std::string& marker) {
  for (int i = 0; i < 250 && WithMarker(marker).empty(); ++i) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  return !WithMarker(marker).empty();
}

ExecRequest Shell(const std::string& id, const std::string& command) {
  ExecRequest r;
  r.exec_id = "r1." + id;
  r.attempt = 1;
  r.type = TaskType::kShell;
  r.command = command;
  return r;
}

ExecutorOptions Options(ContainmentMode mode) {
  ExecutorOptions o;
  o.containment = mode;
  o.containment_name = "apollo11-test-" + std::to_string(::getpid());
  return o;
}

bool CgroupsHere() { return CgroupTree::Open("apollo11-probe-" + std::to_string(::getpid())).ok(); }

// The modes this machine can run: the process tree always, a cgroup when it
// may create one.
std::vector<ContainmentMode> Modes() {
  std::vector<ContainmentMode> modes{ContainmentMode::kProcessTree};
  if (CgroupsHere()) {
    modes.push_back(ContainmentMode::kCgroup);
  } else {
    WARN("no writable cgroup v2 here: only the process-tree containment is tested");
  }
  return modes;
}

ExecOutcome RunOne(Executor& ex, const SystemClock& clock, const ExecRequest& r) {
  REQUIRE(ex.Launch(r).ok());
  auto out = RunToCompletion(ex, clock, milliseconds(15000));
  REQUIRE(out.size() == 1);
  return out[0];
}

}  // namespace

TEST_CASE("a task that succeeds leaves no background child running, and says it killed it",
          "[executor][containment]") {
  for (ContainmentMode mode : Modes()) {
    SystemClock clock;
    Executor ex(Options(mode), clock);
    INFO(ex.containment());
    const std::string marker = Marker();
    ExecOutcome o = RunOne(ex, clock, Shell("bg", "sleep " + marker + " & echo done"));
    CHECK(o.kind == ExecOutcomeKind::kSuccess);
    CHECK(o.output == "done\n");
    CHECK(o.error == "killed 1 leftover process");
    CHECK(MarkerGone(marker));
  }
}

TEST_CASE("a setsid'd daemon of a task that exits at once is killed at its end",
          "[executor][containment]") {
  for (ContainmentMode mode : Modes()) {
    SystemClock clock;
    Executor ex(Options(mode), clock);
    INFO(ex.containment());
    const std::string marker = Marker();
    ExecOutcome o = RunOne(ex, clock, Shell("daemon", "setsid sleep " + marker + " & exit 0"));
    CHECK(o.kind == ExecOutcomeKind::kSuccess);
    CHECK(o.error == "killed 1 leftover process");
    CHECK(MarkerGone(marker));
  }
}

TEST_CASE("a setsid'd child of a task that times out or is canceled is killed with it",
          "[executor][containment]") {
  for (ContainmentMode mode : Modes()) {
    SystemClock clock;
    Executor ex(Options(mode), clock);
    INFO(ex.containment());
    const std::string timed = Marker();
    auto r = Shell("timeout", "setsid sleep " + timed + " & sleep 60");
    r.timeout = Millis(300);
    r.kill_grace = Millis(200);
    ExecOutcome o = RunOne(ex, clock, r);
    CHECK(o.kind == ExecOutcomeKind::kTimeout);
    CHECK(MarkerGone(timed));

    const std::string canceled = Marker();
    // The setsid'd child ignores SIGTERM: only the SIGKILL after the grace ends it.
    REQUIRE(ex.Launch(Shell("cancel",
                            "setsid sh -c \"trap '' TERM; sleep " + canceled + "\" & sleep 60"))
                .ok());
    REQUIRE(MarkerRuns(canceled));
    ex.Cancel("r1.cancel", 1);
    auto out = RunToCompletion(ex, clock, milliseconds(15000));
    REQUIRE(out.size() == 1);
    CHECK(out[0].kind == ExecOutcomeKind::kCanceled);
    CHECK(MarkerGone(canceled));
  }
}

TEST_CASE("a failed task's note names its leftovers after the failure", "[executor][containment]") {
  SystemClock clock;
  Executor ex(Options(ContainmentMode::kAuto), clock);
  const std::string marker = Marker();
  ExecOutcome o = RunOne(ex, clock, Shell("fail", "sleep " + marker + " & exit 4"));
  CHECK(o.kind == ExecOutcomeKind::kFailed);
  CHECK(o.error == "exited with code 4; killed 1 leftover process");
  CHECK(MarkerGone(marker));
}

TEST_CASE("a worker restarted with the same containment name kills what its cgroup still holds",
          "[executor][containment]") {
  if (!CgroupsHere()) {
    WARN("no writable cgroup v2 here: skipped");
    return;
  }
  const std::string name = "apollo11-restart-" + std::to_string(::getpid());
  const std::string marker = Marker();
  pid_t leftover = -1;
  {
    // What a worker killed -9 leaves: its NAME-PID directory with a leaf
    // holding a process that outlived it.
    auto tree = CgroupTree::Open(name + "-1");
    REQUIRE(tree.ok());
    auto fd = (*tree)->Create("r9.t.1");
    REQUIRE(fd.ok());
    apollo11::executor::SpawnOptions so;
    so.cgroup_procs_fd = *fd;
    so.die_with_parent = false;
    auto child = apollo11::executor::SpawnChild(
        {"/bin/sh", "-c", "setsid sleep " + marker + " & wait"}, {}, "", so);
    ::close(*fd);
    REQUIRE(child.ok());
    leftover = child->pid;
    for (int f : {child->pidfd, child->stdout_fd, child->stderr_fd}) ::close(f);
    REQUIRE(MarkerRuns(marker));
  }
  SystemClock clock;
  ExecutorOptions options = Options(ContainmentMode::kCgroup);
  options.containment_name = name;
  Executor ex(options, clock);
  auto killed = ex.KillLeftovers();
  REQUIRE(killed.size() == 1);
  CHECK(killed[0].first == "r9.t.1");
  CHECK(killed[0].second >= 1);  // the setsid'd sleep (and the shell, if it still waits)
  CHECK(MarkerGone(marker));
  ::waitpid(leftover, nullptr, 0);
}

TEST_CASE("the death watch outlives the last task by 2 s, and the next task starts another",
          "[executor][containment]") {
  using apollo11::executor::testing::OwnChildren;
  constexpr apollo11::Micros kSecond = apollo11::kMicrosPerSecond;
  for (ContainmentMode mode : Modes()) {
    apollo11::FakeClock clock;
    Executor ex(Options(mode), clock);
    // Cgroup mode: the worker's directory, which lives as long as the watch.
    const std::string prefix = "cgroup v2 ";
    const std::string dir =
        mode == ContainmentMode::kCgroup ? ex.containment().substr(prefix.size()) : "";
    auto dir_exists = [&] { return !dir.empty() && std::filesystem::exists(dir); };
    std::vector<ExecOutcome> none;
    ex.Process(clock.Steady(), &none);
    // Nothing has run, so no guardian would remove it after a kill -9: it
    // goes at the first turn (a task makes it again).
    CHECK_FALSE(dir_exists());
    auto run_one = [&](const std::string& id) {
      REQUIRE(ex.Launch(Shell(id, "true")).ok());
      auto out = RunToCompletion(ex, clock, milliseconds(15000));
      REQUIRE(out.size() == 1);
      CHECK(out[0].kind == ExecOutcomeKind::kSuccess);
    };
    run_one("a");
    const std::vector<int> first = OwnChildren("apollo11-death-watch");
    REQUIRE(first.size() == 1);
    // A worker between two tasks keeps its guardian: no restart per task.
    clock.Advance(kSecond);
    ex.Process(clock.Steady(), &none);
    clock.Advance(kSecond - 1);
    ex.Process(clock.Steady(), &none);
    CHECK(OwnChildren("apollo11-death-watch") == first);
    CHECK(dir_exists() == !dir.empty());
    run_one("b");
    CHECK(OwnChildren("apollo11-death-watch") == first);
    // 2 s idle: it is told to go, and reaped (other tests' orphans may be
    // children of this process too, so only the watch is looked for).
    clock.Advance(kSecond);
    ex.Process(clock.Steady(), &none);
    clock.Advance(2 * kSecond);
    ex.Process(clock.Steady(), &none);
    CHECK(OwnChildren("apollo11-death-watch").empty());
    CHECK_FALSE(dir_exists());
    errno = 0;
    CHECK(::waitpid(first[0], nullptr, WNOHANG) == -1);
    CHECK(errno == ECHILD);
    run_one("c");
    const std::vector<int> second = OwnChildren("apollo11-death-watch");
    CHECK(second.size() == 1);
    CHECK(second != first);
  }
}

TEST_CASE("containment cost per task, for the record", "[.][perf][containment]") {
  std::vector<std::pair<ContainmentMode, const char*>> modes{
      {ContainmentMode::kProcessTree, "process tree"}};
  if (CgroupsHere()) modes.emplace_back(ContainmentMode::kCgroup, "cgroup");
  for (const auto& [mode, name] : modes) {
    SystemClock clock;
    Executor ex(Options(mode), clock);
    constexpr int kTasks = 200;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < kTasks; ++i) {
      ExecOutcome o = RunOne(ex, clock, Shell("t" + std::to_string(i), "true"));
      CHECK(o.kind == ExecOutcomeKind::kSuccess);
    }
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    WARN(name << ": " << ms / kTasks << " ms per sequential `true` task");
  }
}
