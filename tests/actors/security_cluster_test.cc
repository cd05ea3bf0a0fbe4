// Authentication and identity against real nodes on loopback: who may
// report a result, who may call itself a worker, which key may do what. A
// rogue peer here is a raw DEALER speaking the worker protocol.

#include <httplib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <csignal>
#include <set>
#include <thread>
#include <zmq.hpp>

#include "cli/remote.h"
#include "tests/actors/cli_harness.h"
#include "tests/actors/cluster_harness.h"
#include "transport/codec.h"
#include "transport/messages.h"

using namespace apollo11::testing;  // NOLINT: test file
namespace transport = apollo11::transport;

namespace {

// Submits FILE and waits for the run's end: its status document.
nlohmann::json SubmitAndWait(const NodeProc& coord, const std::string& file) {
  CmdResult submitted = Cli(coord, {"submit", file});
  const std::string run_id = submitted.out.substr(0, submitted.out.find('\n'));
  return ParseJson(Cli(coord, {"status", run_id, "--wait", "--json"}).out);
}

// A DEALER on the coordinator's worker port that speaks the worker protocol
// by hand.
class RoguePeer {
 public:
  RoguePeer(const std::string& endpoint, const std::string& identity)
      : socket_(ctx_, zmq::socket_type::dealer) {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.set(zmq::sockopt::routing_id, identity);
    socket_.connect(endpoint);
  }
  template <class T>
  void Send(transport::MsgType type, const T& body) {
    std::string frame = transport::EncodeToString(type, body);
    socket_.send(zmq::buffer(frame), zmq::send_flags::none);
  }
  void Hello(uint32_t slots) {
    transport::Hello hello;
    hello.slots = slots;
    Send(transport::MsgType::kHello, hello);
  }
  // Keeps a registered rogue alive: a silent one is soon lost, and its frames
  // are then refused as an unregistered peer's.
  void Heartbeat() { Send(transport::MsgType::kHeartbeat, transport::Heartbeat{}); }
  // A forged SUCCESS for (exec_id, attempt).
  void ForgeResult(const std::string& exec_id, uint32_t attempt) {
    transport::ResultMsg r;
    r.exec_id = exec_id;
    r.attempt = attempt;
    r.outcome = static_cast<uint8_t>(transport::Outcome::kSuccess);
    r.output = "forged\n";
    Send(transport::MsgType::kResult, r);
    transport::Started s{exec_id, attempt, 1};
    Send(transport::MsgType::kStarted, s);
  }

 private:
  zmq::context_t ctx_;
  zmq::socket_t socket_;
};

// The node's /metrics text ("" when it does not answer).
std::string Metrics(const NodeProc& node) {
  const std::string addr = node.listening["http"].get<std::string>();
  httplib::Client http(addr.substr(0, addr.rfind(':')),
                       std::stoi(addr.substr(addr.rfind(':') + 1)));
  auto res = http.Get("/metrics");
  return res ? res->body : "";
}

// The value of the metric line starting with `series` (-1 when absent).
double MetricValue(const std::string& metrics, const std::string& series) {
  const size_t at = metrics.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::stod(metrics.substr(at + series.size() + 2));
}

std::string TaskState(const NodeProc& coord, const std::string& run_id, const std::string& task) {
  auto doc = ParseJson(Cli(coord, {"status", run_id, "--json"}).out);
  if (!doc.is_object() || !doc["tasks"].contains(task)) return "";
  return doc["tasks"][task].value("state", "");
}

// A pipeline whose task `a` runs on the real worker until the test creates
// DIR/go (however slow the machine, it is RUNNING while the test forges),
// then prints "real"; `b` writes what it received from `a` to DIR/b.out.
std::string SlowPipeline(const ScratchDir& dir) {
  return dir.Write("slow.yaml",
                   "version: \"1.0\"\nname: test.forge\npipeline:\n"
                   "  - id: a\n    type: shell\n    command: \"until [ -e " +
                       dir.path() +
                       "/go ]; do sleep 0.05; done; echo real\"\n"
                       "  - id: b\n    type: shell\n    depends_on: [a]\n"
                       "    command: \"printf '%s' \\\"$APOLLO11_OUTPUT_A\\\" > " +
                       dir.path() + "/b.out\"\n");
}

}  // namespace

TEST_CASE("a RESULT forged by a peer that is not the execution's worker changes nothing",
          "[cluster][security]") {
  ScratchDir dir;
  // Liveness 3 s: the rogue "w2" below must stay registered while a loaded
  // machine polls for it, or its forgeries count as a stranger's.
  NodeProc coord = StartNode(dir, "coord",
                             {"--role", "coordinator", "--bind", "tcp://127.0.0.1:0", "--api-bind",
                              "tcp://127.0.0.1:0", "--heartbeat", "100ms", "--liveness", "30"},
                             "", /*default_timing=*/true);
  NodeProc w1 = StartWorker(dir, coord, "w1", 1);
  Nodes guard{{&coord, &w1}};
  REQUIRE(WaitFor([&] { return WorkerCount(coord) == 1; }, 5000));
  CmdResult submitted = Cli(coord, {"submit", SlowPipeline(dir)});
  REQUIRE(submitted.exit_code == 0);
  const std::string run_id = submitted.out.substr(0, submitted.out.find('\n'));
  REQUIRE(!run_id.empty());
  REQUIRE(WaitFor([&] { return TaskState(coord, run_id, "a") == "RUNNING"; }, 5000));

  const std::string endpoint = coord.listening["workers"].get<std::string>();
  // A peer that never said HELLO, and one registered as a second worker.
  RoguePeer stranger(endpoint, "stranger");
  RoguePeer second(endpoint, "w2");
  second.Hello(1);
  REQUIRE(WaitFor(
      [&] {
        second.Heartbeat();
        return WorkerCount(coord) == 2;
      },
      5000));
  for (int i = 0; i < 3; ++i) {
    stranger.ForgeResult(run_id + ".a", 1);
    second.Heartbeat();
    second.ForgeResult(run_id + ".a", 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  // Each forged RESULT and STARTED refused and counted: the dispatcher has
  // read every one of them (a frame it took would not be counted).
  CHECK(WaitFor(
      [&] {
        const std::string m = Metrics(coord);
        return MetricValue(m, "apollo11_worker_frames_refused_total{reason=\"unregistered\"}") >=
                   6 &&
               MetricValue(m, "apollo11_worker_frames_refused_total{reason=\"not_holder\"}") >= 6;
      },
      5000));
  CHECK(TaskState(coord, run_id, "a") == "RUNNING");
  CHECK_FALSE(dir.Exists("b.out"));  // nothing downstream started early
  dir.Write("go", "");

  auto done = ParseJson(Cli(coord, {"status", run_id, "--wait", "--json"}).out);
  CHECK(done.value("state", "") == "SUCCESS");
  CHECK(done["tasks"]["a"].value("worker", "") == "w1");
  CHECK(dir.Read("b.out") == "real\n");
  const std::string log = dir.Read("coord.err");
  CHECK(log.find("refused") != std::string::npos);
  // Counted by reason on /metrics.
  const std::string metrics = Metrics(coord);
  CHECK(MetricValue(metrics, "apollo11_worker_frames_refused_total{reason=\"unregistered\"}") >= 1);
  CHECK(MetricValue(metrics, "apollo11_worker_frames_refused_total{reason=\"not_holder\"}") >= 1);
}

TEST_CASE("a second worker process with a live worker's id is refused and exits non-zero",
          "[cluster][security]") {
  ScratchDir dir;
  NodeProc coord = StartCoordinator(dir);
  NodeProc w1 = StartWorker(dir, coord, "w1", 1);
  Nodes guard{{&coord, &w1}};
  REQUIRE(WaitFor([&] { return WorkerCount(coord) == 1; }, 5000));
  // Same --worker-id, its own state dir: nothing local stops it.
  NodeProc twin =
      StartNode(dir, "twin",
                {"--role", "worker", "--connect", coord.listening["workers"].get<std::string>(),
                 "--worker-id", "w1", "--slots", "1"});
  guard.all.push_back(&twin);
  const int code = WaitExit(twin.pid, 10000);
  CHECK(code != 0);
  CHECK(code != -1);  // it stopped by itself
  if (code != -1) twin.pid = -1;
  CHECK(dir.Read("twin.err").find("refused by the coordinator") != std::string::npos);
  CHECK(dir.Read("twin.err").find("already connected") != std::string::npos);
  CHECK(dir.Read("coord.err").find("refused HELLO") != std::string::npos);
  CHECK(MetricValue(Metrics(coord),
                    "apollo11_worker_frames_refused_total{reason=\"duplicate_id\"}") >= 1);
  // The first one still serves, alone.
  std::string file = dir.Write("ok.yaml",
                               "version: \"1.0\"\nname: test.ok\npipeline:\n"
                               "  - id: a\n    type: shell\n    command: \"true\"\n");
  auto done = SubmitAndWait(coord, file);
  CHECK(done.value("state", "") == "SUCCESS");
  CHECK(done["tasks"]["a"].value("worker", "") == "w1");
  CHECK(WorkerCount(coord) == 1);
  CHECK(Alive(w1.pid));
}

TEST_CASE("a restarted worker process takes its id over at once", "[cluster][security]") {
  ScratchDir dir;
  NodeProc coord = StartCoordinator(dir);
  NodeProc w1 = StartWorker(dir, coord, "w1", 1);
  Nodes guard{{&coord, &w1}};
  REQUIRE(WaitFor([&] { return WorkerCount(coord) == 1; }, 5000));
  ::kill(w1.pid, SIGKILL);
  WaitExit(w1.pid, 5000);
  w1 = StartWorker(dir, coord, "w1", 1, "default", "w1-again");
  REQUIRE(WaitFor([&] { return WorkerCount(coord) == 1; }, 5000));
  std::string file = dir.Write("ok.yaml",
                               "version: \"1.0\"\nname: test.ok\npipeline:\n"
                               "  - id: a\n    type: shell\n    command: \"true\"\n");
  auto done = SubmitAndWait(coord, file);
  CHECK(done.value("state", "") == "SUCCESS");
  CHECK(Alive(w1.pid));
  CHECK(dir.Read("w1-again.err").find("refused") == std::string::npos);
}

namespace {

// A CURVE cluster: keys for the coordinator and one key per role.
struct CurveCluster {
  ScratchDir dir;
  std::string d = dir.path();
  NodeProc coord;
  explicit CurveCluster(const std::string& extra_lines = "") {
    for (const char* who : {"coord", "w1", "w2", "operator", "viewer", "admin", "stranger"}) {
      REQUIRE(Run({Apollo11(), "keygen", d + "/" + who}).exit_code == 0);
    }
    auto key = [&](const char* who) {
      std::string k = dir.Read(std::string(who) + ".pub");
      return k.substr(0, k.find('\n'));
    };
    dir.Write("authorized", "worker " + key("w1") + "\nworker " + key("w2") + "  # second\n" +
                                "operator " + key("operator") + "\nviewer " + key("viewer") +
                                "\nadmin " + key("admin") + "\n" + extra_lines);
    coord = StartNode(
        dir, "coordnode",
        {"--role", "coordinator", "--bind", "tcp://127.0.0.1:0", "--api-bind", "tcp://127.0.0.1:0",
         "--curve-key", d + "/coord.key", "--authorized-keys", d + "/authorized"});
  }
  NodeProc Worker(const std::string& name, const std::string& key, const std::string& id) {
    return StartNode(
        dir, name,
        {"--role", "worker", "--connect", coord.listening["workers"].get<std::string>(),
         "--worker-id", id, "--slots", "1", "--curve-key", d + "/" + key + ".key", "--server-key",
         d + "/coord.pub"});
  }
  CmdResult As(const std::string& who, std::vector<std::string> args) {
    for (const std::string& a :
         {std::string("--timeout"), std::string("3"), std::string("--key"), d + "/" + who + ".key",
          std::string("--server-key"), d + "/coord.pub"}) {
      args.push_back(a);
    }
    return Cli(coord, args);
  }
  std::set<std::string> Workers() {
    auto doc = ParseJson(As("admin", {"workers", "--json"}).out);
    std::set<std::string> ids;
    if (doc.is_array()) {
      for (const auto& w : doc) ids.insert(w.value("id", ""));
    }
    return ids;
  }
};

}  // namespace

TEST_CASE("with CURVE only worker keys join as workers, and an id stays with its key",
          "[cluster][security]") {
  CurveCluster c;
  NodeProc w1 = c.Worker("w1node", "w1", "w1");
  Nodes guard{{&c.coord, &w1}};
  REQUIRE(WaitFor([&] { return c.Workers().count("w1") == 1; }, 5000));
  // A client key started as a worker: refused, says why, exits non-zero.
  NodeProc posing = c.Worker("posing", "operator", "helper");
  guard.all.push_back(&posing);
  const int posing_code = WaitExit(posing.pid, 10000);
  CHECK(posing_code > 0);
  if (posing_code != -1) posing.pid = -1;
  CHECK(c.dir.Read("posing.err").find("may not act as a worker") != std::string::npos);
  // Another worker key claiming w1's id: refused too.
  NodeProc thief = c.Worker("thief", "w2", "w1");
  guard.all.push_back(&thief);
  const int thief_code = WaitExit(thief.pid, 10000);
  CHECK(thief_code > 0);
  if (thief_code != -1) thief.pid = -1;
  CHECK(c.dir.Read("thief.err").find("another key") != std::string::npos);
  CHECK(c.Workers() == std::set<std::string>{"w1"});
  const std::string metrics = Metrics(c.coord);
  CHECK(MetricValue(metrics, "apollo11_worker_frames_refused_total{reason=\"role\"}") >= 1);
  CHECK(MetricValue(metrics, "apollo11_worker_frames_refused_total{reason=\"duplicate_id\"}") >= 1);
}

TEST_CASE(
    "with CURVE a viewer reads, an operator triggers and cancels, only an admin brings in code",
    "[cluster][security]") {
  CurveCluster c;
  NodeProc w1 = c.Worker("w1node", "w1", "w1");
  Nodes guard{{&c.coord, &w1}};
  REQUIRE(WaitFor([&] { return c.Workers().count("w1") == 1; }, 5000));
  std::string file = c.dir.Write("long.yaml",
                                 "version: \"1.0\"\nname: test.long\npipeline:\n"
                                 "  - id: a\n    type: shell\n    command: \"sleep 30\"\n");
  // A pipeline file is code: only an admin submits or registers one.
  for (const char* who : {"viewer", "operator"}) {
    INFO(who);
    CmdResult submit = c.As(who, {"submit", file});
    CHECK(submit.exit_code != 0);
    CHECK(submit.err.find("may not submit (role admin may)") != std::string::npos);
  }
  CmdResult add = c.As("operator", {"pipelines", "add", file});
  CHECK(add.exit_code != 0);
  CHECK(add.err.find("may not register (role admin may)") != std::string::npos);
  CmdResult by_worker_key = c.As("w1", {"runs", "--json"});
  CHECK(by_worker_key.exit_code != 0);
  CHECK(by_worker_key.err.find("may not read (role viewer, operator or admin may)") !=
        std::string::npos);
  REQUIRE(c.As("admin", {"pipelines", "add", file}).exit_code == 0);

  // An operator triggers the registered pipeline; a viewer may not.
  CmdResult by_viewer = c.As("viewer", {"trigger", "test.long"});
  CHECK(by_viewer.exit_code == 5);  // refused: the role may not
  CHECK(by_viewer.err.find("may not trigger (role operator or admin may)") != std::string::npos);
  CmdResult triggered = c.As("operator", {"trigger", "test.long"});
  REQUIRE(triggered.exit_code == 0);
  const std::string run_id = triggered.out.substr(0, triggered.out.find('\n'));
  CHECK(c.As("viewer", {"status", run_id, "--json"}).exit_code == 0);
  CmdResult cancel = c.As("viewer", {"cancel", run_id});
  CHECK(cancel.exit_code == 5);
  CHECK(cancel.err.find("may not cancel (role operator or admin may)") != std::string::npos);
  CHECK(ParseJson(c.As("viewer", {"status", run_id, "--json"}).out).value("state", "") ==
        "RUNNING");
  CHECK(c.As("operator", {"cancel", run_id}).exit_code == 0);
  auto done = ParseJson(c.As("viewer", {"status", run_id, "--wait", "--json"}).out);
  CHECK(done.value("state", "") == "CANCELED");
  CHECK(MetricValue(Metrics(c.coord), "apollo11_client_requests_refused_total") == 6);
  // A run that already ended is not "canceled" again: exit 2, as HTTP's 409.
  CmdResult again = c.As("operator", {"cancel", run_id});
  CHECK(again.exit_code == 2);
  CHECK(again.err.find("run " + run_id + " already finished: CANCELED") != std::string::npos);

  // A key that is not listed at all is told so, not left to time out.
  CmdResult stranger = c.As("stranger", {"runs", "--json"});
  CHECK(stranger.exit_code == 5);
  CHECK(stranger.err.find("refused by the coordinator's authentication") != std::string::npos);
}

TEST_CASE("with CURVE the older role names still work: reader reads, client operates",
          "[cluster][security]") {
  CurveCluster c;
  for (const char* who : {"oldreader", "oldclient"}) {
    REQUIRE(Run({Apollo11(), "keygen", c.d + "/" + who}).exit_code == 0);
  }
  Nodes guard{{&c.coord}};
  auto key = [&](const char* who) {
    std::string k = c.dir.Read(std::string(who) + ".pub");
    return k.substr(0, k.find('\n'));
  };
  c.dir.Write("authorized", c.dir.Read("authorized") + "reader " + key("oldreader") + "\nclient " +
                                key("oldclient") + "\n");
  REQUIRE(::kill(c.coord.pid, SIGHUP) == 0);
  REQUIRE(WaitFor(
      [&] {
        return c.dir.Read("coordnode.err").find("authorized keys with their roles in force") !=
               std::string::npos;
      },
      10000));
  CHECK(c.dir.Read("coordnode.err").find("role 'client' is read as 'operator'") !=
        std::string::npos);
  std::string file = c.dir.Write("p.yaml",
                                 "version: \"1.0\"\nname: test.old\npipeline:\n"
                                 "  - id: a\n    type: shell\n    command: \"true\"\n");
  REQUIRE(c.As("admin", {"pipelines", "add", file}).exit_code == 0);
  CHECK(c.As("oldreader", {"runs", "--json"}).exit_code == 0);
  CHECK(c.As("oldreader", {"trigger", "test.old"}).exit_code != 0);
  CHECK(c.As("oldclient", {"trigger", "test.old"}).exit_code == 0);
  CHECK(c.As("oldclient", {"submit", file}).exit_code != 0);
}

TEST_CASE("a task cannot read the API token from its node's /proc files or memory",
          "[cluster][security]") {
  ScratchDir dir;
  // The node runs as an unprivileged user (nobody when the test is root:
  // root reads any /proc file), as the packaged service does.
  REQUIRE(::chmod(dir.path().c_str(), 0777) == 0);
  std::vector<std::string> argv;
  if (::geteuid() == 0) {
    argv = {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"};
  }
  const std::string out = dir.path() + "/seen";
  argv.insert(argv.end(),
              {"env", "APOLLO11_API_TOKEN=envtoken-0123456789abcdef", Node(), "start", "--role",
               "all", "--state-dir", dir.path() + "/state", "--bind", "tcp://127.0.0.1:0",
               "--api-bind", "tcp://127.0.0.1:0", "--http-bind", "127.0.0.1:0", "--worker-id", "w1",
               "--api-token", "argtoken-0123456789abcdef"});
  NodeProc node;
  node.pid = SpawnNamed(argv, dir.path(), "node");
  REQUIRE(node.pid > 0);
  Nodes guard{{&node}};
  REQUIRE(WaitFor(
      [&] {
        const std::string text = dir.Read("node.out");
        const size_t nl = text.find('\n');
        if (nl == std::string::npos) return false;
        node.listening = ParseJson(text.substr(0, nl));
        return node.listening.is_object();
      },
      10000));
  // The task's parent is the node: what it can read there, it writes down.
  const std::string file =
      dir.Write("p.yaml",
                "version: \"1.0\"\nname: test.peek\npipeline:\n  - id: peek\n    type: shell\n"
                "    command: \"echo $PPID > " +
                    out + ".ppid; cat /proc/$PPID/environ > " + out +
                    ".env 2>&1; cat /proc/$PPID/cmdline > " + out +
                    ".cmd 2>&1; head -c 4096 /proc/$PPID/mem > " + out + ".mem 2>&1; true\"\n");
  CmdResult submitted = Cli(node, {"submit", file});
  REQUIRE(submitted.exit_code == 0);
  const std::string run_id = submitted.out.substr(0, submitted.out.find('\n'));
  auto done = ParseJson(Cli(node, {"status", run_id, "--wait", "--json"}).out);
  REQUIRE(done.value("state", "") == "SUCCESS");
  CHECK(std::stoi(dir.Read("seen.ppid")) == node.pid);  // it did look at the node
  for (const char* what : {"seen.env", "seen.cmd", "seen.mem"}) {
    const std::string seen = dir.Read(what);
    INFO(what << ": " << seen.substr(0, 300));
    CHECK(seen.find("envtoken-0123456789abcdef") == std::string::npos);
    CHECK(seen.find("argtoken-0123456789abcdef") == std::string::npos);
  }
  // The environment and memory need root; the command line shows the flag
  // with its value blanked.
  CHECK(dir.Read("seen.env").find("Permission denied") != std::string::npos);
  CHECK(dir.Read("seen.mem").find("Permission denied") != std::string::npos);
  CHECK(dir.Read("seen.cmd").find("--api-token") != std::string::npos);
  // The token still works: the node kept it.
  const std::string addr = node.listening["http"].get<std::string>();
  httplib::Client http(addr.substr(0, addr.rfind(':')),
                       std::stoi(addr.substr(addr.rfind(':') + 1)));
  http.set_bearer_token_auth("argtoken-0123456789abcdef");
  auto canceled = http.Post("/api/runs/" + run_id + "/cancel", "{}", "application/json");
  REQUIRE(canceled);
  CHECK(canceled->status != 401);
  CHECK(canceled->status != 403);
}

TEST_CASE("a node on a state dir it cannot write says so, naming the state dir",
          "[cluster][security]") {
  ScratchDir dir;
  REQUIRE(::chmod(dir.path().c_str(), 0777) == 0);
  const std::string state = dir.path() + "/ro";
  REQUIRE(::mkdir(state.c_str(), 0555) == 0);  // root's, or read-only for its owner
  std::vector<std::string> argv;
  if (::geteuid() == 0) {
    argv = {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--"};
  }
  argv.insert(argv.end(),
              {Node(), "start", "--role", "all", "--state-dir", state, "--http-bind", "127.0.0.1:0",
               "--bind", "tcp://127.0.0.1:0", "--api-bind", "tcp://127.0.0.1:0"});
  CmdResult r = Run(argv);
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("state dir " + state + " is not writable: Permission denied") !=
        std::string::npos);
  CHECK(r.err.find("log file") == std::string::npos);
}

TEST_CASE("a coordinator at --max-active-runs refuses the next run naming the cap and alerts",
          "[cluster][security]") {
  ScratchDir dir;
  const std::string alerts = dir.path() + "/alerts.jsonl";
  dir.Write("node.yaml",
            "alert-fold-window: 200ms\nalerts:\n  - name: caps\n    events: "
            "[run_cap_reached]\n    command: \"cat >> " +
                alerts + "; echo >> " + alerts + "\"\n");
  NodeProc coord = StartNode(
      dir, "coord",
      {"--role", "coordinator", "--bind", "tcp://127.0.0.1:0", "--api-bind", "tcp://127.0.0.1:0",
       "--max-active-runs", "2", "--config", dir.path() + "/node.yaml"});
  Nodes guard{{&coord}};  // no worker: every run stays active
  const std::string file =
      dir.Write("p.yaml",
                "version: \"1.0\"\nname: test.cap\npipeline:\n  - id: a\n    type: shell\n"
                "    command: \"true\"\n");
  CHECK(Cli(coord, {"submit", file}).exit_code == 0);
  CHECK(Cli(coord, {"submit", file}).exit_code == 0);
  CmdResult third = Cli(coord, {"submit", file});
  INFO(third.err);
  CHECK(third.exit_code != 0);
  CHECK(third.err.find("2 runs are active, the coordinator's cap (--max-active-runs 2)") !=
        std::string::npos);
  REQUIRE(
      WaitFor([&] { return dir.Read("alerts.jsonl").find("run_cap_reached") != std::string::npos; },
              10000));
  CHECK(dir.Read("alerts.jsonl").find("--max-active-runs 2") != std::string::npos);
}

TEST_CASE("with CURVE a viewer sees a pipeline's env names only, never its values",
          "[cluster][security]") {
  CurveCluster c;
  Nodes guard{{&c.coord}};
  const std::string file =
      c.dir.Write("env.yaml",
                  "version: \"1.0\"\nname: test.envs\npipeline:\n  - id: a\n    type: shell\n"
                  "    env: {REGION: eu-plain-value-42}\n    command: \"true\"\n");
  REQUIRE(c.As("admin", {"pipelines", "add", file}).exit_code == 0);
  auto as = [&](const std::string& who) {
    auto remote = apollo11::cli::RemoteCoordinator::Connect(
        c.coord.listening["api"].get<std::string>(), c.d + "/" + who + ".key", c.d + "/coord.pub",
        std::chrono::milliseconds(5000));
    REQUIRE(remote.ok());
    return std::move(*remote);
  };
  // The whole snapshot, env values included, is for those who may start runs.
  auto viewer = as("viewer");
  auto full = viewer->Query("pipeline", "test.envs", "full");
  REQUIRE_FALSE(full.ok());
  CHECK(full.status().message().find("needs role operator or admin") != std::string::npos);
  auto shown = viewer->Query("pipeline", "test.envs");
  REQUIRE(shown.ok());
  CHECK(shown->dump().find("eu-plain-value-42") == std::string::npos);
  CHECK(shown->dump().find("REGION") != std::string::npos);
  auto op = as("operator");
  auto whole = op->Query("pipeline", "test.envs", "full");
  REQUIRE(whole.ok());
  CHECK(whole->dump().find("eu-plain-value-42") != std::string::npos);
}

TEST_CASE("a plaintext client of a CURVE coordinator is told CURVE is required, at once",
          "[cluster][security]") {
  CurveCluster c;
  Nodes guard{{&c.coord}};
  const auto start = std::chrono::steady_clock::now();
  CmdResult plain = Cli(c.coord, {"runs", "--json", "--timeout", "10"});
  const auto took = std::chrono::steady_clock::now() - start;
  INFO(plain.err);
  CHECK(plain.exit_code != 0);
  CHECK(plain.err.find("requires CURVE; pass --key and --server-key") != std::string::npos);
  CHECK(plain.err.find("is it running") == std::string::npos);
  CHECK(took < std::chrono::seconds(5));  // not the 10 s timeout
}
