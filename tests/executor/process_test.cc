// Process tasks through the Executor: real children, real pipes, real signals.

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "common/clock.h"
#include "executor/executor.h"
#include "tests/executor/executor_test_util.h"

namespace {

using apollo11::Millis;
using apollo11::SystemClock;
using apollo11::dsl::TaskType;
using apollo11::executor::ExecOutcome;
using apollo11::executor::ExecOutcomeKind;
using apollo11::executor::ExecRequest;
using apollo11::executor::Executor;
using apollo11::executor::ExecutorOptions;
using apollo11::executor::testing::OwnChildren;
using apollo11::executor::testing::ReadFile;
using apollo11::executor::testing::RunToCompletion;
using apollo11::executor::testing::TempDir;
using apollo11::executor::testing::WaitUntilGone;
using apollo11::executor::testing::WaitUntilGroupGone;
using apollo11::executor::testing::WriteFile;
using std::chrono::milliseconds;

ExecRequest Shell(const std::string& id, const std::string& command) {
  ExecRequest r;
  r.exec_id = "r1." + id;
  r.attempt = 1;
  r.type = TaskType::kShell;
  r.command = command;
  return r;
}

// Runs one request to its end and returns its outcome.
ExecOutcome RunOne(Executor& ex, const SystemClock& clock, const ExecRequest& r,
                   milliseconds limit = milliseconds(10000)) {
  REQUIRE(ex.Launch(r).ok());
  auto out = RunToCompletion(ex, clock, limit);
  REQUIRE(out.size() == 1);
  return out[0];
}

double Seconds(const ExecOutcome& o) { return (o.finished_at - o.started_at) / 1e6; }

}  // namespace

TEST_CASE("a shell task's exit code, stdout tail and log files are reported", "[executor]") {
  TempDir dir;
  SystemClock clock;
  Executor ex(ExecutorOptions{dir.path() + "/logs", 1 << 20, 64 << 10}, clock);

  auto ok = RunOne(ex, clock, Shell("ok", "echo hello; echo oops >&2"));
  CHECK(ok.kind == ExecOutcomeKind::kSuccess);
  CHECK(ok.exit_code == 0);
  CHECK(ok.output == "hello\n");
  CHECK(ok.error.empty());
  CHECK(ok.stdout_path == dir.path() + "/logs/r1.ok.1.out");
  CHECK(ReadFile(ok.stdout_path) == "hello\n");
  CHECK(ReadFile(ok.stderr_path) == "oops\n");
  CHECK(ok.finished_at >= ok.started_at);

  auto failed = RunOne(ex, clock, Shell("fail", "echo partial; exit 3"));
  CHECK(failed.kind == ExecOutcomeKind::kFailed);
  CHECK(failed.exit_code == 3);
  CHECK(failed.retryable);
  CHECK(failed.error == "exited with code 3");
  CHECK(failed.output == "partial\n");

  auto killed = RunOne(ex, clock, Shell("sig", "kill -9 $$"));
  CHECK(killed.kind == ExecOutcomeKind::kFailed);
  CHECK(killed.exit_code == -9);
  CHECK(killed.error ==
        "killed by signal 9 (SIGKILL); not sent by Apollo-11: the kernel's OOM killer (see dmesg) "
        "or another process");

  auto terminated = RunOne(ex, clock, Shell("term", "kill -TERM $$"));
  CHECK(terminated.error == "killed by signal 15 (SIGTERM)");

  auto missing = RunOne(ex, clock, Shell("missing", "no-such-command-a11"));
  CHECK(missing.exit_code == 127);
  CHECK(missing.error ==
        "exited with code 127 (command not found: check the command and the worker's PATH)");
  CHECK(ex.running() == 0);
}

TEST_CASE("ReadOutput serves slices of the captured stdout and stderr", "[executor]") {
  TempDir dir;
  SystemClock clock;
  Executor ex(ExecutorOptions{dir.path() + "/logs", 1 << 20, 64 << 10}, clock);
  RunOne(ex, clock, Shell("ok", "echo hello world; echo oops >&2"));

  auto out = ex.ReadOutput("r1.ok", 1, /*stderr_stream=*/false, 6, 3);
  REQUIRE(out.ok());
  CHECK(out->data == "wor");
  CHECK(out->size == 12);
  auto err = ex.ReadOutput("r1.ok", 1, /*stderr_stream=*/true, 0, 100);
  REQUIRE(err.ok());
  CHECK(err->data == "oops\n");
  auto past = ex.ReadOutput("r1.ok", 1, false, 100, 10);
  REQUIRE(past.ok());
  CHECK(past->data.empty());
  CHECK(past->size == 12);

  CHECK(ex.ReadOutput("r1.ok", 2, false, 0, 10).status().code() == apollo11::StatusCode::kNotFound);
  CHECK(ex.ReadOutput("../r1.ok", 1, false, 0, 10).status().code() ==
        apollo11::StatusCode::kUnsupported);
  Executor no_logs(ExecutorOptions{"", 1 << 20, 64 << 10}, clock);
  CHECK(no_logs.ReadOutput("r1.ok", 1, false, 0, 10).status().code() ==
        apollo11::StatusCode::kUnsupported);
}

TEST_CASE("output keeps only the last output_tail_bytes of stdout", "[executor]") {
  SystemClock clock;
  Executor ex(ExecutorOptions{"", 1 << 20, 8}, clock);
  auto o = RunOne(ex, clock, Shell("tail", "printf 'aaaaaaaaaaaaaaaaaaaaaaaa0123456789'"));
  CHECK(o.output == "23456789");
  CHECK(o.stdout_path.empty());
}

TEST_CASE("env vars reach the child and override the worker's own", "[executor]") {
  ::setenv("APOLLO11_EXECUTOR_TEST_INHERITED", "from-parent", 1);
  ::setenv("APOLLO11_EXECUTOR_TEST_OVERRIDDEN", "parent-value", 1);
  SystemClock clock;
  Executor ex(ExecutorOptions{}, clock);
  auto r = Shell("env",
                 "echo \"$APOLLO11_EXECUTOR_TEST_INHERITED $APOLLO11_EXECUTOR_TEST_OVERRIDDEN "
                 "$APOLLO11_RUN_ID\"");
  r.env = {{"APOLLO11_EXECUTOR_TEST_OVERRIDDEN", "task-value"}, {"APOLLO11_RUN_ID", "r1"}};
  auto o = RunOne(ex, clock, r);
  CHECK(o.output == "from-parent task-value r1\n");
}

TEST_CASE("a task runs in its workdir, and a missing workdir cannot start", "[executor]") {
  TempDir dir;
  SystemClock clock;
  Executor ex(ExecutorOptions{}, clock);
  auto r = Shell("pwd", "pwd");
  r.workdir = dir.path();
  auto o = RunOne(ex, clock, r);
  CHECK(o.output == std::filesystem::canonical(dir.path()).string() + "\n");

  auto bad = Shell("nowhere", "true");
  bad.workdir = dir.path() + "/does-not-exist";
  auto b = RunOne(ex, clock, bad);
  CHECK(b.kind == ExecOutcomeKind::kFailed);
  CHECK(b.error == "could not start: No such file or directory");
}

TEST_CASE("a python task runs python3 SCRIPT ARGS", "[executor]") {
  TempDir dir;
  WriteFile(dir.path() + "/t.py", "import sys\nprint('-'.join(sys.argv[1:]))\nsys.exit(4)\n");
  SystemClock clock;
  Executor ex(ExecutorOptions{}, clock);
  ExecRequest r;
  r.exec_id = "r1.py";
  r.type = TaskType::kPython;
  r.script = dir.path() + "/t.py";
  r.args = {"a", "b c"};
  auto o = RunOne(ex, clock, r);
  CHECK(o.output == "a-b c\n");
  CHECK(o.exit_code == 4);
}

TEST_CASE("noop finishes at the next Process without a process or file, and db is rejected",
          "[executor]") {
  TempDir dir;
  SystemClock clock;
  Executor ex(ExecutorOptions{dir.path(), 1 << 20, 1024}, clock);
  ExecRequest noop;
  noop.exec_id = "r1.n";
  noop.type = TaskType::kNoop;
  REQUIRE(ex.Launch(noop).ok());
  CHECK(ex.running() == 0);
  CHECK(ex.NextDeadline() != 0);  // the loop must not sleep on a queued outcome
  std::vector<ExecOutcome> out;
  ex.Process(clock.Steady(), &out);
  REQUIRE(out.size() == 1);
  CHECK(out[0].kind == ExecOutcomeKind::kSuccess);
  CHECK(std::filesystem::is_empty(dir.path()));
  CHECK(ex.NextDeadline() == 0);

  ExecRequest db = noop;
  db.exec_id = "r1.db";
  db.type = TaskType::kDb;
  REQUIRE(ex.Launch(db).ok());
  out.clear();
  ex.Process(clock.Steady(), &out);
  REQUIRE(out.size() == 1);
  // db tasks run now (tests/executor/db_executor_test.cc); one without a URL
  // fails at once and is not retried.
  CHECK(out[0].kind == ExecOutcomeKind::kFailed);
  CHECK_FALSE(out[0].retryable);
  CHECK(out[0].error.find("unsupported db URL") != std::string::npos);
}

TEST_CASE("a task type this worker does not know fails at once, naming the types it knows",
          "[executor]") {
  TempDir dir;
  SystemClock clock;
  Executor ex(ExecutorOptions{dir.path(), 1 << 20, 1024}, clock);
  // What a newer coordinator's type looks like here: a value past the list.
  ExecRequest r = Shell("future", "touch " + dir.path() + "/ran");
  r.type = static_cast<TaskType>(9);
  REQUIRE(ex.Launch(r).ok());
  CHECK(ex.running() == 0);
  std::vector<ExecOutcome> out;
  ex.Process(clock.Steady(), &out);
  REQUIRE(out.size() == 1);
  CHECK(out[0].exec_id == "r1.future");
  CHECK(out[0].kind == ExecOutcomeKind::kFailed);
  CHECK_FALSE(out[0].retryable);
  CHECK(
      out[0].error ==
      "unknown task type 9 (this worker knows shell, python, http, db, noop): upgrade the worker");
  CHECK(std::filesystem::is_empty(dir.path()));  // no process, no log file
}

TEST_CASE("a duplicate (exec_id, attempt) is refused while it runs", "[executor]") {
  SystemClock clock;
  Executor ex(ExecutorOptions{}, clock);
  auto r = Shell("dup", "exit 0");
  REQUIRE(ex.Launch(r).ok());
  apollo11::Status again = ex.Launch(r);
  CHECK(again.code() == apollo11::StatusCode::kBusy);
  auto next = r;
  next.attempt = 2;
  CHECK(ex.Launch(next).ok());
  CHECK(ex.RunningExecs().size() == 2);
  CHECK(RunToCompletion(ex, clock, milliseconds(5000)).size() == 2);
}

TEST_CASE("a timeout kills the task and its background children", "[executor]") {
  TempDir dir;
  SystemClock clock;
  Executor ex(ExecutorOptions{}, clock);
  const std::string pgid_file = dir.path() + "/pgid";
  const std::string bg_file = dir.path() + "/bg";
  auto r = Shell("slow",
                 "echo $$ > " + pgid_file + "; sleep 100 & echo $! > " + bg_file + "; sleep 100");
  r.timeout = Millis(300);
  r.kill_grace = Millis(5000);
  auto o = RunOne(ex, clock, r);
  CHECK(o.kind == ExecOutcomeKind::kTimeout);
  CHECK(o.error == "timed out after 300ms (process group killed)");
  CHECK(o.retryable);
  CHECK(Seconds(o) < 2.0);  // SIGTERM sufficed: no wait for the grace
  int pgid = std::stoi(ReadFile(pgid_file));
  int bg = std::stoi(ReadFile(bg_file));
  CHECK(WaitUntilGone(bg, milliseconds(2000)));
  CHECK(WaitUntilGroupGone(pgid, milliseconds(2000)));
}

TEST_CASE("a task ignoring SIGTERM is SIGKILLed after the grace", "[executor]") {
  TempDir dir;
  SystemClock clock;
  Executor ex(ExecutorOptions{}, clock);
  const std::string pgid_file = dir.path() + "/pgid";
  auto r = Shell("stubborn", "echo $$ > " + pgid_file + "; trap '' TERM; sleep 30");
  r.timeout = Millis(200);
  r.kill_grace = Millis(400);
  auto o = RunOne(ex, clock, r);
  CHECK(o.kind == ExecOutcomeKind::kTimeout);
  CHECK(o.exit_code == -9);
  CHECK(Seconds(o) >= 0.6);
  CHECK(Seconds(o) < 3.0);
  CHECK(WaitUntilGroupGone(std::stoi(ReadFile(pgid_file)), milliseconds(2000)));
}

TEST_CASE("Cancel stops a running task with outcome kCanceled", "[executor]") {
  TempDir dir;
  SystemClock clock;
  Executor ex(ExecutorOptions{}, clock);
  const std::string started = dir.path() + "/started";
  auto r = Shell("cancel", "echo $$ > " + started + "; exec sleep 30");
  REQUIRE(ex.Launch(r).ok());
  // Wait until the child has really started, then cancel.
  RunToCompletion(ex, clock, milliseconds(5000), [&](const auto&) {
    std::error_code ec;
    return std::filesystem::file_size(started, ec) > 0 && !ec;
  });
  ex.Cancel(r.exec_id, r.attempt);
  ex.Cancel("r1.unknown", 1);  // ignored
  auto out = RunToCompletion(ex, clock, milliseconds(5000));
  REQUIRE(out.size() == 1);
  CHECK(out[0].kind == ExecOutcomeKind::kCanceled);
  CHECK(out[0].exit_code == -15);
  CHECK(WaitUntilGroupGone(std::stoi(ReadFile(started)), milliseconds(2000)));
}

TEST_CASE("output beyond max_log_bytes is dropped with a marker and never blocks the child",
          "[executor]") {
  TempDir dir;
  SystemClock clock;
  Executor ex(ExecutorOptions{dir.path(), 64 << 10, 1024}, clock);
  auto o = RunOne(ex, clock, Shell("big", "head -c 8000000 /dev/zero | tr '\\0' x; echo END"));
  CHECK(o.kind == ExecOutcomeKind::kSuccess);
  std::string log = ReadFile(o.stdout_path);
  CHECK(log.size() < (64 << 10) + 100);
  CHECK(log.substr(0, 10) == "xxxxxxxxxx");
  CHECK(log.find("[apollo11: output truncated at 65536 bytes]") != std::string::npos);
  CHECK(o.output.size() == 1024);
  CHECK(o.output.substr(1020) == "END\n");  // the tail is the real end of stdout
}

TEST_CASE("a background child holding stdout open does not delay the task's end", "[executor]") {
  TempDir dir;
  SystemClock clock;
  Executor ex(ExecutorOptions{}, clock);
  const std::string bg_file = dir.path() + "/bg";
  auto o = RunOne(ex, clock, Shell("bg", "sleep 20 & echo $! > " + bg_file + "; echo done"));
  CHECK(o.kind == ExecOutcomeKind::kSuccess);
  CHECK(o.output == "done\n");
  CHECK(Seconds(o) < 5.0);
  ::kill(std::stoi(ReadFile(bg_file)), SIGKILL);
}

TEST_CASE("50 concurrent processes all finish and are reaped", "[executor]") {
  SystemClock clock;
  Executor ex(ExecutorOptions{}, clock);
  for (int i = 0; i < 50; ++i) REQUIRE(ex.Launch(Shell("t" + std::to_string(i), "true")).ok());
  CHECK(ex.running() == 50);
  auto out = RunToCompletion(ex, clock, milliseconds(20000));
  CHECK(out.size() == 50);
  for (const auto& o : out) CHECK(o.kind == ExecOutcomeKind::kSuccess);
  CHECK(ex.running() == 0);
  // No task is left, zombie or not: the one child may be the death watch,
  // which outlives the last task by 2 s (executor/containment.h).
  const std::vector<int> children = OwnChildren("");
  CHECK(children.size() <= 1);
  CHECK(children == OwnChildren("apollo11-death-watch"));
}

TEST_CASE("precheck exit 0 runs the task, 3 means already done, anything else refuses",
          "[executor]") {
  TempDir dir;
  SystemClock clock;
  Executor ex(ExecutorOptions{}, clock);
  const std::string ran = dir.path() + "/ran";
  auto r = Shell("pc", "touch " + ran + "; echo task");
  r.run_precheck = true;

  r.precheck = "exit 0";
  auto go = RunOne(ex, clock, r);
  CHECK(go.kind == ExecOutcomeKind::kSuccess);
  CHECK(go.output == "task\n");
  CHECK(std::filesystem::exists(ran));
  std::filesystem::remove(ran);

  r.attempt = 2;
  r.precheck = "exit 3";
  auto done = RunOne(ex, clock, r);
  CHECK(done.kind == ExecOutcomeKind::kAlreadyDone);
  CHECK_FALSE(std::filesystem::exists(ran));

  r.attempt = 3;
  r.precheck = "exit 7";
  auto refused = RunOne(ex, clock, r);
  CHECK(refused.kind == ExecOutcomeKind::kFailed);
  CHECK_FALSE(refused.retryable);
  CHECK(refused.error == "precheck exited 7: refusing to rerun");
  CHECK_FALSE(std::filesystem::exists(ran));

  r.attempt = 4;
  r.run_precheck = false;  // the precheck only runs when asked
  CHECK(RunOne(ex, clock, r).kind == ExecOutcomeKind::kSuccess);
}

TEST_CASE("destroying the executor kills and reaps what still runs", "[executor]") {
  TempDir dir;
  SystemClock clock;
  const std::string pgid_file = dir.path() + "/pgid";
  {
    Executor ex(ExecutorOptions{}, clock);
    REQUIRE(ex.Launch(Shell("left", "echo $$ > " + pgid_file + "; sleep 30 & sleep 30")).ok());
    RunToCompletion(ex, clock, milliseconds(5000), [&](const auto&) {
      std::error_code ec;
      return std::filesystem::file_size(pgid_file, ec) > 0 && !ec;
    });
  }
  CHECK(WaitUntilGroupGone(std::stoi(ReadFile(pgid_file)), milliseconds(2000)));
  errno = 0;
  CHECK(::waitpid(-1, nullptr, WNOHANG) == -1);
  CHECK(errno == ECHILD);
}

TEST_CASE("timeouts follow the time given to Process, not the wall clock", "[executor]") {
  apollo11::FakeClock clock;
  Executor ex(ExecutorOptions{}, clock);
  auto r = Shell("fake", "exec sleep 30");
  r.timeout = Millis(60'000);
  r.kill_grace = Millis(60'000);
  REQUIRE(ex.Launch(r).ok());
  CHECK(ex.NextDeadline() == clock.Now() + 60 * apollo11::kMicrosPerSecond);
  std::vector<ExecOutcome> out;
  ex.Process(clock.Now() + 59 * apollo11::kMicrosPerSecond, &out);
  CHECK(out.empty());
  clock.Advance(60 * apollo11::kMicrosPerSecond);
  ex.Process(clock.Steady(), &out);  // sends SIGTERM; the next deadline is the grace's end
  CHECK(ex.NextDeadline() == clock.Now() + 60 * apollo11::kMicrosPerSecond);
  // Real time from here: wait for the pidfd like the worker would.
  for (int i = 0; i < 500 && out.empty(); ++i) {
    std::vector<zmq_pollitem_t> items;
    ex.AppendPollItems(&items);
    zmq::poll(items, milliseconds(10));
    ex.Process(clock.Steady(), &out);
  }
  REQUIRE(out.size() == 1);
  CHECK(out[0].kind == ExecOutcomeKind::kTimeout);
  CHECK(out[0].exit_code == -15);
  CHECK(out[0].error == "timed out after 1m (process group killed)");
}

TEST_CASE("a wall-clock step neither times a task out nor delays its timeout",
          "[executor][clock]") {
  apollo11::FakeClock clock;
  Executor ex(ExecutorOptions{}, clock);
  auto r = Shell("stepped", "exec sleep 30");
  r.timeout = Millis(60'000);
  r.kill_grace = Millis(0);
  REQUIRE(ex.Launch(r).ok());
  std::vector<ExecOutcome> out;
  clock.StepWall(+3600 * apollo11::kMicrosPerSecond);  // NTP jumps an hour ahead
  ex.Process(clock.Steady(), &out);
  CHECK(out.empty());
  CHECK(ex.NextDeadline() == clock.Steady() + 60 * apollo11::kMicrosPerSecond);
  clock.StepWall(-7200 * apollo11::kMicrosPerSecond);  // and back, an hour behind
  clock.Advance(60 * apollo11::kMicrosPerSecond);
  ex.Process(clock.Steady(), &out);  // due on the steady clock: SIGKILL now
  for (int i = 0; i < 500 && out.empty(); ++i) {
    std::vector<zmq_pollitem_t> items;
    ex.AppendPollItems(&items);
    zmq::poll(items, milliseconds(10));
    ex.Process(clock.Steady(), &out);
  }
  REQUIRE(out.size() == 1);
  CHECK(out[0].kind == ExecOutcomeKind::kTimeout);
  CHECK(out[0].finished_at == clock.Now());  // records keep the wall clock
}
