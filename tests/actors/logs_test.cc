// `apollo11 logs`: a task's captured output, fetched through the coordinator
// from the worker that ran it (also after that worker restarted), followed
// while it runs, and read from a local state dir after an embedded run.

#include <signal.h>

#include <catch2/catch.hpp>
#include <thread>

#include "tests/actors/cli_harness.h"
#include "tests/actors/cluster_harness.h"

using namespace apollo11::testing;  // NOLINT: test file

namespace {

std::string RunIdOf(const CmdResult& submit) { return submit.out.substr(0, submit.out.find('\n')); }

}  // namespace

TEST_CASE("logs come from the worker that ran the attempt, also after it restarted",
          "[cluster][logs]") {
  ScratchDir dir;
  const std::string workers = "tcp://127.0.0.1:" + std::to_string(FreeTcpPort());
  NodeProc coord = StartCoordinator(dir, workers);
  NodeProc w1 = StartWorkerAt(dir, workers, "w1", 2), w1b;
  Nodes guard{{&coord, &w1, &w1b}};
  REQUIRE(WaitFor([&] { return WorkerCount(coord) == 1; }, 5000));
  const std::string marks = dir.path();
  std::string file =
      dir.Write("p.yaml", R"(version: "1.0"
name: test.logs
pipeline:
  - id: talk
    type: shell
    command: "echo hello-out; echo oops >&2"
  - id: flaky
    type: shell
    command: "echo attempt $APOLLO11_ATTEMPT; test -e )" +
                              marks + R"(/once && exit 0; touch )" + marks + R"(/once; exit 1"
    retry: {max_retries: 2, delay: 50ms}
)");
  CmdResult sub = Cli(coord, {"submit", file, "--wait"});
  REQUIRE(sub.exit_code == 0);
  const std::string run_id = RunIdOf(sub);

  CmdResult out = Cli(coord, {"logs", run_id + ".talk"});
  CHECK(out.exit_code == 0);
  CHECK(out.out == "hello-out\n");
  CmdResult err = Cli(coord, {"logs", run_id + ".talk", "--stderr"});
  CHECK(err.out == "oops\n");
  CHECK(Cli(coord, {"logs", run_id + ".flaky"}).out == "attempt 2\n");
  CHECK(Cli(coord, {"logs", run_id + ".flaky", "--attempt", "1"}).out == "attempt 1\n");
  // Each attempt's worker is journaled as a field of its READY -> RUNNING
  // transition, which is where `logs --attempt` finds it.
  auto history = ParseJson(Cli(coord, {"history", run_id + ".flaky", "--json"}).out);
  int placements = 0;
  for (const auto& t : history) {
    if (t.value("to", "") != "RUNNING") continue;
    ++placements;
    CHECK(t.value("worker", "") == "w1");
  }
  CHECK(placements == 2);

  // The worker is killed and comes back: its files are still served.
  ::kill(w1.pid, SIGKILL);
  WaitExit(w1.pid, 5000);
  w1.pid = -1;
  w1b = StartWorkerAt(dir, workers, "w1", 2, "w1b");
  REQUIRE(WaitFor(
      [&] {
        return Cli(coord, {"logs", run_id + ".talk"}).out == "hello-out\n";
      },
      5000));

  CmdResult missing = Cli(coord, {"logs", run_id + ".nope"});
  CHECK(missing.exit_code == 2);
  CHECK(missing.err.find("no execution") != std::string::npos);
}

TEST_CASE("logs --follow prints a running task's output until it ends", "[cluster][logs]") {
  ScratchDir dir;
  NodeProc coord = StartCoordinator(dir);
  NodeProc w1 = StartWorker(dir, coord, "w1", 1);
  Nodes guard{{&coord, &w1}};
  REQUIRE(WaitFor([&] { return WorkerCount(coord) == 1; }, 5000));
  std::string file = dir.Write("p.yaml", R"(version: "1.0"
name: test.follow
pipeline:
  - id: ticker
    type: shell
    command: "for i in 1 2 3 4 5; do echo tick $i; sleep 0.2; done"
)");
  CmdResult sub = Cli(coord, {"submit", file});
  REQUIRE(sub.exit_code == 0);
  const std::string exec = RunIdOf(sub) + ".ticker";
  REQUIRE(WaitFor(
      [&] {
        auto s = ParseJson(Cli(coord, {"status", RunIdOf(sub), "--json"}).out);
        return s.is_object() && s["tasks"]["ticker"]["state"] == "RUNNING";
      },
      5000));
  CmdResult follow = Cli(coord, {"logs", exec, "--follow"});
  CHECK(follow.exit_code == 0);
  CHECK(follow.out == "tick 1\ntick 2\ntick 3\ntick 4\ntick 5\n");
}

TEST_CASE("logs of an embedded run are read from the local state dir", "[logs]") {
  ScratchDir dir;
  std::string file = dir.Write("p.yaml", R"(version: "1.0"
name: test.locallogs
pipeline:
  - id: a
    type: shell
    command: "echo local-output"
)");
  CmdResult run = Run({Apollo11(), "run", file, "--state-dir", dir.path() + "/s", "--json"});
  REQUIRE(run.exit_code == 0);
  const std::string run_id = ParseJson(run.out)["run_id"];
  CmdResult logs = Run({Apollo11(), "logs", run_id + ".a", "--state-dir", dir.path() + "/s"});
  CHECK(logs.exit_code == 0);
  CHECK(logs.out == "local-output\n");
}
