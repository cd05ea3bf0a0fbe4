// Alerts end to end: real `apollo11-node` processes with alert rules in
// their --config, a real HTTP receiver in this process (cpp-httplib on a
// kernel-chosen port) and a real command hook. Each alert is caused for real:
// a task that fails its retries, one that times out, a run canceled, a worker
// killed with SIGKILL, a backlog cap hit.

#include <signal.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <sstream>

#include "tests/actors/cli_harness.h"
#include "tests/actors/cluster_harness.h"
#include "tests/alerts/alert_receiver.h"

using namespace apollo11::testing;  // NOLINT: test file
using nlohmann::json;

namespace {

std::string RunIdOf(const CmdResult& submitted) {
  return submitted.out.substr(0, submitted.out.find('\n'));
}

// Every JSON line a command hook appended to `path`.
std::vector<json> JsonLines(const std::string& path) {
  std::ifstream in(path);
  std::vector<json> out;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) out.push_back(json::parse(line, nullptr, false));
  }
  return out;
}

const json* Find(const std::vector<json>& alerts, const std::string& type) {
  for (const json& a : alerts) {
    if (a.value("type", "") == type) return &a;
  }
  return nullptr;
}

bool HasType(const std::vector<json>& alerts, const std::string& type) {
  return Find(alerts, type) != nullptr;
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

}  // namespace

TEST_CASE("each alert type reaches a real webhook and a command hook, filtered by pipeline",
          "[alerts][e2e]") {
  ScratchDir dir;
  AlertReceiver all, order_team;
  const std::string hook_file = dir.path() + "/hook.jsonl";
  dir.Write("node.yaml", R"(max-backlog: 5
alert-fold-window: 300ms
alerts:
  - name: everything
    webhook: {url: ")" + all.Url() +
                             R"(", timeout: 2s, retries: 3, backoff: 100ms}
  - name: order-team
    events: [retries_exhausted, timeout, run_failed]
    pipelines: "order.*"
    webhook: ")" + order_team.Url() +
                             R"("
  - name: pager
    events: [worker_lost, backlog_at_cap, journal_error]
    command: "cat >> )" + hook_file +
                             R"(; echo >> )" + hook_file + R"("
)");
  NodeProc node =
      StartNode(dir, "node",
                {"--role", "all", "--bind", "tcp://127.0.0.1:0", "--api-bind", "tcp://127.0.0.1:0",
                 "--slots", "4", "--worker-id", "local", "--config", dir.path() + "/node.yaml"});
  NodeProc far = StartWorker(dir, node, "far1", 1, "far");
  Nodes guard{{&node, &far}};
  REQUIRE(WaitFor([&] { return WorkerCount(node) == 2; }, 5000));

  // retries exhausted (with its stderr) and run failed, in the order team's namespace.
  std::string failing = dir.Write("fail.yaml", R"(version: "1.0"
name: order.checkout
pipeline:
  - id: charge
    type: shell
    command: "echo card declined by the bank >&2; exit 3"
    retry: {max_retries: 1, delay: 100ms}
)");
  CmdResult r = Cli(node, {"submit", failing, "--wait", "--json"});
  INFO(r.out << r.err);
  CHECK(r.exit_code != 0);
  const std::string failed_run = ParseJson(r.out.substr(r.out.find('{')))["run_id"];

  // A timeout, outside the order team's pipelines.
  std::string slow = dir.Write("slow.yaml", R"(version: "1.0"
name: billing.nightly
pipeline:
  - {id: export, type: shell, command: "sleep 10", timeout: 300ms}
)");
  CHECK(Cli(node, {"submit", slow, "--wait", "--json"}).exit_code != 0);

  // A canceled run.
  std::string sleepy = dir.Write("sleepy.yaml", R"(version: "1.0"
name: billing.sleepy
pipeline:
  - {id: nap, type: shell, command: "sleep 30"}
)");
  const std::string canceled_run = RunIdOf(Cli(node, {"submit", sleepy}));
  REQUIRE(WaitFor(
      [&] {
        return ParseJson(Cli(node, {"status", canceled_run, "--json"}).out)["tasks"]["nap"].value(
                   "state", "") == "RUNNING";
      },
      10000));
  REQUIRE(Cli(node, {"cancel", canceled_run}).exit_code == 0);

  // The backlog cap (5): a wide DAG of 30 tasks.
  std::string yaml = "version: \"1.0\"\nname: test.wide\npipeline:\n";
  for (int i = 0; i < 30; ++i) yaml += "  - {id: t" + std::to_string(i) + ", type: noop}\n";
  CHECK(Cli(node, {"submit", dir.Write("wide.yaml", yaml), "--wait", "--json"}).exit_code == 0);

  // A worker killed while it runs a task.
  std::string remote = dir.Write("remote.yaml", R"(version: "1.0"
name: test.remote
pipeline:
  - {id: far_task, type: shell, command: "sleep 30", group: far}
)");
  const std::string remote_run = RunIdOf(Cli(node, {"submit", remote}));
  REQUIRE(WaitFor(
      [&] {
        return ParseJson(Cli(node, {"status", remote_run, "--json"}).out)["tasks"]["far_task"]
                   .value("state", "") == "RUNNING";
      },
      10000));
  ::kill(far.pid, SIGKILL);
  WaitExit(far.pid, 5000);
  far.pid = -1;

  const std::vector<std::string> expected = {"retries_exhausted", "run_failed",     "timeout",
                                             "run_canceled",      "backlog_at_cap", "worker_lost"};
  const bool all_arrived = all.WaitUntil(
      [&](const std::vector<json>& got) {
        for (const auto& type : expected) {
          if (!HasType(got, type)) return false;
        }
        return true;
      },
      15000);
  INFO(json(all.Received()).dump(2) << "\n" << dir.Read("node.err"));
  REQUIRE(all_arrived);
  const auto got = all.Received();

  const json& exhausted = *Find(got, "retries_exhausted");
  CHECK(exhausted["pipeline"] == "order.checkout");
  CHECK(exhausted["run_id"] == failed_run);
  CHECK(exhausted["task_id"] == "charge");
  CHECK(exhausted["exec_id"] == failed_run + ".charge");
  CHECK(exhausted["attempt"] == 2);
  CHECK(exhausted["worker_id"] == "local");
  CHECK(exhausted["stderr_tail"].get<std::string>().find("card declined by the bank") !=
        std::string::npos);
  CHECK(exhausted["reason"].get<std::string>().find("3") != std::string::npos);
  CHECK(exhausted["look"]["history"] == "apollo11 history " + failed_run + ".charge");
  // The whole stderr is one command away.
  CmdResult logs = Cli(node, {"logs", failed_run + ".charge", "--stderr"});
  CHECK(exhausted["look"]["logs"] == "apollo11 logs " + failed_run + ".charge --stderr");
  CHECK(logs.out.find("card declined by the bank") != std::string::npos);
  CHECK_FALSE(exhausted["id"].get<std::string>().empty());

  const json& timeout = *Find(got, "timeout");
  CHECK(timeout["pipeline"] == "billing.nightly");
  CHECK(timeout["task_id"] == "export");
  CHECK(timeout["reason"].get<std::string>().find("timed out") != std::string::npos);

  CHECK((*Find(got, "run_canceled"))["run_id"] == canceled_run);
  CHECK((*Find(got, "backlog_at_cap"))["reason"].get<std::string>().find("cap 5") !=
        std::string::npos);
  const json& lost = *Find(got, "worker_lost");
  CHECK(lost["worker_id"] == "far1");
  CHECK(lost["exec_id"] == remote_run + ".far_task");
  CHECK(lost["reason"].get<std::string>().find("far1") != std::string::npos);

  // The order team hears only about its own pipelines, and only its events.
  // One thread delivers each alert to every matching rule before the next
  // one, so once the order team has a failure raised after every alert above
  // reached `everything`, each of those alerts has been offered to it too.
  std::string marker = dir.Write("marker.yaml", R"(version: "1.0"
name: order.marker
pipeline:
  - {id: mark, type: shell, command: "exit 1"}
)");
  CmdResult marked = Cli(node, {"submit", marker, "--wait", "--json"});
  INFO(marked.out << marked.err);
  CHECK(marked.exit_code != 0);
  const std::string marker_run = ParseJson(marked.out.substr(marked.out.find('{')))["run_id"];
  REQUIRE(order_team.WaitUntil(
      [&](const auto& g) {
        for (const json& a : g) {
          if (a.value("run_id", "") == marker_run && a.value("type", "") == "run_failed") {
            return true;
          }
        }
        return false;
      },
      5000));
  std::vector<json> before_marker;
  for (const json& a : order_team.Received()) {
    if (a.value("run_id", "") != marker_run) before_marker.push_back(a);
  }
  for (const json& a : before_marker) {
    CHECK(a["pipeline"] == "order.checkout");
    CHECK((a["type"] == "retries_exhausted" || a["type"] == "run_failed"));
  }
  CHECK(before_marker.size() == 2);

  // The pager's command hook got the node-wide events as JSON on stdin.
  REQUIRE(WaitFor(
      [&] {
        auto lines = JsonLines(hook_file);
        return HasType(lines, "worker_lost") && HasType(lines, "backlog_at_cap");
      },
      5000));
  for (const json& a : JsonLines(hook_file)) {
    CHECK((a["type"] == "worker_lost" || a["type"] == "backlog_at_cap"));
  }
  Cli(node, {"cancel", remote_run});
}

TEST_CASE(
    "in a cluster, two failures of one task within the window arrive once with count 2, "
    "after the receiver's 500s",
    "[alerts][e2e]") {
  ScratchDir dir;
  AlertReceiver receiver;
  receiver.FailNext(2, 500);
  dir.Write("coord.yaml", R"(alert-fold-window: 3s
alerts:
  - name: team
    events: [retries_exhausted]
    webhook: {url: ")" + receiver.Url() +
                              R"(", retries: 4, backoff: 200ms}
)");
  NodeProc coord = StartNode(dir, "coord",
                             {"--role", "coordinator", "--bind", "tcp://127.0.0.1:0", "--api-bind",
                              "tcp://127.0.0.1:0", "--config", dir.path() + "/coord.yaml"});
  NodeProc w1 = StartWorker(dir, coord, "w1", 2);
  Nodes guard{{&coord, &w1}};
  REQUIRE(WaitFor([&] { return WorkerCount(coord) == 1; }, 5000));
  std::string failing = dir.Write("fail.yaml", R"(version: "1.0"
name: order.refund
pipeline:
  - {id: refund, type: shell, command: "echo no such order >&2; exit 1"}
)");
  const auto t0 = std::chrono::steady_clock::now();
  const std::string first = RunIdOf(Cli(coord, {"submit", failing}));
  const std::string second = RunIdOf(Cli(coord, {"submit", failing}));
  CHECK(Cli(coord, {"status", first, "--wait"}).exit_code != 0);
  CHECK(Cli(coord, {"status", second, "--wait"}).exit_code != 0);
  REQUIRE(receiver.WaitUntil([](const auto& got) { return !got.empty(); }, 15000));
  const double arrived = Seconds(t0);
  CHECK(receiver.posts() == 3);  // 500, 500, then 200
  // A failure of another task, raised after both refunds failed: a second
  // refund alert (a fold that did not hold) was due before this one, which
  // the same delivery thread sends after it.
  const std::string marker = dir.Write("marker.yaml", R"(version: "1.0"
name: order.marker
pipeline:
  - {id: mark, type: shell, command: "exit 1"}
)");
  CHECK(Cli(coord, {"submit", marker, "--wait"}).exit_code != 0);
  REQUIRE(receiver.WaitUntil(
      [](const auto& got) {
        for (const json& a : got) {
          if (a.value("task_id", "") == "mark") return true;
        }
        return false;
      },
      15000));
  std::vector<json> got;
  for (const json& a : receiver.Received()) {
    if (a.value("task_id", "") != "mark") got.push_back(a);
  }
  INFO(dir.Read("coord.err"));
  REQUIRE(got.size() == 1);
  CHECK(got[0]["count"] == 2);
  CHECK(got[0]["task_id"] == "refund");
  CHECK(got[0]["stderr_tail"] == "no such order\n");
  CHECK(got[0]["worker_id"] == "w1");
  CHECK(receiver.posts() == 4);  // and the marker's, at the first try
  CHECK(arrived >= 2.9);         // held for the fold window
  CHECK(
      dir.Read("coord.err").find("attempt 1 of 5 failed: POST " + receiver.Url() + ": HTTP 500") !=
      std::string::npos);
  CHECK(dir.Read("coord.err").find("after 2 retries") != std::string::npos);
}

TEST_CASE("a webhook that never answers does not slow a run down", "[alerts][e2e]") {
  ScratchDir dir;
  HungServer hung;
  std::string yaml = "version: \"1.0\"\nname: order.many\npipeline:\n";
  for (int i = 0; i < 40; ++i) {
    yaml += "  - {id: f" + std::to_string(i) + ", type: shell, command: \"exit 1\"}\n";
  }
  const std::string file = dir.Write("many.yaml", yaml);
  dir.Write("hung.yaml", R"(alert-fold-window: 10ms
alerts:
  - name: black-hole
    webhook: {url: ")" + hung.Url() +
                             R"(", timeout: 5s, retries: 5, backoff: 1s}
)");
  auto start = [&](const std::string& name, std::vector<std::string> extra) {
    std::vector<std::string> args = {
        "--role",  "all", "--bind", "tcp://127.0.0.1:0", "--api-bind", "tcp://127.0.0.1:0",
        "--slots", "4"};
    args.insert(args.end(), extra.begin(), extra.end());
    return StartNode(dir, name, args);
  };
  auto timed_run = [&](const NodeProc& node) {
    const auto t0 = std::chrono::steady_clock::now();
    CmdResult r = Cli(node, {"submit", file, "--wait", "--json"});
    const double took = Seconds(t0);
    CHECK(ParseJson(r.out.substr(r.out.find('{')))["state"] == "FAILED");
    return took;
  };
  NodeProc plain = start("plain", {});
  NodeProc alerting = start("alerting", {"--config", dir.path() + "/hung.yaml"});
  Nodes guard{{&plain, &alerting}};
  const double baseline = timed_run(plain);
  const double with_alerts = timed_run(alerting);
  WARN("40 failing tasks: " << baseline << " s without alerts, " << with_alerts
                            << " s with 41 alerts queued for a webhook that never answers");
  // Delivery alone would take 41 x 5 s; the run must not wait for any of it.
  CHECK(with_alerts < baseline + 2.0);
  // The alerts were raised and are being tried (each attempt waits 5 s).
  CHECK(WaitFor(
      [&] { return dir.Read("alerting.err").find("attempt 1 of 6 failed") != std::string::npos; },
      15000));
}

TEST_CASE("apollo11-node refuses a config with a bad alert rule, naming the rule and line",
          "[alerts][e2e][config]") {
  ScratchDir dir;
  dir.Write("bad.yaml", R"(heartbeat: 100ms
alerts:
  - name: pager
    events: [worker_los]
    command: "true"
)");
  CmdResult r = Run({Node(), "start", "--role", "all", "--state-dir", dir.path() + "/s", "--config",
                     dir.path() + "/bad.yaml"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("alerts: rule 'pager' (line 3): unknown event 'worker_los' (known: "
                   "retries_exhausted,") != std::string::npos);
  dir.Write("typo.yaml", "alerts:\n  - {name: x, webhok: 'http://127.0.0.1:1/'}\n");
  r = Run({Node(), "start", "--role", "all", "--state-dir", dir.path() + "/s", "--config",
           dir.path() + "/typo.yaml"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("unknown key 'webhok'") != std::string::npos);
}
