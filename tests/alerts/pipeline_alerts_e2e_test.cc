// A pipeline's own `alerts:` end to end, with a real HTTP receiver in this
// process: under `apollo11 run` (no node config at all) and on a node that
// has no alert rules of its own. run_succeeded reaches only the rules that
// name it, and every payload carries a human `text` line for chat webhooks.

#include <catch2/catch.hpp>

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
