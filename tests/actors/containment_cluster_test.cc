// Nothing a task starts outlives it, through real `apollo11-node` processes:
// a background child of a task that succeeds is killed and the journal says
// so, a setsid'd child of a task that times out is killed, and a worker
// killed -9 takes its tasks' processes with it without being restarted.
// Processes are found in /proc by a unique marker argument (sleep 30.<n>).

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "executor/cgroup_tree.h"
#include "executor/process_group.h"
#include "tests/actors/cli_harness.h"
#include "tests/actors/cluster_harness.h"
#include "tests/executor/executor_test_util.h"

using namespace apollo11::testing;  // NOLINT: test file

namespace {

std::string Marker() { return apollo11::executor::testing::UniqueSleepMarker(); }

// How many live (non-zombie) processes have `marker` in their command line.
size_t Running(const std::string& marker) {
  return apollo11::executor::testing::LiveWithMarker(marker).size();
}

bool CgroupsHere() {
  return apollo11::executor::CgroupTree::Open("apollo11-probe-" + std::to_string(::getpid())).ok();
}

// The --containment values this machine can run: process-tree always,
// cgroup when a cgroup can be made here.
std::vector<std::string> Modes() {
  std::vector<std::string> modes{"process-tree"};
  if (CgroupsHere()) {
    modes.push_back("cgroup");
  } else {
    WARN("no writable cgroup v2 here: only --containment process-tree is tested");
  }
  return modes;
}

NodeProc StartWorkerIn(const ScratchDir& dir, const NodeProc& coord, const std::string& mode) {
  return StartNode(dir, "w1",
                   {"--role", "worker", "--connect", coord.listening["workers"].get<std::string>(),
                    "--worker-id", "w1", "--slots", "2", "--containment", mode},
                   "w1");
}

}  // namespace

TEST_CASE("a task's leftover processes are killed at its end and the journal notes them",
          "[cluster][containment]") {
  for (const std::string& mode : Modes()) {
    INFO("--containment " << mode);
    ScratchDir dir;
    NodeProc coord = StartCoordinator(dir);
    NodeProc w1 = StartWorkerIn(dir, coord, mode);
    Nodes guard{{&coord, &w1}};
    REQUIRE(WaitFor([&] { return WorkerCount(coord) == 1; }, 5000));
    const std::string bg = Marker(), daemon = Marker();
    std::string file = dir.Write("p.yaml", R"(version: "1.0"
name: test.leftovers
pipeline:
  - id: bg
    type: shell
    command: "sleep )" + bg + R"( & echo done"
  - id: daemon
    type: shell
    timeout: 500ms
    command: "setsid sleep )" + daemon + R"( & sleep 60"
)");
    CmdResult sub = Cli(coord, {"submit", file, "--wait"});
    INFO(sub.out + sub.err + dir.Read("w1.err"));
    const std::string run_id = sub.out.substr(0, sub.out.find('\n'));
    CHECK(WaitFor([&] { return Running(bg) == 0 && Running(daemon) == 0; }, 3000));
    auto history = ParseJson(Cli(coord, {"history", run_id + ".bg", "--json"}).out);
    std::string reason;
    for (const auto& t : history) {
      if (t["to"] == "SUCCESS") reason = t.value("reason", "");
    }
    CHECK(reason == "exited 0; killed 1 leftover process");
    auto status = ParseJson(Cli(coord, {"status", run_id, "--json"}).out);
    CHECK(status["tasks"]["daemon"]["state"] == "TIMEOUT");
    CHECK(dir.Read("w1.err").find("task processes contained by " +
                                  std::string(mode == "cgroup" ? "cgroup v2" : "process tree")) !=
          std::string::npos);
  }
}

TEST_CASE("a worker killed -9 leaves none of its task's processes running",
          "[cluster][containment]") {
  for (const std::string& mode : Modes()) {
    INFO("--containment " << mode);
    ScratchDir dir;
    NodeProc coord = StartCoordinator(dir);
    NodeProc w1 = StartWorkerIn(dir, coord, mode);
    Nodes guard{{&coord, &w1}};
    REQUIRE(WaitFor([&] { return WorkerCount(coord) == 1; }, 5000));
    const std::string leader = Marker(), child = Marker(), daemon = Marker();
    // The leader runs a child in its group and a setsid'd daemon (found by
    // its cgroup, or by the environment token it inherited).
    const std::string command =
        "sleep " + child + " & setsid sleep " + daemon + " & exec sleep " + leader;
    std::string file = dir.Write("p.yaml", R"(version: "1.0"
name: test.killed
pipeline:
  - id: long
    type: shell
    command: ")" + command + R"("
)");
    REQUIRE(Cli(coord, {"submit", file}).exit_code == 0);
    REQUIRE(
        WaitFor([&] { return Running(leader) == 1 && Running(child) == 1 && Running(daemon) == 1; },
                10000));
    ::kill(w1.pid, SIGKILL);
    WaitExit(w1.pid, 5000);
    w1.pid = -1;
    // No worker restart: the leader dies with the worker (PR_SET_PDEATHSIG),
    // the rest at the hands of its death watch.
    CHECK(WaitFor(
        [&] { return Running(leader) == 0 && Running(child) == 0 && Running(daemon) == 0; }, 3000));
  }
}
