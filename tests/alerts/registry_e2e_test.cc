// registry: the pipeline registry through the real `apollo11` CLI against a
// real `apollo11-node --role=all`: add, list, versions, diff, a rejected
// cycle that keeps the active version and delivers pipeline_rejected to a
// real webhook, triggers with one idempotency key across a kill -9, pause
// refusing a trigger (CLI and HTTP), and -p refusals on trigger, submit and
// run.

#include <httplib.h>
#include <signal.h>

#include <catch2/catch.hpp>
#include <memory>

#include "tests/actors/cli_harness.h"
#include "tests/actors/cluster_harness.h"
#include "tests/alerts/alert_receiver.h"

using namespace apollo11::testing;  // NOLINT: test file
using nlohmann::json;

namespace {

constexpr const char* kToken = "registry-test-token-0123456789";

std::string Pipeline(const std::string& command) {
  return R"(version: "1.0"
name: demo.reg
params:
  limit: "10"
  day: "2026-01-01"
pipeline:
  - id: a
    type: shell
    command: )" +
         command + R"(
  - id: b
    type: shell
    command: echo b
    depends_on: a
)";
}

// Version 3 would close a cycle a -> b -> a.
constexpr const char* kCycle = R"(version: "1.0"
name: demo.reg
pipeline:
  - id: a
    type: shell
    command: echo a
    depends_on: b
  - id: b
    type: shell
    command: echo b
    depends_on: a
)";

NodeProc StartAll(const ScratchDir& dir, const std::string& name) {
  return StartNode(
      dir, name,
      {"--role", "all", "--bind", "tcp://127.0.0.1:0", "--api-bind", "tcp://127.0.0.1:0", "--slots",
       "2", "--worker-id", "local", "--config", dir.path() + "/node.yaml", "--api-token", kToken},
      "state");
}

std::string FirstLine(const std::string& s) { return s.substr(0, s.find('\n')); }

std::unique_ptr<httplib::Client> Http(const NodeProc& node) {
  const std::string addr = node.listening["http"].get<std::string>();
  auto c = std::make_unique<httplib::Client>(addr.substr(0, addr.rfind(':')),
                                             std::stoi(addr.substr(addr.rfind(':') + 1)));
  c->set_bearer_token_auth(kToken);
  c->set_read_timeout(15, 0);
  return c;
}

}  // namespace

TEST_CASE("the registry on a real node: versions, a rejected cycle, idempotent triggers, pause",
          "[registry][e2e]") {
  ScratchDir dir;
  AlertReceiver hook;
  dir.Write("node.yaml", "alert-fold-window: 200ms\nalerts:\n  - name: all\n    webhook: \"" +
                             hook.Url() + "\"\n");
  dir.Write("v1.yaml", Pipeline("echo one"));
  dir.Write("v2.yaml", Pipeline("echo two"));
  dir.Write("cycle.yaml", kCycle);
  NodeProc node = StartAll(dir, "node");
  Nodes guard{{&node}};

  CmdResult add = Cli(node, {"pipelines", "add", dir.path() + "/v1.yaml"});
  INFO(add.out << add.err);
  REQUIRE(add.exit_code == 0);
  CHECK(add.out.rfind("demo.reg@1-", 0) == 0);
  CHECK(Cli(node, {"pipelines", "add", dir.path() + "/v1.yaml"}).out.find("(unchanged)") !=
        std::string::npos);
  CmdResult v2 = Cli(node, {"pipelines", "add", dir.path() + "/v2.yaml"});
  REQUIRE(v2.exit_code == 0);
  CHECK(v2.out.rfind("demo.reg@2-", 0) == 0);

  // The cycle is refused with its position; version 2 stays active.
  CmdResult rejected = Cli(node, {"pipelines", "add", dir.path() + "/cycle.yaml"});
  INFO(rejected.err);
  CHECK(rejected.exit_code == 2);
  CHECK(rejected.err.find("cycle.yaml:") != std::string::npos);
  CHECK(rejected.err.find("error:") != std::string::npos);
  json versions = ParseJson(Cli(node, {"pipelines", "versions", "demo.reg", "--json"}).out);
  REQUIRE(versions.is_object());
  CHECK(versions["versions"].size() == 2);
  CHECK(versions["active_version"] == 2);
  CHECK(hook.WaitUntil(
      [](const std::vector<json>& got) {
        for (const json& a : got) {
          if (a.value("type", "") == "pipeline_rejected" && a.value("pipeline", "") == "demo.reg")
            return true;
        }
        return false;
      },
      5000));

  CmdResult diff = Cli(node, {"pipelines", "diff", "demo.reg", "1", "2"});
  CHECK(diff.exit_code == 0);
  CHECK(diff.out.find("- .tasks.a.command: \"echo one\"") != std::string::npos);
  CHECK(diff.out.find("+ .tasks.a.command: \"echo two\"") != std::string::npos);
  json list = ParseJson(Cli(node, {"pipelines", "list", "--json"}).out);
  REQUIRE(list.is_array());
  REQUIRE(list.size() == 1);
  CHECK(list[0]["registered"] == true);
  CHECK(list[0]["active_version"] == 2);

  // Params: undeclared and ill-typed ones are refused.
  CmdResult undeclared = Cli(node, {"trigger", "demo.reg", "-p", "color=red"});
  CHECK(undeclared.exit_code == 2);
  CHECK(undeclared.err.find("declares no param 'color'") != std::string::npos);
  CmdResult ill = Cli(node, {"trigger", "demo.reg", "-p", "limit=ten"});
  CHECK(ill.exit_code == 2);
  CHECK(ill.err.find("integer") != std::string::npos);
  CHECK(Cli(node, {"submit", dir.path() + "/v1.yaml", "-p", "color=red"}).exit_code == 2);
  CmdResult run = Run({Apollo11(), "run", dir.path() + "/v1.yaml", "--state-dir",
                       dir.path() + "/embedded", "-p", "limit=1.5", "--quiet"});
  CHECK(run.exit_code == 2);
  CHECK(run.err.find("integer") != std::string::npos);

  // One key, one run: also after the coordinator is killed -9.
  CmdResult first = Cli(
      node, {"trigger", "demo.reg@1", "-p", "limit=5", "--idempotency-key", "order-42", "--wait"});
  INFO(first.out << first.err);
  REQUIRE(first.exit_code == 0);
  const std::string run_id = FirstLine(first.out);
  json status = ParseJson(Cli(node, {"status", run_id, "--json"}).out);
  CHECK(status["pipeline_version"] == 1);
  CHECK(status["params"]["limit"] == "5");
  CHECK(status["state"] == "SUCCESS");
  ::kill(node.pid, SIGKILL);
  WaitExit(node.pid, 5000);
  node = StartAll(dir, "node2");
  CmdResult again =
      Cli(node, {"trigger", "demo.reg", "-p", "limit=5", "--idempotency-key", "order-42"});
  INFO(again.err);
  REQUIRE(again.exit_code == 0);
  CHECK(FirstLine(again.out) == run_id);
  CHECK(again.err.find("already") != std::string::npos);
  json runs = ParseJson(Cli(node, {"runs", "--json"}).out);
  CHECK(runs.size() == 1);
  // The key with other values is a conflict, not the old run.
  CmdResult other =
      Cli(node, {"trigger", "demo.reg", "-p", "limit=6", "--idempotency-key", "order-42"});
  INFO(other.err);
  CHECK(other.exit_code == 2);
  CHECK(other.err.find("idempotency key order-42 started run " + run_id +
                       " of demo.reg with other values: limit=6 (the run has 5)") !=
        std::string::npos);
  CHECK(ParseJson(Cli(node, {"runs", "--json"}).out).size() == 1);

  // The same over HTTP with the token, then pause.
  std::unique_ptr<httplib::Client> http = Http(node);
  auto posted = http->Post("/api/pipelines/demo.reg/runs", {{"Idempotency-Key", "order-42"}}, "{}",
                           "application/json");
  REQUIRE(posted);
  CHECK(posted->status == 200);
  CHECK(json::parse(posted->body)["run_id"] == run_id);
  auto conflict = http->Post("/api/pipelines/demo.reg/runs", {{"Idempotency-Key", "order-42"}},
                             R"({"params": {"limit": 6}})", "application/json");
  REQUIRE(conflict);
  CHECK(conflict->status == 409);
  CHECK(conflict->body.find("limit=6 (the run has 5)") != std::string::npos);
  CmdResult paused = Cli(node, {"pause", "demo.reg"});
  REQUIRE(paused.exit_code == 0);
  CmdResult refused = Cli(node, {"trigger", "demo.reg"});
  CHECK(refused.exit_code != 0);
  CHECK(refused.err.find("paused") != std::string::npos);
  auto refused_http = http->Post("/api/pipelines/demo.reg/runs", "{}", "application/json");
  REQUIRE(refused_http);
  CHECK(refused_http->status == 409);
  REQUIRE(Cli(node, {"unpause", "demo.reg"}).exit_code == 0);
  // Pause and unpause over HTTP too.
  auto paused_http = http->Post("/api/pipelines/demo.reg/pause", "", "application/json");
  REQUIRE(paused_http);
  INFO(paused_http->body);
  CHECK(paused_http->status == 200);
  CHECK(json::parse(paused_http->body)["paused"] == true);
  CHECK(http->Post("/api/pipelines/demo.reg/runs", "{}", "application/json")->status == 409);
  auto unpaused_http = http->Post("/api/pipelines/demo.reg/unpause", "", "application/json");
  REQUIRE(unpaused_http);
  CHECK(unpaused_http->status == 200);
  CHECK(json::parse(unpaused_http->body)["paused"] == false);
  // demo.reg has no schedule: nothing to backfill.
  auto no_schedule =
      http->Post("/api/pipelines/demo.reg/backfill",
                 R"({"from": "2026-11-01", "to": "2026-11-02"})", "application/json");
  REQUIRE(no_schedule);
  CHECK(no_schedule->status == 404);
  CHECK(no_schedule->body.find("has no schedule") != std::string::npos);
  auto started = http->Post("/api/pipelines/demo.reg/runs",
                            R"({"params": {"limit": 7}, "version": "2"})", "application/json");
  REQUIRE(started);
  CHECK(started->status == 201);
  CHECK(json::parse(started->body)["version"] == 2);

  // A pipeline registered over HTTP.
  auto registered = http->Post("/api/pipelines", Pipeline("echo three"), "application/yaml");
  REQUIRE(registered);
  INFO(registered->body);
  CHECK(registered->status == 201);
  CHECK(json::parse(registered->body)["version"] == 3);
  auto bad = http->Post("/api/pipelines", kCycle, "application/yaml");
  REQUIRE(bad);
  CHECK(bad->status == 400);

  // Read back over HTTP (a version, the versions), then remove the pipeline.
  auto shown = http->Get("/api/pipelines/demo.reg@2");
  REQUIRE(shown);
  INFO(shown->body);
  CHECK(shown->status == 200);
  CHECK(json::parse(shown->body)["version"] == 2);
  CHECK(json::parse(shown->body).contains("snapshot"));
  auto listed = http->Get("/api/pipelines/demo.reg/versions");
  REQUIRE(listed);
  CHECK(listed->status == 200);
  CHECK(json::parse(listed->body)["versions"].size() == 3);
  CHECK(http->Get("/api/pipelines/demo.reg@9")->status == 404);
  auto removed = http->Post("/api/pipelines/demo.reg/remove", "", "application/json");
  REQUIRE(removed);
  CHECK(removed->status == 200);
  CHECK(json::parse(removed->body)["active"] == 0);
  auto after = http->Post("/api/pipelines/demo.reg/runs", "{}", "application/json");
  REQUIRE(after);
  CHECK(after->status >= 400);
}

TEST_CASE("a pipeline registered over HTTP makes the coordinator read nothing from its disk",
          "[registry][e2e][security]") {
  ScratchDir dir;
  // Stands for /etc/shadow, the CURVE secret key or the token file.
  const std::string secret = dir.Write("coordinator-secret.txt", "TOPSECRET-4711\n");
  dir.Write("node.yaml", "");
  NodeProc node = StartAll(dir, "node");
  Nodes guard{{&node}};
  auto http = Http(node);
  auto post = [&](const std::string& name, const std::string& task) {
    const std::string yaml =
        "version: \"1.0\"\nname: demo." + name + "\npipeline:\n  - id: t\n" + task;
    auto res = http->Post("/api/pipelines", yaml, "application/yaml");
    REQUIRE(res);
    return *res;
  };
  for (const std::string& path : {secret, std::string("/proc/self/environ")}) {
    auto db = post("steal", "    type: db\n    host: sqlite:///" + dir.path() +
                                "/x.db\n    script: " + path + "\n");
    INFO(db.body);
    CHECK(db.status == 400);
    CHECK(db.body.find("needs 'host'") == std::string::npos);  // only the script is refused
    CHECK(db.body.find("the coordinator reads no file") != std::string::npos);
    CHECK(db.body.find("write the SQL in 'sql:'") != std::string::npos);
    CHECK(db.body.find("TOPSECRET") == std::string::npos);
  }
  auto imported =
      http->Post("/api/pipelines",
                 "version: \"1.0\"\nname: demo.imp\nimports: [" + secret +
                     "]\npipeline:\n  - id: t\n    type: shell\n    command: \"true\"\n",
                 "application/yaml");
  REQUIRE(imported);
  CHECK(imported->status == 400);
  CHECK(imported->body.find("'imports' names one") != std::string::npos);
  // A python script is the workers' path: not looked up here, so whether a
  // file exists on the coordinator tells the caller nothing.
  auto exists = post("py1", "    type: python\n    script: " + secret + "\n");
  auto missing = post("py2", "    type: python\n    script: /nonexistent/x.py\n");
  CHECK(exists.status == 201);
  CHECK(missing.status == 201);
  auto relative = post("py3", "    type: python\n    script: x.py\n");
  CHECK(relative.status == 400);
  CHECK(relative.body.find("must be a plain absolute path") != std::string::npos);
  // Nothing the coordinator holds is served back.
  for (const char* name : {"demo.steal", "demo.py1", "demo.imp"}) {
    auto shown = http->Get(std::string("/api/pipelines/") + name);
    REQUIRE(shown);
    CHECK(shown->body.find("TOPSECRET") == std::string::npos);
  }
  // The same files through the CLI are the author's own: read on the client.
  const std::string sql = dir.Write("q.sql", "select 1");
  const std::string local =
      dir.Write("local.yaml",
                "version: \"1.0\"\nname: demo.local\npipeline:\n  - id: t\n    type: db\n"
                "    host: sqlite:///" +
                    dir.path() + "/x.db\n    script: q.sql\n");
  CmdResult add = Cli(node, {"pipelines", "add", local});
  INFO(add.err);
  CHECK(add.exit_code == 0);
}
