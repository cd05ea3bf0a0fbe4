// What the on-call engineer reads (docs/operations.md, the runbook): the CLI
// answers must say why, not only what. Real coordinator and worker processes,
// heartbeat 100 ms, liveness 3.

#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>

#include "tests/actors/cli_harness.h"
#include "tests/actors/cluster_harness.h"

using apollo11::testing::Apollo11;
using apollo11::testing::Cli;
using apollo11::testing::CmdResult;
using apollo11::testing::NodeProc;
using apollo11::testing::Nodes;
using apollo11::testing::ParseJson;
using apollo11::testing::Run;
using apollo11::testing::ScratchDir;
using apollo11::testing::StartCoordinator;
using apollo11::testing::StartNode;
using apollo11::testing::StartWorker;
using apollo11::testing::WaitFor;
using apollo11::testing::WorkerCount;

namespace {

std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

// The status table row of `task`, or "" when there is none.
std::string Row(const std::string& table, const std::string& task) {
  size_t at = table.find("\n  " + task + " ");
  if (at == std::string::npos) return "";
  at += 1;
  return table.substr(at, table.find('\n', at) - at);
}

}  // namespace

TEST_CASE("workers shows labels, and a flapping worker's losses and when it came back",
          "[cluster][oncall]") {
  ScratchDir dir;
  NodeProc coord = StartCoordinator(dir);
  NodeProc w1;
  Nodes guard{{&coord, &w1}};

  // No worker yet: a sentence, not a bare header.
  CmdResult none = Cli(coord, {"workers"});
  CHECK(none.exit_code == 0);
  CHECK(none.out.find("no worker is connected") != std::string::npos);

  w1 = StartNode(dir, "w1",
                 {"--role", "worker", "--connect", coord.listening["workers"].get<std::string>(),
                  "--worker-id", "w1", "--slots", "1", "--labels", "ssd,gpu"});
  REQUIRE(WaitFor([&] { return WorkerCount(coord) == 1; }, 5000));
  auto first = ParseJson(Cli(coord, {"workers", "--json"}).out);
  REQUIRE(first.size() == 1);
  CHECK(first[0]["losses"] == 0);
  const std::string joined = first[0].value("connected_since", "");
  CHECK_FALSE(joined.empty());

  // Stopped for well over liveness x heartbeat (300 ms), twice: lost twice.
  for (int i = 0; i < 2; ++i) {
    ::kill(w1.pid, SIGSTOP);
    REQUIRE(WaitFor([&] { return WorkerCount(coord) == 0; }, 5000));
    ::kill(w1.pid, SIGCONT);
    REQUIRE(WaitFor([&] { return WorkerCount(coord) == 1; }, 5000));
  }
  auto after = ParseJson(Cli(coord, {"workers", "--json"}).out);
  REQUIRE(after.size() == 1);
  CHECK(after[0]["losses"] == 2);
  CHECK(after[0].value("connected_since", "") > joined);

  CmdResult table = Cli(coord, {"workers"});
  INFO(table.out);
  CHECK(table.out.find("CONNECTED SINCE") != std::string::npos);
  CHECK(table.out.find("LOST") != std::string::npos);
  const std::string row = table.out.substr(table.out.find("\nw1 ") + 1);
  CHECK(row.find(after[0].value("connected_since", "") + "    2  gpu,ssd") != std::string::npos);
}

TEST_CASE("status says why a task failed by itself, and shows no exit code for one that never ran",
          "[e2e][oncall]") {
  ScratchDir dir;
  std::string file = dir.Write("fail.yaml", R"(version: "1.0"
name: test.oncall_failures
pipeline:
  - id: render
    type: shell
    command: invoice-render-not-installed --month 11
  - id: upload
    type: shell
    command: kill -KILL $$
  - id: notify
    type: shell
    command: "true"
    depends_on: render
)");
  CmdResult run =
      Run({Apollo11(), "run", file, "--state-dir", dir.path() + "/state", "--json"}, dir.path());
  INFO(run.out << run.err);
  CHECK(run.exit_code == 1);
  const std::string run_id = ParseJson(run.out)["run_id"].get<std::string>();

  CmdResult status = Run({Apollo11(), "status", run_id, "--state-dir", dir.path() + "/state"});
  INFO(status.out);
  REQUIRE(status.exit_code == 0);
  CHECK(Row(status.out, "render").find("127") != std::string::npos);
  CHECK(Row(status.out, "render").find("command not found") != std::string::npos);
  CHECK(Row(status.out, "upload").find("killed by signal 9 (SIGKILL); not sent by Apollo-11") !=
        std::string::npos);
  // notify was canceled before it ran: "-", not a 0 that reads as success.
  const std::string notify = Row(status.out, "notify");
  CHECK(notify.find("CANCELED") != std::string::npos);
  CHECK(notify.find("        0     -") != std::string::npos);
}

TEST_CASE(
    "logs of a silent task points to trace, and a slow-task flag is a coordinator event in it",
    "[cluster][oncall][slow]") {
  ScratchDir dir;
  NodeProc coord = StartNode(dir, "coord",
                             {"--role", "coordinator", "--bind", "tcp://127.0.0.1:0", "--api-bind",
                              "tcp://127.0.0.1:0", "--slow-min", "300ms"});
  NodeProc w1 = StartWorker(dir, coord, "w1", 1);
  Nodes guard{{&coord, &w1}};
  REQUIRE(WaitFor([&] { return WorkerCount(coord) == 1; }, 5000));
  const std::string file = dir.Write("slow.yaml",
                                     "version: \"1.0\"\nname: test.oncall_slow\npipeline:\n"
                                     "  - id: work\n    type: shell\n"
                                     "    command: \"exec sleep $(cat " +
                                         dir.path() + "/sleep_s)\"\n");
  dir.Write("sleep_s", "0.1");
  CmdResult fast = Cli(coord, {"submit", file, "--wait"});
  REQUIRE(fast.exit_code == 0);
  // It wrote nothing: logs says so, and where to look instead; printing
  // nothing is not a failure (issue 19).
  const std::string fast_exec = FirstLine(fast.out) + ".work";
  CmdResult silent = Cli(coord, {"logs", fast_exec});
  CHECK(silent.exit_code == 0);
  CHECK(silent.err.find("has no stdout log for " + fast_exec) != std::string::npos);
  CHECK(silent.err.find("how it ended: apollo11 trace " + fast_exec) != std::string::npos);
  dir.Write("sleep_s", "60");
  const std::string exec = FirstLine(Cli(coord, {"submit", file}).out) + ".work";

  nlohmann::json flagged;
  REQUIRE(WaitFor(
      [&] {
        CmdResult t = Cli(coord, {"trace", exec, "--json"});
        flagged = nlohmann::json();
        for (const auto& e : ParseJson(t.out)) {
          if (e.value("event", "") == "slow_task") flagged = e;
        }
        return flagged.is_object();
      },
      10000));
  INFO(flagged.dump());
  CHECK(flagged.value("attempt", 0) == 1);
  CHECK(flagged.value("text", "").find(exec + " attempt 1 on worker w1 flagged slow") !=
        std::string::npos);
  CHECK(Cli(coord, {"confirm", exec, "--kill"}).exit_code == 0);
}
