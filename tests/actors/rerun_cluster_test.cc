// `apollo11 rerun` through the real binaries: a coordinator and a worker
// (apollo11-node), or an embedded state dir. Every task appends its name to
// a ledger (its side effect), so a reused task is seen not to run again; the
// middle task fails while a flag file exists, once.

#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/actors/cli_harness.h"
#include "tests/actors/cluster_harness.h"

using namespace apollo11::testing;  // NOLINT: test file

namespace {

constexpr const char* kToken = "test-token-0123456789abcdef";

std::string Endpoint() { return "tcp://127.0.0.1:" + std::to_string(FreeTcpPort()); }

// extract (JSON output {"rows": 42}) -> transform (fails once while FLAG
// exists; sleeps while SLOW exists) -> load (reads extract's output through a
// template); side after extract.
std::string Pipeline(const ScratchDir& dir) {
  const std::string ledger = dir.path() + "/ledger", flag = dir.path() + "/fail-once",
                    slow = dir.path() + "/slow";
  return R"(version: "1.0"
name: test.rerun
pipeline:
  - id: extract
    type: shell
    command: "echo extract >> )" +
         ledger + R"(; echo '{\"rows\": 42}' > $APOLLO11_OUTPUT"
  - id: transform
    type: shell
    depends_on: [extract]
    command: "echo transform >> )" +
         ledger + R"(; while [ -e )" + slow + R"( ]; do sleep 0.05; done; if [ -e )" + flag +
         R"( ]; then rm )" + flag + R"(; exit 1; fi"
  - id: load
    type: shell
    depends_on: [transform]
    command: "echo load rows=${tasks.extract.output.rows} >> )" +
         ledger + R"("
  - id: side
    type: shell
    depends_on: [extract]
    command: "echo side >> )" +
         ledger + R"("
)";
}

// How many times each task ran, from the ledger ("load rows=42" counts as
// load, and is kept whole in `lines`).
std::map<std::string, int> Ran(const ScratchDir& dir, std::vector<std::string>* lines = nullptr) {
  std::map<std::string, int> counts;
  std::istringstream in(dir.Read("ledger"));
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    ++counts[line.substr(0, line.find(' '))];
    if (lines) lines->push_back(line);
  }
  return counts;
}

std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

// The reasons of the run's transitions into SUCCESS, by task.
std::map<std::string, std::string> SuccessReasons(const NodeProc& coord, const std::string& run) {
  std::map<std::string, std::string> out;
  auto history = ParseJson(Cli(coord, {"history", run, "--json"}).out);
  for (const auto& t : history) {
    if (t["to"] == "SUCCESS") out[t["task_id"].get<std::string>()] = t["reason"];
  }
  return out;
}

}  // namespace

TEST_CASE("rerun --failed on a node reuses what succeeded, with its outputs, and ends SUCCESS",
          "[cluster][rerun]") {
  ScratchDir dir;
  NodeProc coord = StartCoordinator(dir);
  NodeProc w1 = StartWorker(dir, coord, "w1", 2);
  Nodes guard{{&coord, &w1}};
  REQUIRE(WaitFor([&] { return WorkerCount(coord) == 1; }, 5000));
  dir.Write("fail-once", "");
  const std::string file = dir.Write("p.yaml", Pipeline(dir));

  CmdResult first = Cli(coord, {"submit", file, "--wait", "--json"});
  INFO(first.out << first.err);
  REQUIRE(first.exit_code != 0);
  const std::string original = ParseJson(first.out).value("run_id", "");
  auto failed = ParseJson(Cli(coord, {"status", original, "--json"}).out);
  REQUIRE(failed["state"] == "FAILED");
  CHECK(failed["tasks"]["transform"]["state"] == "FAILED");
  CHECK(failed["tasks"]["load"]["state"] == "CANCELED");

  CmdResult rerun = Cli(coord, {"rerun", original, "--failed", "--wait", "--json"});
  INFO(rerun.out << rerun.err);
  REQUIRE(rerun.exit_code == 0);
  const std::string second = ParseJson(rerun.out).value("run_id", "");
  auto status = ParseJson(Cli(coord, {"status", second, "--json"}).out);
  INFO(status.dump());
  CHECK(status["state"] == "SUCCESS");
  CHECK(status["rerun_of"] == original);
  CHECK(status["tasks"]["extract"]["reused_from"] == original);
  CHECK(status["tasks"]["extract"]["attempts"] == 0);
  CHECK(status["tasks"]["extract"]["output"]["rows"] == 42);  // kept with the SUCCESS
  CHECK(status["tasks"]["side"]["reused_from"] == original);
  CHECK_FALSE(status["tasks"]["transform"].contains("reused_from"));

  // The side-effect ledger: extract and side ran once (in the original
  // run), transform twice, and load once, with extract's reused output.
  std::vector<std::string> lines;
  auto ran = Ran(dir, &lines);
  CHECK(ran["extract"] == 1);
  CHECK(ran["side"] == 1);
  CHECK(ran["transform"] == 2);
  CHECK(ran["load"] == 1);
  CHECK(std::count(lines.begin(), lines.end(), "load rows=42") == 1);

  // Linked both ways in what operators read: history, runs, the API.
  auto reasons = SuccessReasons(coord, second);
  CHECK(reasons["extract"] == "reused from " + original);
  CHECK(reasons["side"] == "reused from " + original);
  CHECK(reasons["transform"] == "exited 0");
  auto runs = ParseJson(Cli(coord, {"runs", "--json"}).out);
  bool listed = false;
  for (const auto& r : runs) listed |= r["run_id"] == second && r["rerun_of"] == original;
  CHECK(listed);
  CmdResult text = Cli(coord, {"runs"});
  CHECK(text.out.find("rerun of " + original) != std::string::npos);
}

TEST_CASE("rerun --failed of a foreach task reruns only the items that failed",
          "[cluster][rerun][foreach]") {
  ScratchDir dir;
  NodeProc coord = StartCoordinator(dir);
  NodeProc w1 = StartWorker(dir, coord, "w1", 2);
  Nodes guard{{&coord, &w1}};
  REQUIRE(WaitFor([&] { return WorkerCount(coord) == 1; }, 5000));
  // Four items, two at a time; item c fails while the flag exists.
  const std::string ledger = dir.path() + "/ledger", flag = dir.path() + "/fail-c";
  dir.Write("fail-c", "");
  const std::string file = dir.Write("fan.yaml", R"(version: "1.0"
name: test.fanrerun
pipeline:
  - id: list
    type: shell
    command: "printf 'a\nb\nc\nd\n'"
  - id: each
    type: shell
    depends_on: [list]
    foreach: list
    max_parallel: 2
    command: "echo item-$APOLLO11_ITEM >> )" + ledger +
                                                     R"(; if [ $APOLLO11_ITEM = c ] && [ -e )" +
                                                     flag + R"( ]; then rm )" + flag +
                                                     R"(; exit 1; fi"
  - id: after
    type: noop
    depends_on: [each]
)");
  CmdResult first = Cli(coord, {"submit", file, "--wait", "--json"});
  INFO(first.out << first.err);
  REQUIRE(first.exit_code != 0);
  const std::string original = ParseJson(first.out).value("run_id", "");
  CHECK(ParseJson(first.out)["tasks"]["each[2]"]["state"] == "FAILED");

  CmdResult rerun = Cli(coord, {"rerun", original, "--failed", "--wait", "--json"});
  INFO(rerun.out << rerun.err);
  REQUIRE(rerun.exit_code == 0);
  const auto status = ParseJson(rerun.out);
  CHECK(status["state"] == "SUCCESS");
  for (const char* reused : {"each[0]", "each[1]", "each[3]"}) {
    CHECK(status["tasks"][reused]["reused_from"] == original);
    CHECK(status["tasks"][reused]["attempts"] == 0);
  }
  CHECK(status["tasks"]["each[2]"]["attempts"] == 1);
  CHECK_FALSE(status["tasks"]["each[2]"].contains("reused_from"));
  CHECK(status["tasks"]["list"]["reused_from"] == original);
  // The ledger: a, b and d ran once (in the original), c twice.
  std::map<std::string, int> ran;
  std::istringstream in(dir.Read("ledger"));
  for (std::string line; std::getline(in, line);) ++ran[line];
  CHECK(ran ==
        std::map<std::string, int>{{"item-a", 1}, {"item-b", 1}, {"item-c", 2}, {"item-d", 1}});
  // --from reruns every item.
  CmdResult from = Cli(coord, {"rerun", original, "--from", "each", "--wait", "--json"});
  REQUIRE(from.exit_code == 0);
  ran.clear();
  std::istringstream again(dir.Read("ledger"));
  for (std::string line; std::getline(again, line);) ++ran[line];
  CHECK(ran ==
        std::map<std::string, int>{{"item-a", 2}, {"item-b", 2}, {"item-c", 3}, {"item-d", 2}});
}

TEST_CASE("rerun --from TASK with and without --downstream", "[cluster][rerun]") {
  ScratchDir dir;
  NodeProc coord = StartCoordinator(dir);
  NodeProc w1 = StartWorker(dir, coord, "w1", 2);
  Nodes guard{{&coord, &w1}};
  REQUIRE(WaitFor([&] { return WorkerCount(coord) == 1; }, 5000));
  const std::string file = dir.Write("p.yaml", Pipeline(dir));
  CmdResult first = Cli(coord, {"submit", file, "--wait"});
  REQUIRE(first.exit_code == 0);
  const std::string original = FirstLine(first.out);

  CmdResult down = Cli(coord, {"rerun", original, "--from", "transform", "--downstream", "--wait"});
  INFO(down.out << down.err);
  REQUIRE(down.exit_code == 0);
  auto ran = Ran(dir);
  CHECK(ran["extract"] == 1);
  CHECK(ran["side"] == 1);
  CHECK(ran["transform"] == 2);
  CHECK(ran["load"] == 2);
  auto reasons = SuccessReasons(coord, FirstLine(down.out));
  CHECK(reasons["load"] == "exited 0");

  // Without --downstream only transform runs; load keeps its SUCCESS.
  CmdResult alone = Cli(coord, {"rerun", original, "--from", "transform", "--wait", "--json"});
  INFO(alone.out << alone.err);
  REQUIRE(alone.exit_code == 0);
  ran = Ran(dir);
  CHECK(ran["transform"] == 3);
  CHECK(ran["load"] == 2);
  CHECK(SuccessReasons(coord, ParseJson(alone.out).value("run_id", ""))["load"] ==
        "reused from " + original);
}

TEST_CASE("rerun refuses an unknown run, an unknown task and a run still running",
          "[cluster][rerun]") {
  ScratchDir dir;
  NodeProc coord = StartCoordinator(dir);
  NodeProc w1 = StartWorker(dir, coord, "w1", 2);
  Nodes guard{{&coord, &w1}};
  REQUIRE(WaitFor([&] { return WorkerCount(coord) == 1; }, 5000));
  const std::string file = dir.Write("p.yaml", Pipeline(dir));

  CmdResult unknown = Cli(coord, {"rerun", "20260101T000000-abcd"});
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.err.find("no run 20260101T000000-abcd") != std::string::npos);

  dir.Write("slow", "");
  CmdResult sub = Cli(coord, {"submit", file});
  REQUIRE(sub.exit_code == 0);
  const std::string running = FirstLine(sub.out);
  REQUIRE(WaitFor([&] { return Ran(dir)["transform"] == 1; }, 10000));
  CmdResult busy = Cli(coord, {"rerun", running});
  INFO(busy.err);
  CHECK(busy.exit_code == 2);
  CHECK(busy.err.find("is still RUNNING") != std::string::npos);
  ::unlink((dir.path() + "/slow").c_str());
  REQUIRE(Cli(coord, {"status", running, "--wait"}).exit_code == 0);

  CmdResult task = Cli(coord, {"rerun", running, "--from", "nope"});
  CHECK(task.exit_code == 2);
  CHECK(task.err.find("has no task 'nope'") != std::string::npos);
  CmdResult nothing = Cli(coord, {"rerun", running});
  CHECK(nothing.exit_code == 2);
  CHECK(nothing.err.find("nothing to rerun") != std::string::npos);
  CmdResult both = Cli(coord, {"rerun", running, "--failed", "--from", "load"});
  CHECK(both.exit_code == 2);
  CHECK(both.err.find("not both") != std::string::npos);
}

TEST_CASE("rerun on a state dir runs embedded", "[cluster][rerun]") {
  ScratchDir dir;
  dir.Write("fail-once", "");
  const std::string file = dir.Write("p.yaml", Pipeline(dir));
  const std::string state = dir.path() + "/state";
  CmdResult first = Run({Apollo11(), "run", file, "--state-dir", state, "--json", "--quiet"});
  INFO(first.out << first.err);
  REQUIRE(first.exit_code != 0);
  const std::string original = ParseJson(first.out)["run_id"];

  CmdResult rerun = Run({Apollo11(), "rerun", original, "--state-dir", state, "--json", "--quiet"});
  INFO(rerun.out << rerun.err);
  REQUIRE(rerun.exit_code == 0);
  auto summary = ParseJson(rerun.out);
  CHECK(summary["state"] == "SUCCESS");
  CHECK(summary["rerun_of"] == original);
  auto ran = Ran(dir);
  CHECK(ran["extract"] == 1);
  CHECK(ran["transform"] == 2);
  CHECK(ran["load"] == 1);
  // The local views show the link too.
  auto runs = ParseJson(Run({Apollo11(), "runs", "--state-dir", state, "--json"}).out);
  REQUIRE(runs.is_array());
  CHECK(runs[0]["rerun_of"] == original);

  CmdResult unknown = Run({Apollo11(), "rerun", "20260101T000000-abcd", "--state-dir", state});
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.err.find("no run") != std::string::npos);
}

TEST_CASE("a rerun survives a coordinator killed -9 mid-run and over HTTP", "[cluster][rerun]") {
  ScratchDir dir;
  const std::string workers = Endpoint(), api = Endpoint();
  NodeProc coord = StartNode(
      dir, "coord",
      {"--role", "coordinator", "--bind", workers, "--api-bind", api, "--api-token", kToken});
  NodeProc w1 = StartWorker(dir, coord, "w1", 2);
  NodeProc coord2;
  Nodes guard{{&coord, &w1, &coord2}};
  REQUIRE(WaitFor([&] { return WorkerCount(coord) == 1; }, 5000));
  dir.Write("fail-once", "");
  const std::string file = dir.Write("p.yaml", Pipeline(dir));
  CmdResult first = Cli(coord, {"submit", file, "--wait"});
  REQUIRE(first.exit_code != 0);
  const std::string original = FirstLine(first.out);

  // Over HTTP, with the token; the rerun's transform holds on the slow flag.
  const std::string addr = coord.listening["http"].get<std::string>();
  httplib::Client http(addr.substr(0, addr.rfind(':')),
                       std::stoi(addr.substr(addr.rfind(':') + 1)));
  http.set_read_timeout(15, 0);
  auto refused = http.Post("/api/runs/" + original + "/rerun", "{}", "application/json");
  REQUIRE(refused);
  CHECK(refused->status == 401);
  dir.Write("slow", "");
  httplib::Headers auth = {{"Authorization", std::string("Bearer ") + kToken}};
  auto res = http.Post("/api/runs/" + original + "/rerun", auth, R"({"failed": true})",
                       "application/json");
  REQUIRE(res);
  INFO(res->body);
  REQUIRE(res->status == 201);
  auto started = nlohmann::json::parse(res->body);
  CHECK(started["rerun_of"] == original);
  const std::string second = started["run_id"];

  // Mid-rerun (transform running again), the coordinator dies.
  REQUIRE(WaitFor([&] { return Ran(dir)["transform"] == 2; }, 10000));
  ::kill(coord.pid, SIGKILL);
  WaitExit(coord.pid, 5000);
  coord.pid = -1;
  coord2 = StartNode(dir, "coord2", {"--role", "coordinator", "--bind", workers, "--api-bind", api},
                     "coord");
  CHECK(coord2.listening["recovered_runs"] == 1);
  ::unlink((dir.path() + "/slow").c_str());
  auto summary = ParseJson(Cli(coord2, {"status", second, "--wait", "--json"}).out);
  INFO(summary.dump() << dir.Read("coord2.err") << "\n--- w1 ---\n" << dir.Read("w1.err"));
  CHECK(summary["state"] == "SUCCESS");
  CHECK(summary["rerun_of"] == original);
  CHECK(summary["tasks"]["extract"]["reused_from"] == original);
  std::vector<std::string> lines;
  auto ran = Ran(dir, &lines);
  CHECK(ran["extract"] == 1);
  CHECK(ran["side"] == 1);
  CHECK(ran["transform"] == 2);
  CHECK(ran["load"] == 1);
  // After the restart load still read the reused extract's output.
  CHECK(std::count(lines.begin(), lines.end(), "load rows=42") == 1);
}
