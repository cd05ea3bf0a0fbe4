// Crash recovery through the public interface: real `apollo11-node` and
// `apollo11` processes, killed with SIGKILL and started again on the same
// state dirs. Every task appends "EXEC_ID ATTEMPT IDEMPOTENCY_KEY" to a
// ledger file, which tells how often it really ran.

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include "common/small_file.h"
#include "executor/process_group.h"
#include "tests/actors/cli_harness.h"
#include "tests/actors/cluster_harness.h"

using namespace apollo11::testing;  // NOLINT: test file

namespace {

// A layered pipeline of shell tasks that record themselves in LEDGER and
// sleep `sleep` seconds.
std::string LedgerPipeline(const std::string& name, const std::string& ledger, int layers,
                           int width, const std::string& sleep) {
  std::ostringstream y;
  y << "version: \"1.0\"\nname: " << name << "\npipeline:\n";
  for (int l = 0; l < layers; ++l) {
    for (int i = 0; i < width; ++i) {
      y << "  - id: t" << l << "_" << i << "\n    type: shell\n"
        << "    command: \"echo $APOLLO11_EXECUTION_ID $APOLLO11_ATTEMPT "
           "$APOLLO11_IDEMPOTENCY_KEY >> "
        << ledger << "; sleep " << sleep << "\"\n";
      if (l > 0) y << "    depends_on: [t" << (l - 1) << "_" << i << "]\n";
    }
  }
  return y.str();
}

// exec id -> how many times it ran, from the ledger.
std::map<std::string, int> LedgerCounts(const ScratchDir& dir) {
  std::map<std::string, int> counts;
  std::istringstream in(dir.Read("ledger"));
  std::string exec, attempt, key;
  while (in >> exec >> attempt >> key) ++counts[exec];
  return counts;
}

size_t LedgerLines(const ScratchDir& dir) {
  size_t n = 0;
  for (const auto& [exec, c] : LedgerCounts(dir)) n += static_cast<size_t>(c);
  return n;
}

// The death watch (executor/death_watch.h) of worker process `worker`.
pid_t DeathWatchOf(pid_t worker) {
  for (int i = 0; i < 100; ++i) {
    DIR* dir = ::opendir("/proc");
    while (dirent* e = dir != nullptr ? ::readdir(dir) : nullptr) {
      const pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
      auto st = apollo11::executor::ReadProcStat(pid);
      if (pid <= 0 || !st.has_value() || st->ppid != worker) continue;
      const std::string cmd =
          apollo11::ReadSmallFile("/proc/" + std::to_string(pid) + "/cmdline", 4096).value_or("");
      if (cmd.find("apollo11-death-watch") != std::string::npos) {
        ::closedir(dir);
        return pid;
      }
    }
    if (dir != nullptr) ::closedir(dir);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return -1;
}

std::string Endpoint(int port) { return "tcp://127.0.0.1:" + std::to_string(port); }

}  // namespace

TEST_CASE("a coordinator killed with -9 mid-run restarts from its journal and runs nothing twice",
          "[cluster][recovery]") {
  ScratchDir dir;
  const std::string workers = Endpoint(FreeTcpPort()), api = Endpoint(FreeTcpPort());
  NodeProc coord = StartCoordinator(dir, workers, api, "coord");
  NodeProc w1 = StartWorker(dir, coord, "w1", 2), w2 = StartWorker(dir, coord, "w2", 2);
  NodeProc coord2;
  Nodes guard{{&coord, &w1, &w2, &coord2}};
  REQUIRE(WaitFor([&] { return WorkerCount(coord) == 2; }, 5000));

  const int layers = 5, width = 4;
  std::string file = dir.Write(
      "p.yaml", LedgerPipeline("test.recovery", dir.path() + "/ledger", layers, width, "0.3"));
  CmdResult sub = Cli(coord, {"submit", file});
  REQUIRE(sub.exit_code == 0);
  const std::string run_id = sub.out.substr(0, sub.out.find('\n'));

  // Mid-run, with executions on both workers: the coordinator dies.
  REQUIRE(WaitFor([&] { return LedgerLines(dir) >= 6; }, 20000));
  ::kill(coord.pid, SIGKILL);
  WaitExit(coord.pid, 5000);
  coord.pid = -1;
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // workers notice the silence

  coord2 = StartCoordinator(dir, workers, api, "coord2", "coord");
  CHECK(coord2.listening["recovered_runs"] == 1);
  CHECK(coord2.listening["recovered_running"].get<int>() >= 1);  // the kill fell mid-task
  CHECK(coord2.listening["epoch"].get<int>() > coord.listening["epoch"].get<int>());
  auto summary = ParseJson(Cli(coord2, {"status", run_id, "--wait", "--json"}).out);
  INFO(dir.Read("coord2.err"));
  REQUIRE(summary.is_object());
  CHECK(summary["state"] == "SUCCESS");

  // Every task ran exactly once: no worker died, so nothing may run twice.
  auto counts = LedgerCounts(dir);
  CHECK(counts.size() == static_cast<size_t>(layers * width));
  for (const auto& [exec, n] : counts) {
    INFO(exec);
    CHECK(n == 1);
  }
  // The journal agrees: one SUCCESS per task, and the restart is visible.
  auto history = ParseJson(Cli(coord2, {"history", run_id, "--json"}).out);
  REQUIRE(history.is_array());
  std::map<std::string, int> successes;
  for (const auto& t : history) {
    if (t["to"] == "SUCCESS") ++successes[t["task_id"].get<std::string>()];
  }
  CHECK(successes.size() == static_cast<size_t>(layers * width));
  for (const auto& [task, n] : successes) CHECK(n == 1);
  const std::string log = dir.Read("coord2.err");
  CHECK(log.find("recovered 1 unfinished runs") != std::string::npos);
  CHECK(log.find("still holds") != std::string::npos);  // claimed, not requeued
  // "no worker claimed it" may appear too, and rightly: a kill that falls
  // between the commit of READY -> RUNNING and the DISPATCH leaves an
  // execution RUNNING in the journal that no worker ever got. It is
  // requeued; the ledger above shows it still ran exactly once.
}

TEST_CASE("results a killed worker never got acknowledged survive in its outbox",
          "[cluster][recovery]") {
  ScratchDir dir;
  const std::string workers = Endpoint(FreeTcpPort()), api = Endpoint(FreeTcpPort());
  NodeProc coord = StartCoordinator(dir, workers, api, "coord");
  NodeProc w1 = StartWorkerAt(dir, workers, "w1", 2);
  NodeProc coord2, w1b;
  Nodes guard{{&coord, &w1, &coord2, &w1b}};
  REQUIRE(WaitFor([&] { return WorkerCount(coord) == 1; }, 5000));

  std::string file =
      dir.Write("p.yaml", LedgerPipeline("test.outbox", dir.path() + "/ledger", 2, 2, "0.8"));
  CmdResult sub = Cli(coord, {"submit", file});
  REQUIRE(sub.exit_code == 0);
  const std::string run_id = sub.out.substr(0, sub.out.find('\n'));
  REQUIRE(WaitFor([&] { return LedgerLines(dir) == 2; }, 10000));

  // The coordinator dies while both first-layer tasks run; they finish with
  // nobody to ACK them; then the worker dies too, holding the only copy of
  // those results.
  ::kill(coord.pid, SIGKILL);
  WaitExit(coord.pid, 5000);
  coord.pid = -1;
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  ::kill(w1.pid, SIGKILL);
  WaitExit(w1.pid, 5000);
  w1.pid = -1;

  w1b = StartWorkerAt(dir, workers, "w1", 2, "w1b");
  coord2 = StartCoordinator(dir, workers, api, "coord2", "coord");
  auto summary = ParseJson(Cli(coord2, {"status", run_id, "--wait", "--json"}).out);
  INFO(dir.Read("coord2.err") + dir.Read("w1b.err"));
  REQUIRE(summary.is_object());
  CHECK(summary["state"] == "SUCCESS");
  for (const auto& [exec, n] : LedgerCounts(dir)) {
    INFO(exec);
    CHECK(n == 1);
  }
  CHECK(LedgerCounts(dir).size() == 4u);
  CHECK(dir.Read("w1b.err").find("restored from its outbox") != std::string::npos);
}

TEST_CASE("a worker restarted after kill -9 stops the task its previous process left running",
          "[cluster][recovery]") {
  ScratchDir dir;
  NodeProc coord = StartCoordinator(dir);
  NodeProc w1 = StartWorker(dir, coord, "w1", 1);
  NodeProc w1b;
  Nodes guard{{&coord, &w1, &w1b}};
  REQUIRE(WaitFor([&] { return WorkerCount(coord) == 1; }, 5000));
  // The first attempt writes its shell's pid (the group leader) and the pid
  // of a long sleep in its group; a requeued attempt writes its pid and ends.
  std::string file = dir.Write(
      "p.yaml",
      R"(version: "1.0"
name: test.orphan
pipeline:
  - id: long
    type: shell
    command: "echo $$ > )" +
          dir.path() +
          R"(/pid.$APOLLO11_ATTEMPT; if [ $APOLLO11_ATTEMPT = 1 ]; then sleep 120 & echo $! > )" +
          dir.path() + R"(/child.1; wait; fi"
)");
  CmdResult sub = Cli(coord, {"submit", file});
  REQUIRE(sub.exit_code == 0);
  const std::string run_id = sub.out.substr(0, sub.out.find('\n'));
  REQUIRE(WaitFor([&] { return dir.Read("child.1").find('\n') != std::string::npos; }, 10000));
  // The worker records the process group right after the spawn and logs
  // "started" after that; a kill between the two is the documented gap
  // (docs/delivery.md), so wait for the line. (Without this wait the test
  // failed once in CI under load.)
  REQUIRE(WaitFor(
      [&] { return dir.Read("w1.err").find(".long attempt 1 started") != std::string::npos; },
      10000));
  // The leader dies with the worker (PR_SET_PDEATHSIG); its child is what a
  // killed worker leaves once its death watch is gone too (killed here): the
  // restart's orphan guard is what stands in for a watch that failed.
  const pid_t orphan = std::stoi(dir.Read("child.1"));
  const pid_t watch = DeathWatchOf(w1.pid);
  REQUIRE(watch > 0);
  ::kill(watch, SIGKILL);
  auto stat = apollo11::executor::ReadProcStat(orphan);
  REQUIRE(stat.has_value());
  const uint64_t started = stat->start_time;
  auto orphan_alive = [&] {
    auto st = apollo11::executor::ReadProcStat(orphan);
    return st.has_value() && st->start_time == started && st->state != 'Z';
  };

  ::kill(w1.pid, SIGKILL);
  WaitExit(w1.pid, 5000);
  w1.pid = -1;
  REQUIRE(orphan_alive());  // its own process group: not killed with the worker

  const auto restart = std::chrono::steady_clock::now();
  w1b = StartWorker(dir, coord, "w1", 1, "default", "w1b");
  // Gone before the worker even said HELLO, so well within the default 2 s
  // kill grace plus start-up.
  CHECK(WaitFor([&] { return !orphan_alive(); }, 5000));
  const double gone_after =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - restart).count();
  auto summary = ParseJson(Cli(coord, {"status", run_id, "--wait", "--json"}).out);
  INFO(dir.Read("w1b.err") + dir.Read("coord.err"));
  REQUIRE(summary.is_object());
  CHECK(summary["state"] == "SUCCESS");
  CHECK(summary["tasks"]["long"]["attempts"] == 2);
  // The requeued copy never ran beside the orphan.
  CHECK(dir.Exists("pid.2"));
  CHECK_FALSE(orphan_alive());
  // The journal says why the task ran again; the worker's log says what it killed.
  auto history = ParseJson(Cli(coord, {"history", run_id + ".long", "--json"}).out);
  bool requeued = false;
  for (const auto& t : history) {
    if (t["from"] == "RUNNING" && t["to"] == "READY") {
      requeued = t.value("reason", "").find("worker w1") != std::string::npos;
    }
  }
  CHECK(requeued);
  const std::string log = dir.Read("w1b.err");
  CHECK(log.find(run_id + ".long attempt 1 was still running from before this worker restarted") !=
        std::string::npos);
  WARN("orphan gone " << gone_after << " s after the worker restart began");
}

TEST_CASE("apollo11 run --resume continues a run whose process was killed with -9",
          "[cluster][recovery]") {
  ScratchDir dir;
  std::string file =
      dir.Write("p.yaml", LedgerPipeline("test.resume", dir.path() + "/ledger", 4, 2, "0.2"));
  const std::string state = dir.path() + "/state";
  pid_t first = SpawnNamed(
      {Apollo11(), "run", file, "--state-dir", state, "--slots", "2", "--heartbeat", "100ms"},
      dir.path(), "first");
  REQUIRE(first > 0);
  REQUIRE(WaitFor([&] { return LedgerLines(dir) >= 3; }, 20000));
  ::kill(first, SIGKILL);
  WaitExit(first, 5000);
  std::string err = dir.Read("first.err");
  auto at = err.find("run ");
  REQUIRE(at != std::string::npos);
  const std::string run_id = err.substr(at + 4, err.find(' ', at + 4) - at - 4);

  // A new run of another file is not hijacked, but told about the old one.
  CmdResult other = Run({Apollo11(), "run",
                         dir.Write("other.yaml",
                                   "version: \"1.0\"\nname: test.other\npipeline:\n"
                                   "  - id: x\n    type: noop\n"),
                         "--state-dir", state});
  CHECK(other.exit_code == 0);
  CHECK(other.err.find("apollo11 run --resume " + run_id) != std::string::npos);

  CmdResult resumed = Run({Apollo11(), "run", "--resume", run_id, "--state-dir", state, "--slots",
                           "2", "--heartbeat", "100ms", "--json"});
  INFO(resumed.err);
  REQUIRE(resumed.exit_code == 0);
  auto summary = ParseJson(resumed.out);
  CHECK(summary["state"] == "SUCCESS");
  CHECK(resumed.err.find("resumed") != std::string::npos);
  // Tasks that were running when the process died may have run twice (their
  // processes were orphaned, then requeued); the others ran once, and every
  // task ran.
  auto counts = LedgerCounts(dir);
  CHECK(counts.size() == 8u);
  int twice = 0;
  for (const auto& [exec, n] : counts) {
    CHECK(n <= 2);
    twice += n == 2 ? 1 : 0;
  }
  CHECK(twice <= 2);  // at most the two slots busy at the kill

  // Resuming a finished run says so and changes nothing.
  CmdResult again = Run({Apollo11(), "run", "--resume", run_id, "--state-dir", state});
  CHECK(again.exit_code == 0);
  CHECK(again.err.find("already ended SUCCESS") != std::string::npos);
}
