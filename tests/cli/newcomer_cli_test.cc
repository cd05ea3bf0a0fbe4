// What a newcomer trips over (issue 19), through the real binaries: usage
// errors worded for a person, `validate -`, and every default in --help.

#include <signal.h>

#include <catch2/catch.hpp>
#include <sstream>
#include <string>

#include "tests/actors/cluster_harness.h"

using namespace apollo11::testing;  // NOLINT: test file

namespace {

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("a mistyped subcommand gets did you mean from both binaries", "[cli][newcomer]") {
  CmdResult r = Run({Apollo11(), "staus", "r-1"});
  CHECK(r.exit_code == 2);
  CHECK(Has(r.err, "unknown command 'staus' (did you mean 'status'?)"));
  CmdResult n = Run({Node(), "strat", "--role=all"});
  CHECK(n.exit_code == 2);
  CHECK(Has(n.err, "unknown command 'strat' (did you mean 'start'?)"));
  // A word like no command lists them instead of guessing.
  CmdResult far = Run({Apollo11(), "frobnicate"});
  CHECK(far.exit_code == 2);
  CHECK_FALSE(Has(far.err, "did you mean"));
  CHECK(Has(far.err, "the commands are: validate, run"));
}

TEST_CASE("an out-of-range number gets a human message, not a range of huge numbers",
          "[cli][newcomer]") {
  ScratchDir dir;
  // Each command line ends with the value refused.
  for (const auto& argv : std::vector<std::vector<std::string>>{
           {Apollo11(), "runs", "--state-dir", dir.path(), "--limit", "0"},
           {Apollo11(), "runs", "--state-dir", dir.path(), "--limit", "-3"},
           {Apollo11(), "run", "x.yaml", "--max-backlog", "0"},
           {Node(), "start", "--role=all", "--liveness", "0"}}) {
    INFO(argv[1] + " " + argv[argv.size() - 2] + " " + argv.back());
    CmdResult r = Run(argv, dir.path());
    CHECK(r.exit_code == 2);
    CHECK(Has(r.err, "must be a whole number of at least 1 (got " + argv.back() + ")"));
    CHECK(r.err.size() < 200);
  }
  CmdResult t = Run({Apollo11(), "runs", "--timeout", "0", "--coordinator", "tcp://127.0.0.1:1"});
  CHECK(t.exit_code == 2);
  CHECK(Has(t.err, "--timeout: must be a number of seconds above 0 (got '0')"));
}

TEST_CASE("a coordinator endpoint without a scheme suggests tcp://", "[cli][newcomer]") {
  for (const char* cmd : {"workers", "runs"}) {
    INFO(cmd);
    CmdResult r = Run({Apollo11(), cmd, "--coordinator", "127.0.0.1:7012", "--timeout", "1"});
    CHECK(r.exit_code == 2);
    CHECK(Has(r.err, "did you mean 'tcp://127.0.0.1:7012'?"));
  }
}

TEST_CASE("validate - reads the pipeline from stdin, imports relative to the current directory",
          "[cli][newcomer]") {
  ScratchDir dir;
  dir.Write("lib/common.yaml", "version: \"1.0\"\ntemplates:\n  quiet: {type: noop}\n");
  dir.Write("p.yaml",
            "version: \"1.0\"\nname: demo.stdin\nimports: [lib/common.yaml]\npipeline:\n"
            "  - {id: a, extends: quiet}\n  - {id: b, type: noop, depends_on: a}\n");
  dir.Write("bad.yaml", "version: \"1.0\"\nname: demo.bad\npipeline:\n  - {id: a, typ: noop}\n");
  CmdResult ok = Run({"sh", "-c", "'" + Apollo11() + "' validate - < p.yaml"}, dir.path());
  CHECK(ok.exit_code == 0);
  CHECK(Has(ok.out, "<stdin>: ok: 2 tasks, 1 edges"));
  CmdResult bad = Run({"sh", "-c", "'" + Apollo11() + "' validate - < bad.yaml"}, dir.path());
  CHECK(bad.exit_code == 2);
  CHECK(Has(bad.err, "<stdin>:4:"));
  CHECK(Has(bad.err, "did you mean 'type'?"));
}

TEST_CASE("help shows the default of every option that has one", "[cli][newcomer]") {
  CmdResult runs = Run({Apollo11(), "runs", "--help"});
  CHECK(runs.exit_code == 0);
  CHECK(Has(runs.out, "--limit UINT=20"));
  CHECK(Has(runs.out, "=10"));  // --timeout
  CmdResult run = Run({Apollo11(), "run", "--help"});
  CHECK(Has(run.out, "--max-backlog UINT=1000"));
  CHECK(Has(run.out, "--heartbeat TEXT=1s"));
  CmdResult node = Run({Node(), "start", "--help"});
  CHECK(node.exit_code == 0);
  CHECK(Has(node.out, "--heartbeat TEXT=10s"));
  CHECK(Has(node.out, "--liveness INT=3"));
  CHECK(Has(node.out, "--max-backlog UINT=1000"));
}

namespace {

std::string FirstLine(const std::string& text) { return text.substr(0, text.find('\n')); }

size_t Count(const std::string& text, const std::string& part) {
  size_t n = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

// A --role=all node on free ports, its state dir in DIR/all.
NodeProc StartAll(const ScratchDir& dir, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {
      "--role", "all", "--bind", "tcp://127.0.0.1:0", "--api-bind", "tcp://127.0.0.1:0"};
  args.insert(args.end(), extra.begin(), extra.end());
  return StartNode(dir, "all", args);
}

}  // namespace

TEST_CASE("logs of a task that printed nothing exits 0 and says so on stderr",
          "[cli][newcomer][logs]") {
  ScratchDir dir;
  const std::string file = dir.Write("quiet.yaml",
                                     "version: \"1.0\"\nname: test.quiet\npipeline:\n  - {id: q, "
                                     "type: shell, command: \"true\"}\n");
  // Embedded: the local state dir.
  CmdResult run = Run({Apollo11(), "run", file, "--state-dir", dir.path() + "/emb", "--json"});
  REQUIRE(run.exit_code == 0);
  const std::string run_id = ParseJson(run.out).value("run_id", "");
  CmdResult local = Run({Apollo11(), "logs", run_id + ".q", "--state-dir", dir.path() + "/emb"});
  CHECK(local.exit_code == 0);
  CHECK(local.out.empty());
  CHECK(Has(local.err, "wrote nothing to stdout"));
  // Through a coordinator, from the worker that ran it.
  NodeProc all = StartAll(dir);
  Nodes guard{{&all}};
  CmdResult sub = Cli(all, {"submit", file, "--wait"});
  REQUIRE(sub.exit_code == 0);
  const std::string exec = FirstLine(sub.out) + ".q";
  for (const char* stream : {"--stderr", ""}) {
    INFO(stream);
    std::vector<std::string> args = {"logs", exec};
    if (*stream) args.push_back(stream);
    CmdResult r = Cli(all, args);
    CHECK(r.exit_code == 0);
    CHECK(r.out.empty());
    CHECK(Has(r.err, std::string("wrote nothing to ") + (*stream ? "stderr" : "stdout")));
    CHECK(Has(r.err, "how it ended: apollo11 trace " + exec));
  }
}

TEST_CASE("trace on a role=all node prints each line once", "[cli][newcomer][trace]") {
  ScratchDir dir;
  NodeProc all = StartAll(dir);
  Nodes guard{{&all}};
  const std::string file = dir.Write(
      "p.yaml",
      "version: \"1.0\"\nname: test.trace_once\npipeline:\n  - {id: t, type: shell, command: "
      "\"echo hi\"}\n");
  CmdResult sub = Cli(all, {"submit", file, "--wait"});
  REQUIRE(sub.exit_code == 0);
  const std::string exec = FirstLine(sub.out) + ".t";
  CmdResult remote = Cli(all, {"trace", exec});
  REQUIRE(remote.exit_code == 0);
  INFO(remote.out);
  CHECK(Count(remote.out, " started: ") == 1);
  CHECK(Count(remote.out, " exited: ") == 1);
  CHECK(Count(remote.out, "RUNNING -> SUCCESS") == 1);
  // The same from the node's state dir.
  CmdResult local = Run({Apollo11(), "trace", exec, "--state-dir", dir.path() + "/all"});
  REQUIRE(local.exit_code == 0);
  INFO(local.out);
  CHECK(Count(local.out, " started: ") == 1);
  CHECK(Count(local.out, " exited: ") == 1);
}

namespace {

// `apollo11-node start ARGS` (no harness defaults: the test picks the
// heartbeat) with its state dir in DIR/NAME; waits for the listening line.
NodeProc StartBare(const ScratchDir& dir, const std::string& name, std::vector<std::string> args) {
  std::vector<std::string> argv = {
      Node(), "start", "--state-dir", dir.path() + "/" + name, "--http-bind", "127.0.0.1:0"};
  argv.insert(argv.end(), args.begin(), args.end());
  NodeProc p;
  p.pid = SpawnNamed(argv, dir.path(), name);
  REQUIRE(p.pid > 0);
  const bool up = WaitFor(
      [&] {
        const std::string out = dir.Read(name + ".out");
        if (out.find('\n') == std::string::npos) return false;
        p.listening = ParseJson(FirstLine(out));
        return p.listening.is_object();
      },
      10000);
  INFO(dir.Read(name + ".err"));
  REQUIRE(up);
  return p;
}

}  // namespace

TEST_CASE("a worker is listed from its HELLO, not from the next heartbeat",
          "[cli][newcomer][workers]") {
  ScratchDir dir;
  // Heartbeats far longer than the test waits: only the HELLO can list it.
  NodeProc coord = StartBare(dir, "coord",
                             {"--role", "coordinator", "--bind", "tcp://127.0.0.1:0", "--api-bind",
                              "tcp://127.0.0.1:0", "--heartbeat", "8s"});
  NodeProc worker =
      StartBare(dir, "w1",
                {"--role", "worker", "--connect", coord.listening["workers"].get<std::string>(),
                 "--worker-id", "w1", "--heartbeat", "8s"});
  Nodes guard{{&coord, &worker}};
  CHECK(WaitFor([&] { return WorkerCount(coord) == 1; }, 3000));
  CmdResult text = Cli(coord, {"workers"});
  CHECK(Has(text.out, "w1"));
  const std::string url = "http://" + coord.listening["http"].get<std::string>() + "/api/workers";
  CmdResult api = Run({"curl", "-s", url});
  INFO(api.out);
  CHECK(Has(api.out, "\"w1\""));
}

TEST_CASE("a worker whose --connect reaches nothing says so once, and again when it connects",
          "[cli][newcomer][connect]") {
  ScratchDir dir;
  const int port = FreeTcpPort();
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(port);
  NodeProc worker =
      StartBare(dir, "w1",
                {"--role", "worker", "--connect", endpoint, "--worker-id", "w1", "--heartbeat",
                 "100ms", "--liveness", "3", "--health-interval", "200ms"});
  Nodes guard{{&worker}};
  auto unreachable = [&] { return Count(dir.Read("w1.err"), "coordinator_unreachable"); };
  REQUIRE(WaitFor([&] { return unreachable() == 1; }, 5000));
  const std::string err = dir.Read("w1.err");
  CHECK(Has(err, "no answer from the coordinator at " + endpoint));
  // Said once, not every heartbeat: the health line, logged by the same
  // tick that would say it again, comes three more times meanwhile.
  auto health = [&] { return Count(dir.Read("w1.err"), "coordinator last heard"); };
  const size_t health_then = health();
  REQUIRE(WaitFor([&] { return health() >= health_then + 3; }, 5000));
  CHECK(unreachable() == 1);
  NodeProc coord = StartBare(dir, "coord",
                             {"--role", "coordinator", "--bind", endpoint, "--api-bind",
                              "tcp://127.0.0.1:0", "--heartbeat", "100ms"});
  guard.all.push_back(&coord);
  CHECK(WaitFor(
      [&] { return Has(dir.Read("w1.err"), "connected to the coordinator at " + endpoint); },
      5000));
  CHECK(WaitFor([&] { return WorkerCount(coord) == 1; }, 5000));
  CHECK(unreachable() == 1);
}

namespace {

// The summary row of `task` in a text status or run summary.
std::string RowOf(const std::string& summary, const std::string& task) {
  const size_t at = summary.find("\n  " + task + " ");
  return at == std::string::npos ? "" : FirstLine(summary.substr(at + 1));
}

// The EXIT column of a summary row (TASK STATE ATTEMPTS EXIT ...).
std::string ExitColumn(const std::string& row) {
  std::istringstream in(row);
  std::string task, state, attempts, exit_code;
  in >> task >> state >> attempts >> exit_code;
  return exit_code;
}

}  // namespace

TEST_CASE(
    "Ctrl-C on run: killed tasks show no exit code and the summary says why each was canceled",
    "[cli][newcomer][cancel]") {
  ScratchDir dir;
  const std::string file = dir.Write("p.yaml",
                                     "version: \"1.0\"\nname: test.interrupt\npipeline:\n"
                                     "  - {id: slow1, type: shell, command: \"sleep 30\"}\n"
                                     "  - {id: slow2, type: shell, command: \"sleep 30\"}\n"
                                     "  - {id: slow3, type: shell, command: \"sleep 30\"}\n"
                                     "  - {id: bad, type: shell, command: \"exit 3\"}\n"
                                     "  - {id: down, type: noop, depends_on: bad}\n");
  // Twice: a killed attempt's late result used to be logged as dropped only
  // some of the time.
  for (int round = 0; round < 2; ++round) {
    const std::string name = "run" + std::to_string(round);
    pid_t pid = SpawnNamed({Apollo11(), "run", file, "--state-dir", dir.path() + "/" + name,
                            "--slots", "4", "--log-format", "text"},
                           dir.path(), name);
    // Its three sleeps running, as the journal says (progress lines may not
    // go to a file).
    const std::string state = dir.path() + "/" + name;
    REQUIRE(WaitFor(
        [&] {
          auto runs = ParseJson(Run({Apollo11(), "runs", "--state-dir", state, "--json"}).out);
          if (!runs.is_array() || runs.empty()) return false;
          const std::string run_id = runs[0].value("run_id", "");
          auto st =
              ParseJson(Run({Apollo11(), "status", run_id, "--state-dir", state, "--json"}).out);
          int running = 0;
          if (st.is_object() && st.contains("tasks")) {
            for (const auto& [id, t] : st["tasks"].items())
              running += t.value("state", "") == "RUNNING";
          }
          return running == 3;
        },
        10000));
    ::kill(pid, SIGINT);
    CHECK(WaitExit(pid, 15000) == 1);
    const std::string out = dir.Read(name + ".out"), err = dir.Read(name + ".err");
    INFO(out);
    INFO(err);
    for (const char* task : {"slow1", "slow2", "slow3"}) {
      const std::string row = RowOf(out, task);
      CHECK(Has(row, "CANCELED"));
      CHECK(ExitColumn(row) == "-");
      CHECK(Has(row, "canceled by the user (interrupt)"));
    }
    CHECK(ExitColumn(RowOf(out, "bad")) == "3");
    CHECK(Has(RowOf(out, "down"), "upstream bad failed"));
    CHECK_FALSE(Has(err, "dropped"));
  }
}

TEST_CASE("a task killed by apollo11 cancel shows no exit code in status",
          "[cli][newcomer][cancel]") {
  ScratchDir dir;
  NodeProc all = StartAll(dir);
  Nodes guard{{&all}};
  const std::string file = dir.Write("p.yaml",
                                     "version: \"1.0\"\nname: test.cancel_exit\npipeline:\n"
                                     "  - {id: slow, type: shell, command: \"sleep 30\"}\n"
                                     "  - {id: after, type: noop, depends_on: slow}\n");
  CmdResult sub = Cli(all, {"submit", file});
  REQUIRE(sub.exit_code == 0);
  const std::string run_id = FirstLine(sub.out);
  REQUIRE(WaitFor([&] { return Has(Cli(all, {"status", run_id}).out, "RUNNING"); }, 10000));
  CmdResult canceled = Cli(all, {"cancel", run_id, "--json"});
  REQUIRE(canceled.exit_code == 0);
  CHECK(nlohmann::json::parse(canceled.out).at("run_id") == run_id);
  CmdResult st;
  REQUIRE(WaitFor(
      [&] {
        st = Cli(all, {"status", run_id});
        return Has(FirstLine(st.out), "CANCELED");
      },
      10000));
  INFO(st.out);
  CHECK(ExitColumn(RowOf(st.out, "slow")) == "-");
  CHECK(Has(RowOf(st.out, "slow"), "canceled by the user (apollo11 cancel)"));
  CHECK(Has(RowOf(st.out, "after"), "canceled by the user (apollo11 cancel)"));
  auto doc = ParseJson(Cli(all, {"status", run_id, "--json"}).out);
  CHECK_FALSE(doc["tasks"]["slow"].contains("exit_code"));
}

TEST_CASE("runs marks a RUNNING run whose apollo11 run was killed and points to run --resume",
          "[cli][newcomer][orphan]") {
  ScratchDir dir;
  const std::string file = dir.Write("p.yaml",
                                     "version: \"1.0\"\nname: test.orphan\npipeline:\n"
                                     "  - {id: a, type: shell, command: \"sleep 2\"}\n"
                                     "  - {id: b, type: noop, depends_on: a}\n");
  const std::string state = dir.path() + "/state";
  pid_t pid = SpawnNamed({Apollo11(), "run", file, "--state-dir", state}, dir.path(), "run");
  std::string run_id;
  REQUIRE(WaitFor(
      [&] {
        auto runs = ParseJson(Run({Apollo11(), "runs", "--state-dir", state, "--json"}).out);
        if (!runs.is_array() || runs.empty()) return false;
        run_id = runs[0].value("run_id", "");
        return runs[0].value("state", "") == "RUNNING";
      },
      10000));
  // While its process lives, it is not marked.
  CmdResult alive = Run({Apollo11(), "runs", "--state-dir", state});
  CHECK_FALSE(Has(alive.out, "orphaned"));
  ::kill(pid, SIGKILL);
  WaitExit(pid, 5000);
  CmdResult text = Run({Apollo11(), "runs", "--state-dir", state});
  INFO(text.out);
  CHECK(text.exit_code == 0);
  CHECK(Has(text.out, "RUNNING*"));
  CHECK(Has(text.out, "the process that ran it is gone"));
  const std::string resume = "apollo11 run --resume " + run_id + " --state-dir " + state;
  CHECK(Has(text.out, resume));
  auto doc = ParseJson(Run({Apollo11(), "runs", "--state-dir", state, "--json"}).out);
  REQUIRE(doc.is_array());
  CHECK(doc[0].value("orphaned", false));
  CHECK(doc[0].value("continue_with", "") == resume);
  // `status --wait` does not wait forever for it: it shows the run, says
  // nothing runs it and how to continue it, and exits 3 (bounded here: the
  // old command polled until killed).
  const pid_t waiter = SpawnNamed({Apollo11(), "status", run_id, "--wait", "--state-dir", state},
                                  dir.path(), "wait");
  CHECK(WaitExit(waiter, 15000) == 3);
  INFO(dir.Read("wait.err"));
  CHECK(Has(dir.Read("wait.out"), "RUNNING"));
  CHECK(Has(dir.Read("wait.err"), "is RUNNING but nothing is running it"));
  CHECK(Has(dir.Read("wait.err"), "continue it with: " + resume));
  // The pointer works: the resumed run finishes, and is no longer marked.
  CmdResult resumed = Run({Apollo11(), "run", "--resume", run_id, "--state-dir", state});
  CHECK(resumed.exit_code == 0);
  CHECK_FALSE(Has(Run({Apollo11(), "runs", "--state-dir", state}).out, "orphaned"));
}

TEST_CASE("status from a local journal prints the coordinator's answer byte for byte",
          "[cli][newcomer][status]") {
  // The local view streams records from the journal; the coordinator builds
  // its document whole. Both must print the same bytes, as JSON and as text.
  ScratchDir dir;
  NodeProc all = StartAll(dir);
  Nodes guard{{&all}};
  const std::string file =
      dir.Write("p.yaml",
                "version: \"1.0\"\nname: test.local_status\npipeline:\n"
                "  - {id: ok, type: shell, command: \"echo hi\"}\n"
                "  - {id: bad, type: shell, command: \"echo oops >&2; exit 3\"}\n"
                "  - {id: after_bad, type: noop, depends_on: bad}\n"
                "  - {id: quiet, type: noop}\n");
  CmdResult sub = Cli(all, {"submit", file, "--wait"});
  REQUIRE(sub.exit_code == 1);  // `bad` failed the run
  const std::string run_id = FirstLine(sub.out);
  const std::string state = dir.path() + "/all";
  for (const std::vector<std::string>& format :
       {std::vector<std::string>{"--json"}, std::vector<std::string>{}}) {
    std::vector<std::string> remote_args = {"status", run_id};
    remote_args.insert(remote_args.end(), format.begin(), format.end());
    CmdResult remote = Cli(all, remote_args);
    std::vector<std::string> local_args = {Apollo11(), "status", run_id, "--state-dir", state};
    local_args.insert(local_args.end(), format.begin(), format.end());
    CmdResult local = Run(local_args);
    INFO(local.err);
    CHECK(remote.exit_code == 0);
    CHECK(local.exit_code == 0);
    CHECK(Has(local.out, "FAILED"));
    CHECK(local.out == remote.out);
  }

  CmdResult waited = Run({Apollo11(), "status", run_id, "--state-dir", state, "--wait", "--json"});
  CHECK(waited.exit_code == 1);  // --wait: the run's outcome
  CHECK(waited.out == Cli(all, {"status", run_id, "--json"}).out);
}
