// Worker-side queues across real processes (issue 18): a worker with one
// slot and a prefetch holds five executions (one running, four queued), is
// killed -9, and every one of them is requeued and runs to SUCCESS on another
// worker; none of the queued ones ran on the killed worker, so each ran
// exactly once (a ledger file every task appends to says so).

#include <signal.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <map>

#include "tests/actors/cli_harness.h"
#include "tests/actors/cluster_harness.h"

using namespace apollo11::testing;  // NOLINT: test file

namespace {

// LINE -> how many times it is in the ledger.
std::map<std::string, int> Ledger(const std::string& path) {
  std::map<std::string, int> count;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) ++count[line];
  return count;
}

}  // namespace

TEST_CASE("a worker killed -9 with queued executions loses none and runs none twice",
          "[cluster][queue]") {
  ScratchDir dir;
  NodeProc coord = StartCoordinator(dir);
  NodeProc w1 =
      StartNode(dir, "w1",
                {"--role", "worker", "--connect", coord.listening["workers"].get<std::string>(),
                 "--worker-id", "w1", "--slots", "1", "--prefetch", "4"},
                "w1");
  NodeProc w2;
  Nodes guard{{&coord, &w1, &w2}};
  REQUIRE(WaitFor([&] { return WorkerCount(coord) == 1; }, 5000));

  const std::string ledger = dir.path() + "/ledger";
  std::string yaml = "version: \"1.0\"\nname: test.queue_kill\npipeline:\n";
  for (int i = 0; i < 5; ++i) {
    yaml += "  - id: t" + std::to_string(i) +
            "\n    type: shell\n    command: \"echo start $APOLLO11_TASK_ID >> " + ledger +
            "; sleep 1; echo done $APOLLO11_TASK_ID >> " + ledger + "\"\n";
  }
  CmdResult sub = Cli(coord, {"submit", dir.Write("queue.yaml", yaml)});
  REQUIRE(sub.exit_code == 0);
  const std::string run_id = sub.out.substr(0, sub.out.find('\n'));

  // All five held by w1 (RUNNING in the journal): one started, four queued.
  std::string first;
  REQUIRE(WaitFor(
      [&] {
        auto s = ParseJson(Cli(coord, {"status", run_id, "--json"}).out);
        if (!s.is_object()) return false;
        for (auto& [id, t] : s["tasks"].items()) {
          if (t["state"] != "RUNNING" || t.value("worker", "") != "w1") return false;
        }
        auto seen = Ledger(ledger);
        if (seen.size() != 1) return false;
        first = seen.begin()->first.substr(6);  // "start ID"
        return true;
      },
      10000));
  ::kill(w1.pid, SIGKILL);
  WaitExit(w1.pid, 5000);
  w1.pid = -1;
  w2 = StartWorker(dir, coord, "w2", 2);

  CmdResult done = Cli(coord, {"status", run_id, "--wait", "--json"});
  INFO(done.out << done.err);
  auto summary = ParseJson(done.out);
  REQUIRE(summary.is_object());
  CHECK(summary["state"] == "SUCCESS");
  auto seen = Ledger(ledger);
  for (int i = 0; i < 5; ++i) {
    const std::string id = "t" + std::to_string(i);
    INFO(id << " (the one that started on w1: " << first << ")");
    CHECK(seen["done " + id] == 1);  // none lost, none finished twice
    // A queued one never started on w1: it ran once, on w2. The one w1 was
    // running ran again (delivery.md, case 2).
    CHECK(seen["start " + id] == (id == first ? 2 : 1));
    CHECK(summary["tasks"][id]["worker"] == "w2");
    auto history = ParseJson(Cli(coord, {"history", run_id + "." + id, "--json"}).out);
    bool requeued = false;
    for (const auto& t : history) {
      if (t["from"] == "RUNNING" && t["to"] == "READY") {
        requeued = t.value("reason", "").find("worker w1 lost") != std::string::npos;
      }
    }
    CHECK(requeued);
  }
}
