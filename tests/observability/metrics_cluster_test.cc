// Metrics and the HTTP API end to end: real `apollo11-node` processes
// (coordinator + worker over tcp, and --role=all), scraped and called over
// real HTTP with httplib::Client, before and after runs.

#include <httplib.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <nlohmann/json.hpp>

#include "tests/actors/cluster_harness.h"
#include "tests/observability/prom_parser.h"

using namespace apollo11::testing;  // NOLINT: test file

namespace {

constexpr const char* kToken = "test-token-0123456789abcdef";

// A client of a node's "http" address (HOST:PORT from its listening line).
httplib::Client Http(const NodeProc& node) {
  const std::string addr = node.listening["http"].get<std::string>();
  httplib::Client c(addr.substr(0, addr.rfind(':')), std::stoi(addr.substr(addr.rfind(':') + 1)));
  c.set_read_timeout(15, 0);
  return c;
}

PromScrape Scrape(const NodeProc& node) {
  auto res = Http(node).Get("/metrics");
  REQUIRE(res);
  REQUIRE(res->status == 200);
  PromScrape s = ParsePrometheusText(res->body);
  INFO(res->body);
  REQUIRE(s.error.empty());
  return s;
}

struct JsonReply {
  int status = 0;
  nlohmann::json body;
};

JsonReply GetJson(const NodeProc& node, const std::string& path) {
  auto res = Http(node).Get(path);
  REQUIRE(res);
  return {res->status, nlohmann::json::parse(res->body, nullptr, false)};
}

JsonReply PostJson(const NodeProc& node, const std::string& path, const std::string& body,
                   const std::string& token) {
  httplib::Headers headers;
  if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
  auto res = Http(node).Post(path, headers, body, "application/json");
  REQUIRE(res);
  return {res->status, nlohmann::json::parse(res->body, nullptr, false)};
}

// Waits until the run is in a final state; returns that state.
std::string WaitRunEnds(const NodeProc& node, const std::string& run_id) {
  std::string state;
  WaitFor(
      [&] {
        JsonReply r = GetJson(node, "/api/runs/" + run_id);
        state = r.status == 200 ? r.body.value("state", "") : "";
        return state == "SUCCESS" || state == "FAILED" || state == "CANCELED";
      },
      20000);
  return state;
}

bool WorkersJoined(const NodeProc& node, size_t n) {
  return WaitFor(
      [&] {
        JsonReply r = GetJson(node, "/api/workers");
        return r.status == 200 && r.body.is_array() && r.body.size() == n;
      },
      10000);
}

CmdResult Submit(const NodeProc& coord, const std::string& file) {
  return Run({Apollo11(), "submit", file, "--wait", "--json", "--coordinator",
              coord.listening["api"].get<std::string>()});
}

std::string RunIdOf(const CmdResult& r) {
  auto doc = ParseJson(r.out.substr(r.out.find('{')));
  return doc.is_object() ? doc.value("run_id", "") : "";
}

// a -> b, a -> c: three shell tasks; b writes the `who` param into DIR/who.txt.
std::string FanOut(const ScratchDir& dir) {
  return dir.Write("fan.yaml", R"(version: "1.0"
name: test.fanout
params:
  who: nobody
pipeline:
  - id: a
    type: shell
    command: "true"
  - id: b
    type: shell
    command: "echo $APOLLO11_PARAM_WHO > )" +
                                   dir.path() + R"(/who.txt"
    depends_on: a
  - id: c
    type: shell
    command: "true"
    depends_on: a
)");
}

// A series absent before (a pipeline's, registered with its first run)
// counts from 0.
double Delta(const PromScrape& before, const PromScrape& after, const std::string& name,
             const std::map<std::string, std::string>& labels = {}) {
  const double b = before.Value(name, labels);
  return after.Value(name, labels) - (std::isnan(b) ? 0 : b);
}

// The counters a successful 3-task run must move, by exactly that much.
void CheckSuccessfulRun(const PromScrape& b, const PromScrape& a) {
  const double ready = Delta(b, a, "apollo11_transitions_total", {{"to", "ready"}});
  const double running = Delta(b, a, "apollo11_transitions_total", {{"to", "running"}});
  CHECK(Delta(b, a, "apollo11_executions_finished_total", {{"state", "success"}}) == 3);
  CHECK(Delta(b, a, "apollo11_pipeline_executions_finished_total",
              {{"pipeline", "test.fanout"}, {"state", "success"}}) == 3);
  CHECK(Delta(b, a, "apollo11_pipeline_runs_finished_total",
              {{"pipeline", "test.fanout"}, {"state", "success"}}) == 1);
  CHECK(Delta(b, a, "apollo11_pipeline_run_duration_seconds_count",
              {{"pipeline", "test.fanout"}}) == 1);
  CHECK(a.Sum("apollo11_executions") == 0);
  CHECK(Delta(b, a, "apollo11_transitions_total", {{"to", "success"}}) == 3);
  CHECK(Delta(b, a, "apollo11_transitions_total", {{"to", "failed"}}) == 0);
  CHECK(Delta(b, a, "apollo11_executions_created_total") == 3);
  CHECK(Delta(b, a, "apollo11_runs_submitted_total") == 1);
  CHECK(Delta(b, a, "apollo11_runs_finished_total", {{"outcome", "success"}}) == 1);
  CHECK(Delta(b, a, "apollo11_runs_finished_total", {{"outcome", "failed"}}) == 0);
  CHECK(a.Value("apollo11_runs_active") == 0);
  CHECK(a.Value("apollo11_executions", {{"state", "pending"}}) == 0);
  CHECK(a.Value("apollo11_backlog") == 0);
  // Every attempt was placed once and READY once; a requeue (a worker lost
  // under load) adds one of each.
  CHECK(ready >= 3);
  CHECK(running == ready);
  CHECK(Delta(b, a, "apollo11_dispatch_latency_seconds_count") == running);
  CHECK(Delta(b, a, "apollo11_task_latency_seconds_count") == 3);
  CHECK(Delta(b, a, "apollo11_pipeline_task_duration_seconds_count",
              {{"pipeline", "test.fanout"}}) == 3);
  // What was journaled is what was counted.
  double transitions = 0;
  for (const auto& s : a.samples) {
    if (s.name == "apollo11_transitions_total") transitions += Delta(b, a, s.name, s.labels);
  }
  CHECK(Delta(b, a, "apollo11_journal_transitions_total") == transitions);
  CHECK(Delta(b, a, "apollo11_journal_commits_total") >= 1);
  CHECK(Delta(b, a, "apollo11_journal_commit_seconds_count") ==
        Delta(b, a, "apollo11_journal_commits_total"));
}

}  // namespace

TEST_CASE("a coordinator's metrics move by exactly a run's transitions, and its worker's too",
          "[cluster][metrics]") {
  ScratchDir dir;
  NodeProc coord = StartNode(dir, "coord",
                             {"--role", "coordinator", "--bind", "tcp://127.0.0.1:0", "--api-bind",
                              "tcp://127.0.0.1:0", "--api-token", kToken});
  NodeProc worker =
      StartNode(dir, "w1",
                {"--role", "worker", "--connect", coord.listening["workers"].get<std::string>(),
                 "--worker-id", "w1", "--slots", "2"});
  Nodes guard{{&coord, &worker}};
  REQUIRE(coord.listening.contains("http"));
  REQUIRE(worker.listening.contains("http"));
  REQUIRE(WorkersJoined(coord, 1));
  CHECK(Http(coord).Get("/healthz")->status == 200);
  CHECK(Http(coord).Get("/readyz")->status == 200);

  const PromScrape before = Scrape(coord);
  const PromScrape worker_before = Scrape(worker);
  CHECK(before.Value("apollo11_backlog_cap") == 1000);
  CmdResult r = Submit(coord, FanOut(dir));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const std::string run_id = RunIdOf(r);
  const PromScrape after = Scrape(coord);
  const PromScrape worker_after = Scrape(worker);
  CheckSuccessfulRun(before, after);
  CHECK(after.Value("apollo11_retry_ratio") == 0);

  // The worker counted what it ran.
  const double placed = Delta(before, after, "apollo11_transitions_total", {{"to", "running"}});
  CHECK(Delta(worker_before, worker_after, "apollo11_worker_executions_started_total") == placed);
  CHECK(Delta(worker_before, worker_after, "apollo11_worker_executions_finished_total") == placed);
  CHECK(Delta(worker_before, worker_after, "apollo11_worker_spawn_seconds_count") == placed);
  CHECK(worker_after.Value("apollo11_worker_slots") == 2);
  // The default queue depth adapts between 2 x slots (at least 4) and 32 x slots.
  CHECK(worker_after.Value("apollo11_worker_queue_depth") >= 4);
  CHECK(worker_after.Value("apollo11_worker_queue_depth") <= 64);
  CHECK(worker_after.Value("apollo11_worker_running") == 0);
  CHECK(std::isnan(worker_after.Value("apollo11_runs_submitted_total")));  // no coordinator here
  CHECK(Http(worker).Get("/api/runs")->status == 404);                     // and no API

  // The dispatcher's gauges settle within their 100 ms period.
  CHECK(WaitFor(
      [&] {
        PromScrape s = Scrape(coord);
        return s.Value("apollo11_workers", {{"state", "idle"}}) == 1 &&
               s.Value("apollo11_tasks_waiting") == 0 && s.Value("apollo11_cluster_slots") == 2 &&
               s.Value("apollo11_cluster_slots_free") == 2;
      },
      3000));

  SECTION("the read-only API answers with the journal's documents") {
    JsonReply runs = GetJson(coord, "/api/runs");
    REQUIRE(runs.status == 200);
    REQUIRE(runs.body.is_array());
    CHECK(runs.body[0]["run_id"] == run_id);
    JsonReply run = GetJson(coord, "/api/runs/" + run_id);
    REQUIRE(run.status == 200);
    CHECK(run.body["state"] == "SUCCESS");
    CHECK(run.body["tasks"].size() == 3);
    JsonReply history = GetJson(coord, "/api/runs/" + run_id + "/history");
    REQUIRE(history.status == 200);
    // 3 tasks x PENDING->READY->RUNNING->SUCCESS (9), plus RUNNING->READY->RUNNING
    // for any requeue.
    CHECK(history.body.size() == 3 + 2 * placed);
    JsonReply exec = GetJson(coord, "/api/executions/" + run_id + ".b");
    REQUIRE(exec.status == 200);
    CHECK(exec.body["state"] == "SUCCESS");
    CHECK(exec.body["worker"] == "w1");
    CHECK(exec.body["history"].size() >= 3);
    CHECK(exec.body["history"].back()["to"] == "SUCCESS");
    JsonReply workers = GetJson(coord, "/api/workers");
    CHECK(workers.body[0]["id"] == "w1");
    CHECK(workers.body[0]["slots"] == 2);
    JsonReply pipelines = GetJson(coord, "/api/pipelines");
    REQUIRE(pipelines.status == 200);
    REQUIRE(pipelines.body.size() == 1);
    CHECK(pipelines.body[0]["name"] == "test.fanout");
    CHECK(pipelines.body[0]["last_run_id"] == run_id);
    CHECK(GetJson(coord, "/api/runs/r-no-such-run").status == 404);
    CHECK(GetJson(coord, "/api/executions/" + run_id + ".nope").status == 404);
  }

  SECTION("a trigger needs the token, runs the registered version with its params") {
    const std::string path = "/api/pipelines/test.fanout/runs";
    const std::string body = R"({"params": {"who": "http-caller"}})";
    // Only a registered pipeline can be triggered (issue 16): register it.
    REQUIRE(PostJson(coord, "/api/pipelines", dir.Read("fan.yaml"), kToken).status / 100 == 2);
    CHECK(PostJson(coord, path, body, "").status == 401);
    CHECK(PostJson(coord, path, body, "wrong-token-0123456789").status == 401);
    CHECK(PostJson(coord, path, R"({"params": {"whom": "x"}})", kToken).status == 400);
    CHECK(PostJson(coord, "/api/pipelines/test.nothing/runs", "", kToken).status == 404);
    CHECK(Delta(before, Scrape(coord), "apollo11_runs_submitted_total") == 1);  // none of those

    const PromScrape b = Scrape(coord);
    JsonReply created = PostJson(coord, path, body, kToken);
    REQUIRE(created.status == 201);
    const std::string id = created.body["run_id"];
    CHECK(WaitRunEnds(coord, id) == "SUCCESS");
    CHECK(dir.Read("who.txt") == "http-caller\n");
    CheckSuccessfulRun(b, Scrape(coord));
  }

  SECTION("a cancel needs the token, stops the run, and a second one is a conflict") {
    std::string file = dir.Write("slow.yaml", R"(version: "1.0"
name: test.slow
pipeline:
  - id: sleeper
    type: shell
    command: "sleep 30"
)");
    CmdResult submitted = Run(
        {Apollo11(), "submit", file, "--coordinator", coord.listening["api"].get<std::string>()});
    REQUIRE(submitted.exit_code == 0);
    std::string id = submitted.out.substr(0, submitted.out.find('\n'));
    REQUIRE(WaitFor(
        [&] {
          JsonReply r = GetJson(coord, "/api/runs/" + id);
          return r.status == 200 && r.body["tasks"]["sleeper"]["state"] == "RUNNING";
        },
        10000));
    const std::string cancel = "/api/runs/" + id + "/cancel";
    CHECK(PostJson(coord, cancel, "", "").status == 401);
    CHECK(GetJson(coord, "/api/runs/" + id).body["state"] == "RUNNING");
    JsonReply accepted = PostJson(coord, cancel, "", kToken);
    CHECK(accepted.status == 202);
    CHECK(WaitRunEnds(coord, id) == "CANCELED");
    CHECK(PostJson(coord, cancel, "", kToken).status == 409);
    const PromScrape s = Scrape(coord);
    CHECK(Delta(before, s, "apollo11_runs_finished_total", {{"outcome", "canceled"}}) == 1);
    CHECK(Delta(before, s, "apollo11_executions_finished_total", {{"state", "canceled"}}) == 1);
    CHECK(s.Value("apollo11_runs_active") == 0);
  }
}

TEST_CASE("role=all serves one /metrics for both roles and refuses mutations without a token",
          "[cluster][metrics]") {
  ScratchDir dir;
  NodeProc node = StartNode(dir, "all",
                            {"--role", "all", "--bind", "tcp://127.0.0.1:0", "--api-bind",
                             "tcp://127.0.0.1:0", "--slots", "2", "--worker-id", "local"});
  Nodes guard{{&node}};
  REQUIRE(WorkersJoined(node, 1));
  CHECK(Http(node).Get("/readyz")->status == 200);

  const PromScrape before = Scrape(node);
  CmdResult r = Submit(node, FanOut(dir));
  INFO(r.out << r.err);
  REQUIRE(r.exit_code == 0);
  const PromScrape after = Scrape(node);
  CheckSuccessfulRun(before, after);
  CHECK(Delta(before, after, "apollo11_worker_executions_finished_total") ==
        Delta(before, after, "apollo11_transitions_total", {{"to", "running"}}));

  // No token configured: every mutating call is refused, with or without one.
  JsonReply refused = PostJson(node, "/api/pipelines/test.fanout/runs", "", "");
  CHECK(refused.status == 403);
  CHECK(PostJson(node, "/api/pipelines/test.fanout/runs", "", kToken).status == 403);
  CHECK(PostJson(node, "/api/runs/" + RunIdOf(r) + "/cancel", "", kToken).status == 403);
  CHECK(Delta(before, Scrape(node), "apollo11_runs_submitted_total") == 1);

  SECTION("timeouts and retries are counted, and the retry ratio follows") {
    std::string file = dir.Write("late.yaml", R"(version: "1.0"
name: test.late
pipeline:
  - id: slow
    type: shell
    command: "sleep 5"
    timeout: 300ms
    retry: {max_retries: 1, delay: 10ms}
)");
    const PromScrape b = Scrape(node);
    CmdResult late = Submit(node, file);
    CHECK(late.exit_code == 1);
    const PromScrape a = Scrape(node);
    CHECK(Delta(b, a, "apollo11_timeouts_total") == 2);
    CHECK(Delta(b, a, "apollo11_transitions_total", {{"to", "retrying"}}) == 1);
    CHECK(Delta(b, a, "apollo11_runs_finished_total", {{"outcome", "failed"}}) == 1);
    CHECK(Delta(b, a, "apollo11_executions_finished_total", {{"state", "timeout"}}) == 1);
    CHECK(Delta(b, a, "apollo11_pipeline_executions_finished_total",
                {{"pipeline", "test.late"}, {"state", "timeout"}}) == 1);
    CHECK(a.Value("apollo11_retry_ratio") == Approx(1.0 / 4));  // 1 retry, 4 executions
  }
}

TEST_CASE("a node's /metrics after a run passes promtool check metrics", "[cluster][metrics]") {
  if (Run({"/bin/sh", "-c", "command -v promtool"}).exit_code != 0) {
    WARN(
        "SKIPPED: promtool is not installed (Debian package prometheus): /metrics is not "
        "linted");
    return;
  }
  ScratchDir dir;
  NodeProc node = StartNode(dir, "all",
                            {"--role", "all", "--bind", "tcp://127.0.0.1:0", "--api-bind",
                             "tcp://127.0.0.1:0", "--slots", "2", "--worker-id", "local"});
  Nodes guard{{&node}};
  REQUIRE(WorkersJoined(node, 1));
  CmdResult r = Submit(node, FanOut(dir));
  REQUIRE(r.exit_code == 0);
  auto res = Http(node).Get("/metrics");
  REQUIRE(res);
  REQUIRE(res->status == 200);
  // Every series the issue asks for is there before it is linted.
  const PromScrape s = ParsePrometheusText(res->body);
  REQUIRE(s.error.empty());
  for (const char* family :
       {"process_cpu_seconds_total", "process_resident_memory_bytes",
        "process_virtual_memory_bytes", "process_open_fds", "process_max_fds",
        "process_start_time_seconds", "apollo11_build_info",
        "apollo11_pipeline_runs_finished_total", "apollo11_pipeline_executions_finished_total",
        "apollo11_pipeline_run_duration_seconds", "apollo11_pipeline_task_duration_seconds",
        "apollo11_executions_finished_total"}) {
    INFO(family);
    CHECK(s.types.count(family) == 1);
  }
  CHECK(s.Sum("apollo11_build_info") == 1);
  // The commit label is the one `--version` prints (the generated header's),
  // not "unknown".
  const CmdResult version = Run({Apollo11(), "--version"});
  const size_t at = version.out.find("(commit ");
  REQUIRE(at != std::string::npos);
  const std::string commit = version.out.substr(at + 8, version.out.find(',', at) - at - 8);
  CHECK(res->body.find("commit=\"" + commit + "\"") != std::string::npos);
  const std::string file = dir.Write("metrics.txt", res->body);
  CmdResult lint = Run({"/bin/sh", "-c", "promtool check metrics < " + file + " 2>&1"});
  INFO(lint.out << lint.err);
  CHECK(lint.exit_code == 0);
  CHECK(lint.out.empty());
}

TEST_CASE("the HTTP API works on a CURVE coordinator (the node authenticates as itself)",
          "[cluster][metrics][security]") {
  ScratchDir dir;
  REQUIRE(Run({Apollo11(), "keygen", dir.path() + "/coord"}).exit_code == 0);
  REQUIRE(Run({Apollo11(), "keygen", dir.path() + "/client"}).exit_code == 0);
  dir.Write("authorized_keys", dir.Read("client.pub"));
  NodeProc coord =
      StartNode(dir, "coord",
                {"--role", "all", "--bind", "tcp://127.0.0.1:0", "--api-bind", "tcp://127.0.0.1:0",
                 "--curve-key", dir.path() + "/coord.key", "--authorized-keys",
                 dir.path() + "/authorized_keys", "--slots", "1"});
  Nodes guard{{&coord}};
  REQUIRE(WorkersJoined(coord, 1));
  CHECK(GetJson(coord, "/api/runs").status == 200);
  CHECK(Http(coord).Get("/readyz")->status == 200);
}

TEST_CASE("HTTP flags are checked before a node starts", "[cluster][metrics][security]") {
  ScratchDir dir;
  auto start = [&](std::vector<std::string> extra) {
    std::vector<std::string> argv = {Node(),        "start",
                                     "--role",      "coordinator",
                                     "--state-dir", dir.path() + "/s",
                                     "--bind",      "tcp://127.0.0.1:0",
                                     "--api-bind",  "tcp://127.0.0.1:0"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return Run(argv);
  };
  CmdResult open = start({"--http-bind", "0.0.0.0:0"});
  CHECK(open.exit_code == 2);
  CHECK(open.err.find("--insecure") != std::string::npos);
  CmdResult bad = start({"--http-bind", "nonsense"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("HOST:PORT") != std::string::npos);
  CmdResult short_token = start({"--http-bind", "127.0.0.1:0", "--api-token", "short"});
  CHECK(short_token.exit_code == 2);
  CHECK(short_token.err.find("16 characters") != std::string::npos);
  CmdResult no_file = start({"--api-token-file", dir.path() + "/missing"});
  CHECK(no_file.exit_code == 2);
  CHECK(no_file.err.find("--api-token-file") != std::string::npos);
}

TEST_CASE("a coordinator restarted after kill -9 counts the recovered run's executions once",
          "[cluster][metrics][recovery]") {
  ScratchDir dir;
  const std::string workers = "tcp://127.0.0.1:" + std::to_string(FreeTcpPort());
  const std::string api = "tcp://127.0.0.1:" + std::to_string(FreeTcpPort());
  NodeProc coord = StartCoordinator(dir, workers, api, "coord");
  NodeProc w1 = StartWorker(dir, coord, "w1", 2);
  NodeProc coord2;
  Nodes guard{{&coord, &w1, &coord2}};
  REQUIRE(WorkersJoined(coord, 1));
  // first -> (second_a, second_b): the kill falls while the second layer runs.
  std::string file = dir.Write("p.yaml", R"(version: "1.0"
name: test.restart
pipeline:
  - id: first
    type: shell
    command: "true"
  - id: second_a
    type: shell
    command: "touch )" + dir.path() + R"(/started; sleep 1"
    depends_on: first
  - id: second_b
    type: shell
    command: "sleep 1"
    depends_on: first
)");
  CmdResult sub = Run({Apollo11(), "submit", file, "--coordinator", api});
  REQUIRE(sub.exit_code == 0);
  const std::string run_id = sub.out.substr(0, sub.out.find('\n'));
  REQUIRE(WaitFor([&] { return dir.Exists("started"); }, 10000));
  ::kill(coord.pid, SIGKILL);
  WaitExit(coord.pid, 5000);
  coord.pid = -1;

  coord2 = StartCoordinator(dir, workers, api, "coord2", "coord");
  CHECK(WaitRunEnds(coord2, run_id) == "SUCCESS");
  const PromScrape s = Scrape(coord2);
  // The new process counts what it finished (second_a, second_b), never
  // `first`, which the killed process finished and counted; its gauge of
  // current states took the recovered executions and let them go.
  CHECK(s.Value("apollo11_executions_finished_total", {{"state", "success"}}) == 2);
  for (const auto& sample : s.samples) {
    if (sample.name == "apollo11_executions") CHECK(sample.value >= 0);
  }
  CHECK(s.Sum("apollo11_executions") == 0);
  CHECK(s.Value("apollo11_runs_active") == 0);
  CHECK(s.Value("apollo11_runs_finished_total", {{"outcome", "success"}}) == 1);
  CHECK(s.Value("apollo11_runs_submitted_total") == 0);  // submitted to the old process
  CHECK(s.Value("apollo11_executions_created_total") == 0);
}
