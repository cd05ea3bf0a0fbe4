// `apollo11 trace` and structured logs with real coordinator and worker
// processes: a task that fails once and succeeds on retry is traced across
// the journal, the coordinator's log and the worker's; stderr in JSON parses
// line by line; health lines appear; an embedded run is traced locally.

#include <catch2/catch.hpp>
#include <filesystem>
#include <sstream>

#include "tests/actors/cli_harness.h"
#include "tests/actors/cluster_harness.h"

using namespace apollo11::testing;  // NOLINT: test file

namespace {

std::string FlakyPipeline(const ScratchDir& dir) {
  const std::string marks = dir.path();
  return dir.Write("p.yaml", R"(version: "1.0"
name: test.trace
pipeline:
  - id: flaky
    type: shell
    command: "echo attempt $APOLLO11_ATTEMPT; test -e )" +
                                 marks + R"(/once && exit 0; touch )" + marks + R"(/once; exit 1"
    retry: {max_retries: 2, delay: 100ms}
)");
}

// Every line of `text` is a JSON object with the standard fields.
void CheckJsonLines(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    INFO(line);
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    REQUIRE(j.is_object());
    for (const char* key : {"ts", "level", "node", "actor", "event", "msg"}) CHECK(j.contains(key));
    ++n;
  }
  CHECK(n > 0);
}

// Index of the first entry matching, or -1.
int Find(const nlohmann::json& trace, const std::string& source, const std::string& event,
         uint32_t attempt) {
  for (size_t i = 0; i < trace.size(); ++i) {
    const auto& e = trace[i];
    if (e["source"] == source && e["event"] == event && e["attempt"] == attempt) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

// The checks both modes share: each attempt's journal, coordinator and
// worker lines, attempt 1 entirely before attempt 2, time never going back.
void CheckRetriedTrace(const nlohmann::json& trace, const std::string& worker) {
  INFO(trace.dump(2));
  REQUIRE(trace.is_array());
  for (size_t i = 1; i < trace.size(); ++i) {
    CHECK(trace[i - 1]["ts_us"].get<int64_t>() <= trace[i]["ts_us"].get<int64_t>());
  }
  const int run1 = Find(trace, "journal", "READY -> RUNNING", 1);
  const int failed1 = Find(trace, "coordinator", "attempt_failed", 1);
  const int started1 = Find(trace, "worker " + worker, "started", 1);
  const int exited1 = Find(trace, "worker " + worker, "exited", 1);
  const int run2 = Find(trace, "journal", "READY -> RUNNING", 2);
  const int started2 = Find(trace, "worker " + worker, "started", 2);
  const int exited2 = Find(trace, "worker " + worker, "exited", 2);
  const int success = Find(trace, "journal", "RUNNING -> SUCCESS", 2);
  for (int i : {run1, failed1, started1, exited1, run2, started2, exited2, success}) CHECK(i >= 0);
  CHECK(run1 < run2);
  CHECK(started1 < exited1);
  CHECK(exited1 < started2);
  CHECK(failed1 < run2);
  CHECK(started2 < exited2);
  CHECK(run2 < success);
  CHECK(trace[exited1]["text"].get<std::string>().find("exit 1") != std::string::npos);
}

}  // namespace

TEST_CASE("trace of a retried execution shows both attempts in order across coordinator and worker",
          "[cluster][trace]") {
  ScratchDir dir;
  NodeProc coord =
      StartNode(dir, "coord",
                {"--role", "coordinator", "--bind", "tcp://127.0.0.1:0", "--api-bind",
                 "tcp://127.0.0.1:0", "--log-format", "json", "--health-interval", "300ms"});
  NodeProc w1 = StartNode(
      dir, "w1",
      {"--role", "worker", "--connect", coord.listening["workers"].get<std::string>(),
       "--worker-id", "w1", "--slots", "1", "--log-format", "json", "--health-interval", "300ms"},
      "w1");
  Nodes guard{{&coord, &w1}};
  REQUIRE(WaitFor([&] { return WorkerCount(coord) == 1; }, 5000));
  CmdResult sub = Cli(coord, {"submit", FlakyPipeline(dir), "--wait"});
  REQUIRE(sub.exit_code == 0);
  const std::string exec = sub.out.substr(0, sub.out.find('\n')) + ".flaky";

  CmdResult json = Cli(coord, {"trace", exec, "--json"});
  INFO(json.err);
  REQUIRE(json.exit_code == 0);
  CheckRetriedTrace(ParseJson(json.out), "w1");

  CmdResult text = Cli(coord, {"trace", exec});
  CHECK(text.exit_code == 0);
  CHECK(text.out.find("journal") != std::string::npos);
  CHECK(text.out.find("coordinator") != std::string::npos);
  CHECK(text.out.find("worker w1") != std::string::npos);

  // Health lines at the interval, on both nodes.
  CHECK(WaitFor(
      [&] { return dir.Read("coord.err").find("\"event\":\"health\"") != std::string::npos; },
      5000));
  CHECK(WaitFor(
      [&] { return dir.Read("w1.err").find("\"event\":\"health\"") != std::string::npos; }, 5000));
  // --log-format json: stderr parses line by line; the files are JSON too.
  CheckJsonLines(dir.Read("coord.err"));
  CheckJsonLines(dir.Read("w1.err"));
  CheckJsonLines(dir.Read("coord/coordinator.log"));
  CheckJsonLines(dir.Read("w1/worker-w1/worker.log"));

  CmdResult missing = Cli(coord, {"trace", "r-nope.x"});
  CHECK(missing.exit_code == 2);
}

TEST_CASE("trace of an embedded run reads the journal and log files of the state dir", "[trace]") {
  ScratchDir dir;
  const std::string state = dir.path() + "/s";
  CmdResult run = Run({Apollo11(), "run", FlakyPipeline(dir), "--state-dir", state, "--json"});
  REQUIRE(run.exit_code == 0);
  const std::string exec = ParseJson(run.out)["run_id"].get<std::string>() + ".flaky";
  CmdResult trace = Run({Apollo11(), "trace", exec, "--state-dir", state, "--json"});
  INFO(trace.err);
  REQUIRE(trace.exit_code == 0);
  CheckRetriedTrace(ParseJson(trace.out), "local");

  CmdResult missing = Run({Apollo11(), "trace", "r-nope.x", "--state-dir", state});
  CHECK(missing.exit_code == 2);
  CHECK(missing.err.find("no execution") != std::string::npos);
}
