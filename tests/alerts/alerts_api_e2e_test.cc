// GET /api/alerts on a real node: a failing run fires a node rule's alert to
// a real receiver and to a dead webhook; the API lists it, newest first, with
// its text, fold count and each target's outcome, never the webhook's secret
// path, and still lists it after a SIGHUP has replaced the notifier.

#include <httplib.h>
#include <signal.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

#include "tests/actors/cli_harness.h"
#include "tests/actors/cluster_harness.h"
#include "tests/alerts/alert_receiver.h"

using namespace apollo11::testing;  // NOLINT: test file
using nlohmann::json;

namespace {

httplib::Client Http(const NodeProc& node) {
  const std::string addr = node.listening["http"].get<std::string>();
  httplib::Client c(addr.substr(0, addr.rfind(':')), std::stoi(addr.substr(addr.rfind(':') + 1)));
  c.set_read_timeout(15, 0);
  return c;
}

json Alerts(const NodeProc& node, const std::string& query) {
  auto res = Http(node).Get("/api/alerts" + query);
  REQUIRE(res);
  INFO(res->body);
  REQUIRE(res->status == 200);
  return json::parse(res->body);
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

TEST_CASE("a fired alert is listed by GET /api/alerts with its delivery outcomes, across a reload",
          "[alerts][e2e][api]") {
  ScratchDir dir;
  AlertReceiver receiver;
  const std::string config = R"(alert-fold-window: 200ms
alerts:
  - name: team
    events: [retries_exhausted]
    webhook: ")" + receiver.Url() +
                             R"("
  - name: pager
    events: [retries_exhausted]
    webhook: {url: "http://127.0.0.1:9/T0/secret-token", timeout: 1s, retries: 0}
)";
  dir.Write("node.yaml", config);
  NodeProc node =
      StartNode(dir, "node",
                {"--role", "all", "--bind", "tcp://127.0.0.1:0", "--api-bind", "tcp://127.0.0.1:0",
                 "--slots", "2", "--worker-id", "local", "--config", dir.path() + "/node.yaml"});
  Nodes guard{{&node}};
  REQUIRE(WaitFor([&] { return WorkerCount(node) == 1; }, 5000));
  CHECK(Alerts(node, "")["alerts"].empty());

  const std::string failing = dir.Write("fail.yaml", R"(version: "1.0"
name: order.sync
pipeline:
  - {id: charge, type: shell, command: "echo card declined >&2; exit 3"}
)");
  CmdResult r = Cli(node, {"submit", failing, "--wait", "--json"});
  INFO(r.out << r.err);
  CHECK(r.exit_code != 0);
  REQUIRE(receiver.WaitUntil([](const std::vector<json>& got) { return !got.empty(); }, 15000));

  json got;
  REQUIRE(WaitFor(
      [&] {
        auto res = Http(node).Get("/api/alerts?limit=5");
        if (!res || res->status != 200) return false;
        got = json::parse(res->body);
        return !got["alerts"].empty() && got["alerts"][0]["delivery"] == "partial";
      },
      10000));
  INFO(got.dump());
  REQUIRE(got["alerts"].size() == 1);
  const json& a = got["alerts"][0];
  CHECK(a["type"] == "retries_exhausted");
  CHECK(a["severity"] == "error");
  CHECK(a["pipeline"] == "order.sync");
  CHECK(a["task_id"] == "charge");
  CHECK_FALSE(a["run_id"].get<std::string>().empty());
  CHECK(a["id"] == receiver.Received().front()["id"]);
  CHECK(a["count"] == 1);
  CHECK_THAT(a["text"].get<std::string>(), Catch::Contains("task charge failed"));
  CHECK(a["delivery"] == "partial");
  REQUIRE(a["deliveries"].size() == 2);
  CHECK(a["deliveries"][0]["state"] == "delivered");
  CHECK(a["deliveries"][1]["state"] == "failed");
  CHECK(a["deliveries"][1]["target"] == "rule pager webhook http://127.0.0.1:9");
  CHECK(got.dump().find("secret-token") == std::string::npos);
  CHECK(got.dump().find("card declined") == std::string::npos);  // no stderr tail

  // The API's read rules: limit from 1 to 1000.
  CHECK(Http(node).Get("/api/alerts?limit=0")->status == 400);
  CHECK(Http(node).Get("/api/alerts?limit=x")->status == 400);
  CHECK(Http(node).Get("/api/alerts?limit=1001")->status == 400);

  // A reload swaps the notifier; the record is the node's and stays.
  const std::string err_file = dir.path() + "/node.err";
  REQUIRE(::kill(node.pid, SIGHUP) == 0);
  REQUIRE(WaitFor([&] { return Slurp(err_file).find("alert rules in force") != std::string::npos; },
                  10000));
  const json after = Alerts(node, "?limit=1000");
  REQUIRE(after["alerts"].size() == 1);
  CHECK(after["alerts"][0]["id"] == a["id"]);
}
