// A pipeline's own `alerts:` end to end, with a real HTTP receiver in this
// process: under `apollo11 run` (no node config at all) and on a node that
// has no alert rules of its own. run_succeeded reaches only the rules that
// name it, and every payload carries a human `text` line for chat webhooks.
// A run that succeeded with handled failures says so in every view.

#include <httplib.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "tests/actors/cli_harness.h"
#include "tests/actors/cluster_harness.h"
#include "tests/alerts/alert_receiver.h"

using namespace apollo11::testing;  // NOLINT: test file
using nlohmann::json;

namespace {

// order.sync: `charge` fails its one retry, so the run fails; or, with
// `ok`, a run that succeeds.
std::string Pipeline(const std::string& name, bool ok, const std::string& failures_url,
                     const std::string& success_url) {
  return R"(version: "1.0"
name: )" +
         name + R"(
alerts:
  - events: [task_failed, run_failed]
    webhook: ")" +
         failures_url + R"("
  - events: [run_succeeded]
    webhook: ")" +
         success_url + R"("
pipeline:
  - id: charge
    type: shell
    command: ")" +
         (ok ? std::string("true") : std::string("echo card declined >&2; exit 3")) + R"("
    retry: {max_retries: 1, delay: 50ms}
)";
}

bool Has(const std::vector<json>& got, const std::string& type) {
  for (const json& a : got) {
    if (a.value("type", "") == type) return true;
  }
  return false;
}

void CheckFailureAlerts(const AlertReceiver& failures, const std::string& pipeline) {
  REQUIRE(failures.WaitUntil(
      [](const std::vector<json>& got) {
        return Has(got, "retries_exhausted") && Has(got, "run_failed");
      },
      15000));
  for (const json& a : failures.Received()) {
    INFO(a.dump());
    CHECK(a.value("pipeline", "") == pipeline);
    CHECK(a.value("type", "") != "run_succeeded");
    const std::string text = a.value("text", "");
    CHECK_THAT(text, Catch::StartsWith("apollo11: "));
    CHECK_THAT(text, Catch::Contains(pipeline));
    if (a.value("type", "") == "retries_exhausted") {
      CHECK_THAT(text, Catch::Contains("task charge failed"));
      CHECK_THAT(a.value("stderr_tail", ""), Catch::Contains("card declined"));
    }
  }
}

}  // namespace

TEST_CASE("a pipeline's alerts fire under apollo11 run, run_succeeded only where named",
          "[alerts][e2e]") {
  ScratchDir dir;
  AlertReceiver failures, successes;
  const std::string failing =
      dir.Write("fail.yaml", Pipeline("order.sync", false, failures.Url(), successes.Url()));
  CmdResult r = Run({Apollo11(), "run", failing, "--state-dir", dir.path() + "/state"}, dir.path());
  INFO(r.out << r.err);
  CHECK(r.exit_code != 0);
  CheckFailureAlerts(failures, "order.sync");
  CHECK(successes.Received().empty());

  const std::string passing =
      dir.Write("ok.yaml", Pipeline("order.ok", true, failures.Url(), successes.Url()));
  CmdResult ok =
      Run({Apollo11(), "run", passing, "--state-dir", dir.path() + "/state2"}, dir.path());
  INFO(ok.out << ok.err);
  CHECK(ok.exit_code == 0);
  REQUIRE(successes.WaitUntil([](const std::vector<json>& got) { return !got.empty(); }, 15000));
  const json a = successes.Received().front();
  CHECK(a.value("type", "") == "run_succeeded");
  CHECK_THAT(a.value("text", ""), Catch::Contains("succeeded in pipeline order.ok"));
  CHECK(failures.Received().size() == 2);  // nothing from the run that succeeded
}

TEST_CASE("a pipeline's alerts fire on a node that has no alert rules of its own",
          "[alerts][e2e]") {
  ScratchDir dir;
  AlertReceiver failures, successes;
  dir.Write("node.yaml", "alert-fold-window: 200ms\n");
  NodeProc node =
      StartNode(dir, "node",
                {"--role", "all", "--bind", "tcp://127.0.0.1:0", "--api-bind", "tcp://127.0.0.1:0",
                 "--slots", "2", "--worker-id", "local", "--config", dir.path() + "/node.yaml"});
  Nodes guard{{&node}};
  REQUIRE(WaitFor([&] { return WorkerCount(node) == 1; }, 5000));

  const std::string failing =
      dir.Write("fail.yaml", Pipeline("billing.sync", false, failures.Url(), successes.Url()));
  CmdResult r = Cli(node, {"submit", failing, "--wait", "--json"});
  INFO(r.out << r.err);
  CHECK(r.exit_code != 0);
  CheckFailureAlerts(failures, "billing.sync");

  const std::string passing =
      dir.Write("ok.yaml", Pipeline("billing.ok", true, failures.Url(), successes.Url()));
  CHECK(Cli(node, {"submit", passing, "--wait", "--json"}).exit_code == 0);
  REQUIRE(successes.WaitUntil([](const std::vector<json>& got) { return !got.empty(); }, 15000));
  CHECK(successes.Received().front().value("pipeline", "") == "billing.ok");
  CHECK(successes.Received().size() == 1);
}

TEST_CASE("a run whose failure an on: branch handled succeeds and says so everywhere",
          "[alerts][e2e]") {
  ScratchDir dir;
  AlertReceiver handled;
  dir.Write("node.yaml", "alert-fold-window: 200ms\n");
  NodeProc node =
      StartNode(dir, "node",
                {"--role", "all", "--bind", "tcp://127.0.0.1:0", "--api-bind", "tcp://127.0.0.1:0",
                 "--slots", "2", "--worker-id", "local", "--config", dir.path() + "/node.yaml"});
  Nodes guard{{&node}};
  REQUIRE(WaitFor([&] { return WorkerCount(node) == 1; }, 5000));
  // `load` fails; `cleanup` is its failure branch; `report` runs either way.
  const std::string file = dir.Write("h.yaml", R"(version: "1.0"
name: shop.handled
alerts:
  - events: [run_failures_handled, run_failed]
    webhook: ")" + handled.Url() + R"("
pipeline:
  - id: load
    type: shell
    command: "echo no rows >&2; exit 3"
  - id: cleanup
    type: noop
    depends_on: [{task: load, on: failure}]
  - id: report
    type: noop
    depends_on: [{task: load, on: done}]
)");
  CmdResult r = Cli(node, {"submit", file, "--wait", "--json"});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);  // the run succeeded
  const json run = ParseJson(r.out);
  const std::string run_id = run.value("run_id", "");
  CHECK(run.value("state", "") == "SUCCESS");
  CHECK(run.value("handled_failures", 0) == 1);
  CHECK_THAT(run.value("reason", ""),
             Catch::EndsWith("; 1 failure handled by an on: branch (load)"));
  CHECK(run["tasks"]["load"].value("handled", false));
  CHECK_FALSE(run["tasks"]["cleanup"].contains("handled"));

  // The text status names it on the task's line; the run list carries it.
  CmdResult text = Cli(node, {"status", run_id});
  CHECK_THAT(text.out, Catch::Contains("1 failure handled by an on: branch (load)"));
  CHECK_THAT(text.out, Catch::Contains("handled: "));
  const json runs = ParseJson(Cli(node, {"runs", "--json"}).out);
  REQUIRE(runs.is_array());
  REQUIRE(!runs.empty());
  CHECK(runs[0].value("handled_failures", 0) == 1);

  // run_failures_handled is raised, run_failed is not.
  REQUIRE(handled.WaitUntil([](const std::vector<json>& got) { return !got.empty(); }, 15000));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // anything else would be in
  REQUIRE(handled.Received().size() == 1);
  const json a = handled.Received().front();
  CHECK(a.value("type", "") == "run_failures_handled");
  CHECK_THAT(a.value("text", ""), Catch::Contains("succeeded with handled failures"));

  // Counted on /metrics, and also as a success.
  const std::string addr = node.listening["http"].get<std::string>();
  httplib::Client http(addr.substr(0, addr.rfind(':')),
                       std::stoi(addr.substr(addr.rfind(':') + 1)));
  auto metrics = http.Get("/metrics");
  REQUIRE(metrics);
  CHECK_THAT(metrics->body, Catch::Contains("\napollo11_runs_failures_handled_total 1\n"));
  CHECK_THAT(metrics->body,
             Catch::Contains("\napollo11_runs_finished_total{outcome=\"success\"} 1\n"));

  // rerun --failed takes the handled failure again, reusing what succeeded.
  CmdResult rerun = Cli(node, {"rerun", run_id, "--failed", "--wait", "--json"});
  INFO(rerun.out << rerun.err);
  const json again = ParseJson(rerun.out);
  CHECK(again["tasks"]["load"].value("attempts", 0) == 1);
  CHECK(again["tasks"]["load"].value("state", "") == "FAILED");
}
