// foreach fan-out through the real binaries: a coordinator and a worker
// (apollo11-node) or an embedded `apollo11 run`, the instances' commands
// appending to a ledger file, the journal read back with `status --json`.

#include <signal.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "tests/actors/cli_harness.h"
#include "tests/actors/cluster_harness.h"

using namespace apollo11::testing;  // NOLINT: test file

namespace {

std::string Endpoint() { return "tcp://127.0.0.1:" + std::to_string(FreeTcpPort()); }

// The most instances of `task` whose [started, finished] spans overlap.
int MaxOverlap(const nlohmann::json& tasks, const std::string& task) {
  std::vector<std::pair<int64_t, int>> events;
  for (const auto& [id, t] : tasks.items()) {
    if (id.rfind(task + "[", 0) != 0) continue;
    events.emplace_back(t.value("started_at_us", int64_t{0}), 1);
    events.emplace_back(t.value("finished_at_us", int64_t{0}), -1);
  }
  std::sort(events.begin(), events.end());  // an end before a start at the same µs
  int now = 0, most = 0;
  for (const auto& e : events) most = std::max(most, now += e.second);
  return most;
}

}  // namespace

TEST_CASE("foreach over 50 lines with max_parallel 5 runs each item once, at most 5 at a time",
          "[cluster][foreach]") {
  ScratchDir dir;
  NodeProc coord = StartCoordinator(dir);
  NodeProc w1 = StartWorker(dir, coord, "w1", 12);
  Nodes guard{{&coord, &w1}};
  REQUIRE(WaitFor([&] { return WorkerCount(coord) == 1; }, 5000));
  const std::string ledger = dir.path() + "/ledger";
  const std::string file = dir.Write("p.yaml", R"(version: "1.0"
name: test.foreach
pipeline:
  - id: gen
    type: shell
    command: "seq 1 50 | sed 's/^/item /'"
  - id: work
    type: shell
    depends_on: [gen]
    foreach: gen
    max_parallel: 5
    command: "echo ${item}=$APOLLO11_ITEM_INDEX >> )" +
                                                   ledger + R"(; sleep 0.1"
  - id: after
    type: shell
    depends_on: [work]
    command: "true"
)");
  CmdResult sub = Cli(coord, {"submit", file});
  INFO(sub.err);
  REQUIRE(sub.exit_code == 0);
  const std::string run_id = sub.out.substr(0, sub.out.find('\n'));
  auto summary = ParseJson(Cli(coord, {"status", run_id, "--wait", "--json"}).out);
  INFO(summary.dump());
  REQUIRE(summary.is_object());
  CHECK(summary["state"] == "SUCCESS");
  CHECK(summary["tasks"]["work"]["state"] == "SUCCESS");
  CHECK(summary["tasks"]["after"]["state"] == "SUCCESS");
  CHECK(summary["tasks"]["work[49]"]["item"] == "item 50");
  // Each item reached its command once, shell-quoted (the space survived).
  std::vector<std::string> lines = NonEmptyLines(dir.Read("ledger"));
  std::sort(lines.begin(), lines.end());
  std::vector<std::string> want;
  for (int i = 0; i < 50; ++i)
    want.push_back("item " + std::to_string(i + 1) + "=" + std::to_string(i));
  std::sort(want.begin(), want.end());
  CHECK(lines == want);
  const int most = MaxOverlap(summary["tasks"], "work");
  CHECK(most <= 5);
  CHECK(most >= 2);  // they did run side by side
  // The journal's history shows the expansion and the instances.
  CmdResult hist = Cli(coord, {"history", run_id, "--json"});
  CHECK(hist.out.find("expanded into 50 instances (max_parallel 5)") != std::string::npos);
  CHECK(hist.out.find("work[49]") != std::string::npos);
}

TEST_CASE("foreach items from a JSON array in the upstream's output", "[cluster][foreach]") {
  ScratchDir dir;
  const std::string ledger = dir.path() + "/ledger";
  const std::string file = dir.Write("p.yaml", R"(version: "1.0"
name: test.foreachjson
pipeline:
  - id: list
    type: shell
    command: "printf '{\"data\": {\"files\": [\"a b\", \"it'\\''s\", 3]}}' > \"$APOLLO11_OUTPUT\""
  - id: each
    type: shell
    depends_on: [list]
    foreach: {task: list, items: output.data.files}
    command: "printf '%s|%s\n' ${item} \"$APOLLO11_ITEM\" >> )" +
                                                   ledger + R"("
)");
  CmdResult run = Run({Apollo11(), "run", file, "--state-dir", dir.path() + "/s", "--json"});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  std::vector<std::string> lines = NonEmptyLines(dir.Read("ledger"));
  std::sort(lines.begin(), lines.end());
  CHECK(lines == std::vector<std::string>{"3|3", "a b|a b", "it's|it's"});
}

TEST_CASE("an empty foreach list is SKIPPED with a reason, too many items FAILED",
          "[cluster][foreach]") {
  ScratchDir dir;
  NodeProc coord = StartNode(dir, "coord",
                             {"--role", "coordinator", "--bind", Endpoint(), "--api-bind",
                              Endpoint(), "--max-foreach-items", "3"});
  NodeProc w1 = StartWorker(dir, coord, "w1", 4);
  Nodes guard{{&coord, &w1}};
  REQUIRE(WaitFor([&] { return WorkerCount(coord) == 1; }, 5000));
  const std::string file = dir.Write("p.yaml", R"(version: "1.0"
name: test.foreachedge
pipeline:
  - id: none
    type: shell
    command: "true"
  - id: empty
    type: shell
    depends_on: [none]
    foreach: none
    command: "echo ${item}"
  - id: many
    type: shell
    command: "seq 1 4"
  - id: over
    type: shell
    depends_on: [many]
    foreach: many
    command: "echo ${item}"
)");
  CmdResult sub = Cli(coord, {"submit", file});
  REQUIRE(sub.exit_code == 0);
  const std::string run_id = sub.out.substr(0, sub.out.find('\n'));
  auto summary = ParseJson(Cli(coord, {"status", run_id, "--wait", "--json"}).out);
  INFO(summary.dump());
  REQUIRE(summary.is_object());
  CHECK(summary["tasks"]["empty"]["state"] == "SKIPPED");
  CHECK(summary["tasks"]["empty"]["error"] == "foreach over none's output lines: no items");
  CHECK(summary["tasks"]["over"]["state"] == "FAILED");
  CHECK(summary["tasks"]["over"]["error"] ==
        "foreach over many's output lines gave 4 items, over the cap of 3 (the coordinator's "
        "--max-foreach-items)");
  CHECK_FALSE(summary["tasks"].contains("over[0]"));
}

TEST_CASE("a coordinator killed -9 mid-foreach recovers it and runs no instance twice",
          "[cluster][foreach][recovery]") {
  ScratchDir dir;
  const std::string workers = Endpoint(), api = Endpoint();
  NodeProc coord = StartCoordinator(dir, workers, api, "coord");
  NodeProc w1 = StartWorker(dir, coord, "w1", 4);
  NodeProc coord2;
  Nodes guard{{&coord, &w1, &coord2}};
  REQUIRE(WaitFor([&] { return WorkerCount(coord) == 1; }, 5000));
  const std::string ledger = dir.path() + "/ledger";
  const std::string file = dir.Write("p.yaml", R"(version: "1.0"
name: test.foreachkill
pipeline:
  - id: gen
    type: shell
    command: "seq 0 19"
  - id: work
    type: shell
    depends_on: [gen]
    foreach: gen
    max_parallel: 2
    command: "echo $APOLLO11_ITEM >> )" + ledger + R"(; sleep 0.3"
)");
  CmdResult sub = Cli(coord, {"submit", file});
  REQUIRE(sub.exit_code == 0);
  const std::string run_id = sub.out.substr(0, sub.out.find('\n'));
  REQUIRE(WaitFor([&] { return NonEmptyLines(dir.Read("ledger")).size() >= 5; }, 20000));
  ::kill(coord.pid, SIGKILL);
  WaitExit(coord.pid, 5000);
  coord.pid = -1;
  REQUIRE(NonEmptyLines(dir.Read("ledger")).size() < 20);  // killed mid-foreach
  coord2 = StartCoordinator(dir, workers, api, "coord2", "coord");
  CHECK(coord2.listening["recovered_runs"] == 1);
  auto summary = ParseJson(Cli(coord2, {"status", run_id, "--wait", "--json"}).out);
  INFO(summary.dump());
  INFO(dir.Read("coord2.err"));
  REQUIRE(summary.is_object());
  CHECK(summary["state"] == "SUCCESS");
  CHECK(summary["tasks"]["work"]["state"] == "SUCCESS");
  std::vector<std::string> lines = NonEmptyLines(dir.Read("ledger"));
  std::map<std::string, int> runs;
  for (const std::string& l : lines) ++runs[l];
  CHECK(runs.size() == 20);
  for (const auto& [item, n] : runs) {
    INFO(item);
    CHECK(n == 1);
  }
  CHECK(MaxOverlap(summary["tasks"], "work") <= 2);
}
