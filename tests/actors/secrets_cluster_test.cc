// Secrets end to end: a coordinator and a worker as real processes, a task
// that reads a secret from a file, the worker's environment and a systemd
// credential. The task sees the values; nothing the cluster writes or
// answers holds them (LMDB files, outboxes, task logs, node logs, the HTTP
// API, `status` and `history`), not even when the task prints them: they are
// masked. Another pipeline cannot read them.

#include <httplib.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "tests/actors/cluster_harness.h"

using namespace apollo11::testing;  // NOLINT: test file

namespace {

constexpr const char* kFileSecret = "file-secret-7f3a9c1e-do-not-leak";
constexpr const char* kEnvSecret = "env-secret-52b8d04f-do-not-leak";
constexpr const char* kCredSecret = "cred-secret-c61e2a97-do-not-leak";
constexpr const char* kPlainEnv = "plain-env-value-4411";

std::string Slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Every file under `root` whose bytes contain `needle`.
std::vector<std::string> FilesHolding(const std::string& root, const std::string& needle) {
  std::vector<std::string> found;
  for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
    if (e.is_regular_file() && Slurp(e.path()).find(needle) != std::string::npos) {
      found.push_back(e.path().string());
    }
  }
  return found;
}

std::string HttpGet(const NodeProc& node, const std::string& path) {
  const std::string addr = node.listening["http"].get<std::string>();
  httplib::Client c(addr.substr(0, addr.rfind(':')), std::stoi(addr.substr(addr.rfind(':') + 1)));
  c.set_read_timeout(15, 0);
  auto res = c.Get(path);
  REQUIRE(res);
  return res->body;
}

// An http task's secrets, as the server it calls receives them.
struct HookServer {
  httplib::Server server;
  int port = 0;
  std::mutex mu;
  std::string authorization, key, body;
  std::jthread thread;  // last: joined before what it uses goes away

  HookServer() {
    server.Post("/hook", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(mu);
      authorization = req.get_header_value("Authorization");
      key = req.get_param_value("key");
      body = req.body;
      res.set_content("ok", "text/plain");
    });
    port = server.bind_to_any_port("127.0.0.1");
    thread = std::jthread([this] { server.listen_after_bind(); });
  }
  ~HookServer() { server.stop(); }
};

std::string Pipeline(const std::string& secrets_dir, const std::string& seen_dir, int hook_port) {
  return R"(version: "1.0"
name: test.secrets
pipeline:
  - id: calls
    type: http
    method: POST
    url: "http://127.0.0.1:)" +
         std::to_string(hook_port) + R"(/hook?key=$API_TOKEN"
    headers: {Authorization: "Bearer ${DB_PASSWORD}"}
    body: "cred=$CRED"
    secrets:
      DB_PASSWORD: file:)" +
         secrets_dir + R"(/test/db1
      API_TOKEN: env:OPS_TEST_UPSTREAM_TOKEN
      CRED: credential:test.cred1
  - id: reads
    type: shell
    command: "printf %s \"$DB_PASSWORD\" > )" +
         seen_dir + R"(/db && printf %s \"$API_TOKEN\" > )" + seen_dir +
         R"(/api && printf %s \"$CRED\" > )" + seen_dir + R"(/cred && printf %s \"$PLAIN\" > )" +
         seen_dir + R"(/plain"
    env: {PLAIN: )" +
         kPlainEnv + R"(}
    secrets:
      DB_PASSWORD: file:)" +
         secrets_dir + R"(/test/db1
      API_TOKEN: env:OPS_TEST_UPSTREAM_TOKEN
      CRED: credential:test.cred1
  - id: echoes
    type: shell
    command: "echo \"pw is $DB_PASSWORD, token $API_TOKEN\"; echo \"$DB_PASSWORD\" >&2; printf '{\"pw\":\"%s\"}' \"$DB_PASSWORD\" > \"$APOLLO11_OUTPUT\""
    secrets:
      DB_PASSWORD: file:)" +
         secrets_dir + R"(/test/db1
      API_TOKEN: env:OPS_TEST_UPSTREAM_TOKEN
  - id: open_mode
    type: shell
    command: "true"
    retry: {max_retries: 2, delay: 50ms}
    secrets: {P: file:)" +
         secrets_dir + R"(/test/open}
  - id: missing
    type: shell
    command: "true"
    retry: {max_retries: 1, delay: 50ms}
    secrets: {P: file:)" +
         secrets_dir + R"(/test/nothing-here}
)";
}

// Another team's pipeline pointing at test.secrets' file and credential.
std::string Thief(const std::string& secrets_dir, const std::string& seen_dir) {
  return R"(version: "1.0"
name: other.thief
pipeline:
  - id: file
    type: shell
    command: "printf %s \"$P\" > )" +
         seen_dir + R"(/stolen"
    secrets: {P: file:)" +
         secrets_dir + R"(/test/db1}
  - id: via_link
    type: shell
    command: "printf %s \"$P\" > )" +
         seen_dir + R"(/stolen2"
    secrets: {P: file:)" +
         secrets_dir + R"(/other/link}
  - id: credential
    type: shell
    command: "true"
    secrets: {P: credential:test.cred1}
)";
}

}  // namespace

TEST_CASE("a task sees its secrets and no file, log or answer of the cluster holds them",
          "[secrets][cluster]") {
  ScratchDir dir;      // state dirs and node logs: grepped
  ScratchDir outside;  // the secrets and what the task saw: not grepped
  std::filesystem::create_directories(outside.path() + "/secrets/test");
  std::filesystem::create_directories(outside.path() + "/secrets/other");
  std::filesystem::create_directories(outside.path() + "/seen");
  std::filesystem::create_directories(outside.path() + "/creds");
  const std::string secrets = outside.path() + "/secrets";
  outside.Write("secrets/test/db1", std::string(kFileSecret) + "\n");
  REQUIRE(::chmod((secrets + "/test/db1").c_str(), 0600) == 0);
  outside.Write("secrets/test/open", "readable by all");
  REQUIRE(::chmod((secrets + "/test/open").c_str(), 0644) == 0);
  REQUIRE(::symlink((secrets + "/test/db1").c_str(), (secrets + "/other/link").c_str()) == 0);
  outside.Write("creds/test.cred1", kCredSecret);

  NodeProc coord = StartCoordinator(dir);
  // Only the worker's environment has the token and the credentials dir.
  ::setenv("OPS_TEST_UPSTREAM_TOKEN", kEnvSecret, 1);
  ::setenv("CREDENTIALS_DIRECTORY", (outside.path() + "/creds").c_str(), 1);
  ::setenv("APOLLO11_SECRETS_DIR", secrets.c_str(), 1);
  NodeProc worker = StartWorker(dir, coord, "w1", 2);
  ::unsetenv("OPS_TEST_UPSTREAM_TOKEN");
  ::unsetenv("CREDENTIALS_DIRECTORY");
  ::unsetenv("APOLLO11_SECRETS_DIR");
  Nodes nodes{{&coord, &worker}};
  REQUIRE(WaitFor([&] { return WorkerCount(coord) == 1; }, 10000));

  HookServer hook;
  const std::string file =
      dir.Write("secrets.yaml", Pipeline(secrets, outside.path() + "/seen", hook.port));
  CmdResult submitted = Cli(coord, {"submit", file, "--wait", "--json"});
  INFO(submitted.out << submitted.err);
  auto run = ParseJson(submitted.out.substr(submitted.out.find('{')));
  REQUIRE(run.is_object());
  const std::string run_id = run.value("run_id", "");
  REQUIRE(!run_id.empty());

  // The task saw every value.
  CHECK(outside.Read("seen/db") == kFileSecret);
  CHECK(outside.Read("seen/api") == kEnvSecret);
  CHECK(outside.Read("seen/cred") == kCredSecret);
  CHECK(outside.Read("seen/plain") == kPlainEnv);
  {  // The http task's, in its header, url and body, put in by the worker.
    std::lock_guard lock(hook.mu);
    CHECK(hook.authorization == std::string("Bearer ") + kFileSecret);
    CHECK(hook.key == kEnvSecret);
    CHECK(hook.body == std::string("cred=") + kCredSecret);
  }

  CmdResult status = Cli(coord, {"status", run_id, "--json"});
  auto doc = ParseJson(status.out);
  REQUIRE(doc.is_object());
  const auto& tasks = doc["tasks"];
  CHECK(tasks["reads"]["state"] == "SUCCESS");
  CHECK(tasks["calls"]["state"] == "SUCCESS");
  // A group-readable secret file fails for good, naming the mode.
  CHECK(tasks["open_mode"]["state"] == "FAILED");
  CHECK(tasks["open_mode"]["attempts"] == 1);
  CHECK_THAT(tasks["open_mode"].value("error", ""), Catch::Contains("mode 0644"));
  // A missing one may appear later: the retry policy applies.
  CHECK(tasks["missing"]["state"] == "FAILED");
  CHECK(tasks["missing"]["attempts"] == 2);
  CHECK_THAT(tasks["missing"].value("error", ""), Catch::Contains("does not exist"));
  // A task that prints its secrets shows *** in its output, stderr and
  // output JSON (checked below, with the rest, for the values themselves).
  const std::string echoed = HttpGet(coord, "/api/executions/" + run_id + ".echoes");
  CHECK_THAT(echoed, Catch::Contains("pw is ***, token ***"));
  CHECK(tasks["echoes"]["output"] == nlohmann::json{{"pw", "***"}});
  CHECK_THAT(Cli(coord, {"logs", run_id + ".echoes"}).out, Catch::Contains("pw is ***, token ***"));
  CHECK(Cli(coord, {"logs", run_id + ".echoes", "--stderr"}).out == "***\n");

  // Another pipeline names test.secrets' file, a link to it in its own
  // directory, and its credential: each attempt fails for good, nothing read.
  const std::string thief = dir.Write("thief.yaml", Thief(secrets, outside.path() + "/seen"));
  CmdResult stolen = Cli(coord, {"submit", thief, "--wait", "--json"});
  auto theft = ParseJson(stolen.out);  // one document: the run's status
  REQUIRE(theft.is_object());
  for (const char* task : {"file", "via_link", "credential"}) {
    INFO(task);
    CHECK(theft["tasks"][task]["state"] == "FAILED");
    CHECK(theft["tasks"][task]["attempts"] == 1);
    CHECK_THAT(theft["tasks"][task].value("error", ""),
               Catch::Contains("is not a secret of pipeline other.thief"));
  }
  CHECK_FALSE(std::filesystem::exists(outside.path() + "/seen/stolen"));
  CHECK_FALSE(std::filesystem::exists(outside.path() + "/seen/stolen2"));

  // What the API and the CLI answer.
  std::vector<std::string> answers = {
      status.out,
      Cli(coord, {"history", run_id, "--json"}).out,
      Cli(coord, {"history", run_id}).out,
      Cli(coord, {"status", run_id}).out,
      Cli(coord, {"explain", run_id, "reads"}).out,
      HttpGet(coord, "/api/runs/" + run_id),
      HttpGet(coord, "/api/runs/" + run_id + "/history"),
      HttpGet(coord, "/api/executions/" + run_id + ".reads"),
      echoed,
      Cli(coord, {"logs", run_id + ".echoes"}).out,
      Cli(coord, {"logs", run_id + ".echoes", "--stderr"}).out,
      Cli(coord, {"explain", run_id, "echoes"}).out,
      HttpGet(coord, "/api/pipelines"),
      HttpGet(coord, "/metrics"),
      HttpGet(worker, "/metrics"),
  };
  for (const std::string secret : {kFileSecret, kEnvSecret, kCredSecret}) {
    INFO(secret);
    for (const std::string& a : answers) CHECK(a.find(secret) == std::string::npos);
    // State dirs (LMDB journal, outbox, task logs) and node logs.
    CHECK(FilesHolding(dir.path(), secret).empty());
  }
  // The stored snapshot keeps the references, so a rerun resolves them again.
  CHECK_FALSE(FilesHolding(dir.path(), "env:OPS_TEST_UPSTREAM_TOKEN").empty());
}
