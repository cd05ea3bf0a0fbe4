// End-to-end behaviour of `apollo11 run` through the real binary: real actor
// threads over inproc ZeroMQ, a real LMDB journal, real child processes.

#include <signal.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <sstream>

#include "tests/actors/cli_harness.h"

using apollo11::testing::Alive;
using apollo11::testing::Apollo11;
using apollo11::testing::CmdResult;
using apollo11::testing::LayeredDag;
using apollo11::testing::ParseJson;
using apollo11::testing::Run;
using apollo11::testing::ScratchDir;
using apollo11::testing::Spawn;
using apollo11::testing::WaitExit;
using apollo11::testing::WaitFor;

namespace {

CmdResult RunPipeline(const ScratchDir& dir, const std::string& yaml,
                      std::vector<std::string> extra = {}) {
  std::string file = dir.Write("pipeline.yaml", yaml);
  std::vector<std::string> argv = {Apollo11(), "run", file, "--state-dir", dir.path() + "/state",
                                   "--json"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  return Run(argv, dir.path());
}

std::string TaskState(const nlohmann::json& summary, const std::string& task) {
  return summary["tasks"][task]["state"].get<std::string>();
}

nlohmann::json History(const ScratchDir& dir, const std::string& id) {
  CmdResult r = Run({Apollo11(), "history", id, "--state-dir", dir.path() + "/state", "--json"});
  REQUIRE(r.exit_code == 0);
  return ParseJson(r.out);
}

}  // namespace

TEST_CASE("a failure branch is taken and the success branch is skipped", "[e2e]") {
  ScratchDir dir;
  CmdResult r = RunPipeline(dir, R"(version: "1.0"
name: test.branches
pipeline:
  - id: load
    type: shell
    command: "exit 4"
  - id: on_ok
    type: shell
    command: "echo ok"
    depends_on: load
  - id: on_fail
    type: shell
    command: "echo cleaning up"
    depends_on:
      - {task: load, on: failure}
  - id: after_ok
    type: noop
    depends_on: on_ok
)");
  INFO(r.err);
  auto summary = ParseJson(r.out);
  REQUIRE(summary.is_object());
  CHECK(TaskState(summary, "load") == "FAILED");
  CHECK(summary["tasks"]["load"]["exit_code"] == 4);
  CHECK(TaskState(summary, "on_fail") == "SUCCESS");
  CHECK(TaskState(summary, "on_ok") == "SKIPPED");
  CHECK(TaskState(summary, "after_ok") == "SKIPPED");
  // The failure was handled, so the run succeeded.
  CHECK(summary["state"] == "SUCCESS");
  CHECK(r.exit_code == 0);
}

TEST_CASE("an unhandled failure cancels its chain and fails the run", "[e2e]") {
  ScratchDir dir;
  CmdResult r = RunPipeline(dir, R"(version: "1.0"
name: test.cancel_chain
pipeline:
  - id: a
    type: shell
    command: "exit 1"
  - id: b
    type: noop
    depends_on: a
  - id: c
    type: noop
    depends_on: b
  - id: independent
    type: shell
    command: "true"
)");
  INFO(r.err);
  auto summary = ParseJson(r.out);
  REQUIRE(summary.is_object());
  CHECK(summary["state"] == "FAILED");
  CHECK(r.exit_code == 1);
  CHECK(TaskState(summary, "a") == "FAILED");
  CHECK(TaskState(summary, "b") == "CANCELED");
  CHECK(TaskState(summary, "c") == "CANCELED");
  CHECK(TaskState(summary, "independent") == "SUCCESS");
  // Nothing left PENDING, and the reason names the failed upstream.
  auto history = History(dir, summary["run_id"].get<std::string>());
  bool named = false;
  for (const auto& t : history) {
    CHECK(t["to"] != "PENDING");
    if (t["task_id"] == "c" && t["to"] == "CANCELED") {
      named = t["reason"].get<std::string>().find("upstream") != std::string::npos;
    }
  }
  CHECK(named);
}

TEST_CASE("a flaky task succeeds on its third attempt with the policy's delays", "[e2e]") {
  ScratchDir dir;
  CmdResult r = RunPipeline(dir, R"(version: "1.0"
name: test.flaky
pipeline:
  - id: flaky
    type: shell
    command: |
      date +%s%N >> )" + dir.path() + R"(/attempts
      [ "$APOLLO11_ATTEMPT" -ge 3 ]
    retry:
      max_retries: 4
      delay: 300ms
      backoff: exponential
      max_delay: 10s
)");
  INFO(r.err);
  auto summary = ParseJson(r.out);
  REQUIRE(summary.is_object());
  CHECK(summary["state"] == "SUCCESS");
  CHECK(summary["tasks"]["flaky"]["attempts"] == 3);
  std::istringstream lines(dir.Read("attempts"));
  std::vector<double> t;
  for (long long ns; lines >> ns;) t.push_back(static_cast<double>(ns) / 1e6);
  REQUIRE(t.size() == 3);
  // Exponential with the default 20% jitter: 300ms then 600ms, +-20%, plus
  // the retry-storm stagger (up to half the delay before jitter, from a hash
  // of the run and task ids: docs/dsl.md), plus the dispatch and process
  // start-up cost (generous for sanitizer builds).
  const double gap1 = t[1] - t[0], gap2 = t[2] - t[1];
  INFO("gaps " << gap1 << " ms, " << gap2 << " ms");
  CHECK(gap1 >= 240);
  CHECK(gap1 <= 360 + 150 + 250);
  CHECK(gap2 >= 480);
  CHECK(gap2 <= 720 + 300 + 250);
  // Each wait is journaled as RETRYING with the computed delay in the reason.
  auto history = History(dir, summary["tasks"]["flaky"]["exec_id"].get<std::string>());
  int retrying = 0;
  for (const auto& tr : history) {
    if (tr["to"] == "RETRYING") {
      ++retrying;
      CHECK(tr["reason"].get<std::string>().find("retry") != std::string::npos);
    }
  }
  CHECK(retrying == 2);
}

TEST_CASE("a timeout kills the task with its background children and takes the timeout branch",
          "[e2e]") {
  ScratchDir dir;
  CmdResult r = RunPipeline(dir, R"(version: "1.0"
name: test.timeout
pipeline:
  - id: slow
    type: shell
    command: |
      sleep 60 &
      echo $! > )" + dir.path() + R"(/child.pid
      sleep 60
    timeout: 1s
  - id: too_late
    type: shell
    command: "echo never"
    depends_on: slow
  - id: on_timeout
    type: shell
    command: "echo handled"
    depends_on:
      - {task: slow, on: timeout}
)");
  INFO(r.err);
  auto summary = ParseJson(r.out);
  REQUIRE(summary.is_object());
  CHECK(TaskState(summary, "slow") == "TIMEOUT");
  CHECK(TaskState(summary, "on_timeout") == "SUCCESS");
  CHECK(TaskState(summary, "too_late") == "SKIPPED");
  CHECK(summary["state"] == "SUCCESS");
  pid_t child = std::stoi(dir.Read("child.pid"));
  CHECK(WaitFor([&] { return !Alive(child); }, 3000));
}

TEST_CASE("parallel tasks really overlap", "[e2e]") {
  ScratchDir dir;
  std::string yaml = "version: \"1.0\"\nname: test.parallel\npipeline:\n";
  for (const char* id : {"p1", "p2"}) {
    yaml += std::string("  - id: ") + id + "\n    type: shell\n    command: \"date +%s%N > " +
            dir.path() + "/" + id + ".start; sleep 0.6; date +%s%N > " + dir.path() + "/" + id +
            ".end\"\n";
  }
  CmdResult r = RunPipeline(dir, yaml, {"--slots", "2"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto read = [&](const std::string& f) { return std::stoll(dir.Read(f)); };
  // Each started before the other ended.
  CHECK(read("p1.start") < read("p2.end"));
  CHECK(read("p2.start") < read("p1.end"));
}

TEST_CASE("a 5,000-task layered DAG of noop tasks completes", "[e2e][large]") {
  ScratchDir dir;
  CmdResult r = RunPipeline(dir, LayeredDag(5000, 10, "noop", 7));
  INFO(r.err.substr(0, 2000));
  auto summary = ParseJson(r.out);
  REQUIRE(summary.is_object());
  CHECK(summary["state"] == "SUCCESS");
  CHECK(summary["tasks"].size() == 5000);
  // Every task went PENDING -> READY -> RUNNING -> SUCCESS, nothing else.
  auto history = History(dir, summary["run_id"].get<std::string>());
  CHECK(history.size() == 5000 * 3);
  uint64_t last = 0;
  for (const auto& t : history) {
    CHECK(t["seq"].get<uint64_t>() > last);
    last = t["seq"].get<uint64_t>();
  }
}

TEST_CASE("a 5,000-task layered DAG of shell tasks completes", "[e2e][large]") {
  ScratchDir dir;
  CmdResult r = RunPipeline(dir, LayeredDag(5000, 10, "shell", 11), {"--slots", "2"});
  INFO(r.err.substr(0, 2000));
  auto summary = ParseJson(r.out);
  REQUIRE(summary.is_object());
  CHECK(summary["state"] == "SUCCESS");
  int succeeded = 0;
  for (auto& [id, t] : summary["tasks"].items()) succeeded += t["state"] == "SUCCESS";
  CHECK(succeeded == 5000);
}

TEST_CASE("history shows every transition with a reason and an actor", "[e2e]") {
  ScratchDir dir;
  CmdResult r = RunPipeline(dir, R"(version: "1.0"
name: test.history
pipeline:
  - id: first
    type: shell
    command: "echo one"
  - id: second
    type: noop
    depends_on: first
)");
  REQUIRE(r.exit_code == 0);
  auto summary = ParseJson(r.out);
  auto history = History(dir, summary["run_id"].get<std::string>());
  REQUIRE(history.size() == 6);
  for (const auto& t : history) {
    CHECK_FALSE(t["reason"].get<std::string>().empty());
    CHECK_FALSE(t["actor"].get<std::string>().empty());
    for (const char* key : {"seq", "ts", "run_id", "task_id", "exec_id", "attempt", "from", "to"}) {
      CHECK(t.contains(key));
    }
  }
  CHECK(history[0]["task_id"] == "first");
  CHECK(history[0]["from"] == "PENDING");
  CHECK(history[0]["to"] == "READY");
  // Text form too.
  CmdResult text = Run({Apollo11(), "history", summary["run_id"].get<std::string>(), "--state-dir",
                        dir.path() + "/state"});
  CHECK(text.exit_code == 0);
  CHECK(text.out.find("RUNNING  -> SUCCESS") != std::string::npos);
  // `status` matches `run --json`.
  CmdResult status = Run({Apollo11(), "status", summary["run_id"].get<std::string>(), "--state-dir",
                          dir.path() + "/state", "--json"});
  CHECK(status.exit_code == 0);
  CHECK(ParseJson(status.out)["tasks"] == summary["tasks"]);
  // An unknown id is a clear error.
  CmdResult missing = Run({Apollo11(), "history", "r-nope", "--state-dir", dir.path() + "/state"});
  CHECK(missing.exit_code == 2);
  CHECK(missing.err.find("no run r-nope") != std::string::npos);
}

TEST_CASE("a second process on the same state dir is refused, and Ctrl-C cancels cleanly",
          "[e2e]") {
  ScratchDir dir;
  std::string file = dir.Write("pipeline.yaml", R"(version: "1.0"
name: test.lock
pipeline:
  - id: hold
    type: shell
    command: |
      sleep 60 &
      echo $! > )" + dir.path() + R"(/child.pid
      sleep 60
  - id: after
    type: noop
    depends_on: hold
)");
  const std::string state = dir.path() + "/state";
  pid_t first = Spawn({Apollo11(), "run", file, "--state-dir", state, "--json"}, dir.path());
  REQUIRE(first > 0);
  REQUIRE(
      WaitFor([&] { return dir.Exists("child.pid") && !dir.Read("child.pid").empty(); }, 10000));

  CmdResult second = Run({Apollo11(), "run", file, "--state-dir", state});
  CHECK(second.exit_code == 3);
  CHECK(second.err.find("in use by process " + std::to_string(first)) != std::string::npos);

  // Read-only views work while the run holds the lock.
  CmdResult runs = Run({Apollo11(), "runs", "--state-dir", state, "--json"});
  CHECK(runs.exit_code == 0);

  ::kill(first, SIGINT);
  int code = WaitExit(first, 15000);
  CHECK(code == 1);
  auto summary = ParseJson(dir.Read("spawn.out"));
  REQUIRE(summary.is_object());
  CHECK(summary["state"] == "CANCELED");
  CHECK(TaskState(summary, "hold") == "CANCELED");
  CHECK(TaskState(summary, "after") == "CANCELED");
  pid_t child = std::stoi(dir.Read("child.pid"));
  CHECK(WaitFor([&] { return !Alive(child); }, 5000));
}

TEST_CASE("run refuses invalid input with exit code 2", "[e2e]") {
  ScratchDir dir;
  CmdResult bad = RunPipeline(dir, "version: \"1.0\"\npipeline:\n  - id: a\n    type: shel\n");
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("pipeline.yaml:4:") != std::string::npos);
}

// One SQLite task, "store", on a database file in `dir`.
std::string SqliteSelectPipeline(const ScratchDir& dir) {
  return R"(version: "1.0"
name: test.db
pipeline:
  - id: store
    type: db
    host: sqlite://)" +
         dir.path() + R"(/t.db
    sql: "select 1 as one"
)";
}

TEST_CASE("run runs a db task instead of refusing it", "[e2e]") {
  ScratchDir dir;
  CmdResult db = RunPipeline(dir, SqliteSelectPipeline(dir));
  INFO(db.err);
  CHECK(db.exit_code == 0);
  CHECK(db.err.find("'store' is a db task") == std::string::npos);
  auto summary = ParseJson(db.out);
  REQUIRE(summary.is_object());
  CHECK(TaskState(summary, "store") == "SUCCESS");
}

// LD_DEBUG=files makes the dynamic loader name, on stderr, every library it
// opens: those of the process's start and those of a dlopen alike.
bool Opened(const CmdResult& r, const std::string& library) {
  return r.err.find("file=" + library) != std::string::npos;
}

TEST_CASE("db and http client libraries are opened by the first task that needs one, not at start",
          "[e2e]") {
  ScratchDir dir;
  CmdResult version = Run({"env", "LD_DEBUG=files", Apollo11(), "--version"});
  REQUIRE(version.exit_code == 0);
  REQUIRE(Opened(version, "libzmq.so"));  // the loader's trace is there
  for (const char* library : {"libpq.so", "libmariadb.so", "libsqlite3.so", "libcurl.so"}) {
    INFO(library);
    CHECK_FALSE(Opened(version, library));
  }

  const std::string file = dir.Write("pipeline.yaml", SqliteSelectPipeline(dir));
  CmdResult run = Run({"env", "LD_DEBUG=files", Apollo11(), "run", file, "--state-dir",
                       dir.path() + "/state", "--json"});
  REQUIRE(run.exit_code == 0);
  CHECK(TaskState(ParseJson(run.out), "store") == "SUCCESS");
  CHECK(Opened(run, "libsqlite3.so"));
  for (const char* library : {"libpq.so", "libmariadb.so", "libcurl.so"}) {
    INFO(library);
    CHECK_FALSE(Opened(run, library));
  }
}

TEST_CASE("run refuses tasks its one worker cannot take, and notes a schedule it does not keep",
          "[e2e]") {
  ScratchDir dir;
  CmdResult placed = RunPipeline(dir, R"(version: "1.0"
name: test.placed
pipeline:
  - {id: train, type: shell, command: "true", group: gpu}
  - {id: fast, type: shell, command: "true", labels: [ssd, nvme]}
  - {id: plain, type: shell, command: "true"}
)");
  INFO(placed.err);
  CHECK(placed.exit_code == 2);
  CHECK(placed.err.find("apollo11 run's one worker is in group default with no labels") !=
        std::string::npos);
  CHECK(placed.err.find("'train' (group gpu); 'fast' (label ssd, label nvme)") !=
        std::string::npos);
  CHECK(placed.err.find("'plain'") == std::string::npos);

  CmdResult scheduled = RunPipeline(dir, R"(version: "1.0"
name: test.scheduled
schedule: "0 2 * * *"
pipeline:
  - {id: once, type: shell, command: "true"}
)");
  INFO(scheduled.err);
  CHECK(scheduled.exit_code == 0);
  CHECK(scheduled.err.find("0 2 * * *") != std::string::npos);  // JSON-escaped quotes around it
  CHECK(scheduled.err.find("is not kept here: apollo11 run runs it once, now") !=
        std::string::npos);
  CHECK(TaskState(ParseJson(scheduled.out), "once") == "SUCCESS");
}
