// A task's JSON output is journaled with its SUCCESS: a coordinator killed
// with -9 after the upstream succeeded and before its dependent started
// restarts from its journal, and the dependent's template still gets the
// upstream's value; the upstream does not run again.

#include <signal.h>

#include <catch2/catch.hpp>
#include <map>
#include <thread>

#include "tests/actors/cli_harness.h"
#include "tests/actors/cluster_harness.h"

using namespace apollo11::testing;  // NOLINT: test file

TEST_CASE("a task output survives a coordinator kill -9 and feeds the dependent's template",
          "[cluster][recovery][output]") {
  ScratchDir dir;
  const std::string workers = "tcp://127.0.0.1:" + std::to_string(FreeTcpPort());
  const std::string api = "tcp://127.0.0.1:" + std::to_string(FreeTcpPort());
  NodeProc coord = StartCoordinator(dir, workers, api, "coord");
  NodeProc w1 = StartWorker(dir, coord, "w1", 2);
  NodeProc coord2;
  Nodes guard{{&coord, &w1, &coord2}};
  REQUIRE(WaitFor([&] { return WorkerCount(coord) == 1; }, 5000));

  const std::string d = dir.path();
  const std::string file = dir.Write(
      "p.yaml", R"(version: "1.0"
name: test.outrecovery
pipeline:
  - id: a
    type: shell
    command: "echo ran >> )" +
                    d +
                    R"(/a.ledger; printf '{\"x\": \"v1 $(no) ;it'\\''s\"}' > \"$APOLLO11_OUTPUT\""
  - id: gate
    type: shell
    command: "while [ ! -e )" +
                    d + R"(/go ]; do sleep 0.05; done"
  - id: b
    type: shell
    depends_on: [a, gate]
    command: "printf %s ${tasks.a.output.x} > )" +
                    d + R"(/b.out"
)");
  CmdResult sub = Cli(coord, {"submit", file});
  REQUIRE(sub.exit_code == 0);
  const std::string run_id = sub.out.substr(0, sub.out.find('\n'));
  REQUIRE(WaitFor(
      [&] {
        auto s = ParseJson(Cli(coord, {"status", run_id, "--json"}).out);
        return s.is_object() && s["tasks"]["a"]["state"] == "SUCCESS";
      },
      20000));

  ::kill(coord.pid, SIGKILL);
  WaitExit(coord.pid, 5000);
  coord.pid = -1;
  coord2 = StartCoordinator(dir, workers, api, "coord2", "coord");
  CHECK(coord2.listening["recovered_runs"] == 1);
  dir.Write("go", "");
  auto summary = ParseJson(Cli(coord2, {"status", run_id, "--wait", "--json"}).out);
  INFO(dir.Read("coord2.err"));
  REQUIRE(summary.is_object());
  CHECK(summary["state"] == "SUCCESS");
  CHECK(summary["tasks"]["a"]["output"]["x"] == "v1 $(no) ;it's");
  CHECK(dir.Read("b.out") == "v1 $(no) ;it's");  // shell-quoted: nothing ran, quote intact
  CHECK(dir.Read("a.ledger") == "ran\n");        // a ran once
}
