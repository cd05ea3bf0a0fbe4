// Stopping process groups that are not (or no longer) our children, as a
// restarted worker does with the tasks its killed predecessor left: the
// leader's start time guards against a reused pid, SIGTERM comes first and
// SIGKILL after the grace, and what a leader leaves in its group is killed.

#include "executor/process_group.h"

#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>

#include "executor/child_process.h"
#include "tests/executor/executor_test_util.h"

namespace ex = apollo11::executor;
using apollo11::executor::testing::LiveGroupMembers;
using apollo11::executor::testing::ProcessAlive;
using apollo11::executor::testing::WaitUntilGroupGone;
using std::chrono::milliseconds;

namespace {

// A started shell whose stdout said "ready" (it has set up its traps); the
// group is SIGKILLed and reaped when the test ends, whatever happened.
struct Shell {
  explicit Shell(const std::string& script) {
    auto c = ex::SpawnChild({"/bin/sh", "-c", script}, {}, "");
    REQUIRE(c.ok());
    child = *c;
    std::string out;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (out.find("ready") == std::string::npos && std::chrono::steady_clock::now() < deadline) {
      pollfd p{child.stdout_fd, POLLIN, 0};
      ::poll(&p, 1, 100);
      char buf[64];
      ssize_t n = ::read(child.stdout_fd, buf, sizeof(buf));
      if (n > 0) out.append(buf, static_cast<size_t>(n));
    }
    REQUIRE(out.find("ready") != std::string::npos);
    auto st = ex::ReadProcStat(child.pid);
    REQUIRE(st.has_value());
    start_time = st->start_time;
  }
  ~Shell() {
    ::kill(-child.pid, SIGKILL);
    if (!reaped) ::waitpid(child.pid, nullptr, 0);
    for (int fd : {child.pidfd, child.stdout_fd, child.stderr_fd}) ::close(fd);
  }
  // The signal that ended the leader (it is our child, so we reap it).
  int Reap() {
    int status = 0;
    REQUIRE(::waitpid(child.pid, &status, 0) == child.pid);
    reaped = true;
    return WIFSIGNALED(status) ? WTERMSIG(status) : -1;
  }
  ex::ChildProcess child;
  uint64_t start_time = 0;
  bool reaped = false;
};

}  // namespace

TEST_CASE("/proc/PID/stat is parsed after the last parenthesis of the command name",
          "[process_group]") {
  std::string stat = "4242 (a) (b c)) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 ";
  auto st = ex::ParseProcStat(stat + "987654 12345 67 18446744073709551615\n");
  REQUIRE(st.has_value());
  CHECK(st->state == 'S');
  CHECK(st->start_time == 987654u);
  CHECK_FALSE(ex::ParseProcStat("4242 (sh) S 1 4242").has_value());  // too short
  CHECK_FALSE(ex::ParseProcStat("4242 sh S 1 4242").has_value());    // no command name
  CHECK_FALSE(ex::ParseProcStat(stat + "98x7 1 2\n").has_value());   // not a number
  auto self = ex::ReadProcStat(::getpid());
  REQUIRE(self.has_value());
  CHECK(self->state == 'R');
  CHECK_FALSE(ex::ReadProcStat(0).has_value());
}

TEST_CASE("a recorded pid whose start time differs is never signalled", "[process_group]") {
  Shell shell("echo ready; exec sleep 30");
  auto results = ex::StopGroups({{shell.child.pid, shell.start_time + 1, milliseconds(100)}});
  REQUIRE(results.size() == 1);
  CHECK(results[0] == ex::StopResult::kNotRunning);
  CHECK(ProcessAlive(shell.child.pid));
  // The same group with its true start time is stopped by SIGTERM.
  results = ex::StopGroups({{shell.child.pid, shell.start_time, milliseconds(5000)}});
  CHECK(results[0] == ex::StopResult::kTerminated);
  CHECK(shell.Reap() == SIGTERM);
}

TEST_CASE("a group that ignores SIGTERM is killed after its grace", "[process_group]") {
  Shell shell("trap '' TERM; echo ready; while :; do sleep 1; done");
  const auto t0 = std::chrono::steady_clock::now();
  auto results = ex::StopGroups({{shell.child.pid, shell.start_time, milliseconds(300)}});
  const auto took = std::chrono::steady_clock::now() - t0;
  CHECK(results[0] == ex::StopResult::kKilled);
  CHECK(took >= milliseconds(300));  // the grace was given
  CHECK(shell.Reap() == SIGKILL);
  CHECK(WaitUntilGroupGone(shell.child.pid, milliseconds(5000)));
}

TEST_CASE("what a terminated leader leaves in its group is killed too", "[process_group]") {
  // The leader dies of SIGTERM at once; its background child ignores SIGTERM.
  Shell shell("(trap '' TERM; echo ready; while :; do sleep 1; done) & wait");
  REQUIRE(LiveGroupMembers(shell.child.pid).size() >= 2);
  auto results = ex::StopGroups({{shell.child.pid, shell.start_time, milliseconds(30000)}});
  CHECK(results[0] == ex::StopResult::kTerminated);
  CHECK(shell.Reap() == SIGTERM);
  CHECK(WaitUntilGroupGone(shell.child.pid, milliseconds(5000)));
}

TEST_CASE("a group whose leader died with its worker still has its members killed",
          "[process_group]") {
  // The leader leaves a background child in its group and exits, as a task
  // leader killed by PR_SET_PDEATHSIG does; its pid cannot be reused while
  // the group has members.
  Shell shell("(echo ready; exec sleep 30) & sleep 0.2; exit 0");
  REQUIRE(shell.Reap() == -1);
  REQUIRE(LiveGroupMembers(shell.child.pid).size() == 1);
  auto results = ex::StopGroups({{shell.child.pid, shell.start_time, milliseconds(5000)}});
  CHECK(results[0] == ex::StopResult::kMembersKilled);
  CHECK(WaitUntilGroupGone(shell.child.pid, milliseconds(5000)));
  // Nothing left: nothing sent.
  results = ex::StopGroups({{shell.child.pid, shell.start_time, milliseconds(5000)}});
  CHECK(results[0] == ex::StopResult::kNotRunning);
}

namespace {

// Records what the executor reports, as the worker's OrphanGuard would store it.
struct Recorder : ex::ProcessGroupObserver {
  void GroupStarted(pid_t pgid, uint64_t start_time, const ex::ExecRequest& r) override {
    started.push_back(pgid);
    start_times.push_back(start_time);
    exec_ids.push_back(r.exec_id);
  }
  void GroupReaped(pid_t pgid) override { reaped.push_back(pgid); }
  std::vector<pid_t> started, reaped;
  std::vector<uint64_t> start_times;
  std::vector<std::string> exec_ids;
};

}  // namespace

TEST_CASE("the executor reports each process group it starts and reaps, precheck included",
          "[process_group]") {
  apollo11::SystemClock clock;
  Recorder recorder;
  ex::Executor executor(ex::ExecutorOptions{}, clock, &recorder);
  ex::ExecRequest r;
  r.exec_id = "run.t";
  r.attempt = 1;
  r.type = apollo11::dsl::TaskType::kShell;
  r.command = "exit 0";
  r.precheck = "exit 0";
  r.run_precheck = true;
  REQUIRE(executor.Launch(r).ok());
  auto out = apollo11::executor::testing::RunToCompletion(executor, clock, milliseconds(10000));
  REQUIRE(out.size() == 1);
  CHECK(out[0].kind == ex::ExecOutcomeKind::kSuccess);
  REQUIRE(recorder.started.size() == 2);  // precheck, then the task
  CHECK(recorder.started[0] != recorder.started[1]);
  CHECK(recorder.reaped == recorder.started);
  CHECK(recorder.exec_ids == std::vector<std::string>{"run.t", "run.t"});
  CHECK(recorder.start_times[0] > 0);
}
