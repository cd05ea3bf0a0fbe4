// What log shippers and terminals get from the real binaries: in
// --log-format json every stderr line of a node and of `apollo11 run` is one
// JSON object (alert hook output included, as events), levels say `warn`,
// a clean BYE is info, and `run` draws progress only on a terminal.

#include <signal.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/actors/cluster_harness.h"

using namespace apollo11::testing;  // NOLINT: test file

namespace {

// Every line of `text`, each parsed as one JSON object (a failure names the line).
std::vector<nlohmann::json> JsonLines(const std::string& text) {
  std::vector<nlohmann::json> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    INFO("stderr line: " << line);
    nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    CHECK(j.is_object());
    if (j.is_object()) lines.push_back(std::move(j));
  }
  return lines;
}

bool HasEvent(const std::vector<nlohmann::json>& lines, const std::string& event,
              const std::function<bool(const nlohmann::json&)>& match = nullptr) {
  for (const auto& j : lines) {
    if (j.value("event", "") == event && (!match || match(j))) return true;
  }
  return false;
}

void CheckLevels(const std::vector<nlohmann::json>& lines) {
  for (const auto& j : lines) {
    const std::string level = j.value("level", "");
    INFO(j.dump());
    CHECK((level == "trace" || level == "debug" || level == "info" || level == "warn" ||
           level == "error" || level == "critical"));
  }
}

std::string ThreeTasks(const ScratchDir& dir, const std::string& name = "test.three") {
  return dir.Write(name + ".yaml", R"(version: "1.0"
name: )" + name + R"(
pipeline:
  - {id: a, type: shell, command: "echo a-out; echo a-err >&2"}
  - {id: b, type: shell, command: "sleep 0.3", depends_on: a}
  - {id: c, type: shell, command: "true", depends_on: b}
)");
}

}  // namespace

TEST_CASE("in --log-format json every stderr line of a node is one JSON object, hook output too",
          "[cli][logs]") {
  ScratchDir dir;
  const std::string fired = dir.path() + "/fired";
  dir.Write("coord.yaml", R"(alert-fold-window: 100ms
alerts:
  - name: loud
    events: [run_failed]
    command: "echo hook-says-hello; echo hook-complains >&2; touch )" +
                              fired + R"("
)");
  NodeProc coord = StartNode(
      dir, "coord",
      {"--role", "coordinator", "--bind", "tcp://127.0.0.1:0", "--api-bind", "tcp://127.0.0.1:0",
       "--log-format", "json", "--config", dir.path() + "/coord.yaml"});
  NodeProc worker =
      StartNode(dir, "w1",
                {"--role", "worker", "--connect", coord.listening["workers"].get<std::string>(),
                 "--worker-id", "w1", "--slots", "2", "--log-format", "json"});
  Nodes guard{{&coord, &worker}};
  REQUIRE(WaitFor([&] { return WorkerCount(coord) == 1; }, 10000));
  const std::string failing = dir.Write("fail.yaml", R"(version: "1.0"
name: test.fail
pipeline:
  - {id: boom, type: shell, command: "echo task-out; echo task-err >&2; exit 3"}
)");
  CmdResult r = Cli(coord, {"submit", failing, "--wait"});
  CHECK(r.exit_code != 0);
  REQUIRE(WaitFor([&] { return dir.Exists("fired"); }, 10000));

  // A clean stop: the worker drains and says BYE, then the coordinator stops.
  ::kill(worker.pid, SIGTERM);
  CHECK(WaitExit(worker.pid, 10000) == 0);
  worker.pid = -1;
  CHECK(WaitFor([&] { return WorkerCount(coord) == 0; }, 5000));
  ::kill(coord.pid, SIGTERM);
  CHECK(WaitExit(coord.pid, 10000) == 0);
  coord.pid = -1;

  const auto coord_lines = JsonLines(dir.Read("coord.err"));
  const auto worker_lines = JsonLines(dir.Read("w1.err"));
  CHECK(coord_lines.size() > 3);
  CHECK(worker_lines.size() > 3);
  CheckLevels(coord_lines);
  CheckLevels(worker_lines);
  // The hook's stdout and stderr, as events.
  CHECK(HasEvent(coord_lines, "alert_hook_output",
                 [](const auto& j) { return j.value("line", "") == "hook-says-hello"; }));
  CHECK(HasEvent(coord_lines, "alert_hook_output",
                 [](const auto& j) { return j.value("line", "") == "hook-complains"; }));
  // The worker left cleanly: info, not warn.
  CHECK(HasEvent(coord_lines, "worker_gone", [](const auto& j) {
    return j.value("worker_id", "") == "w1" && j.value("level", "") == "info";
  }));
}

TEST_CASE("in --log-format json every stderr line of apollo11 run is one JSON object",
          "[cli][logs]") {
  ScratchDir dir;
  const std::string file = ThreeTasks(dir);
  CmdResult r = Run({Apollo11(), "run", file, "--state-dir", dir.path() + "/s", "--log-format",
                     "json", "--log-level", "info", "--heartbeat", "100ms"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  const auto lines = JsonLines(r.err);
  CheckLevels(lines);
  CHECK(HasEvent(lines, "run_submitted"));
  CHECK(r.out.find("SUCCESS") != std::string::npos);  // the summary, on stdout

  // Errors too.
  CmdResult bad = Run({Apollo11(), "run", dir.path() + "/missing.yaml", "--state-dir",
                       dir.path() + "/s", "--log-format", "json"});
  CHECK(bad.exit_code != 0);
  const auto bad_lines = JsonLines(bad.err);
  REQUIRE_FALSE(bad_lines.empty());
  CHECK(bad_lines[0].value("level", "") == "error");
}

TEST_CASE(
    "apollo11 run draws progress only on a terminal, and --quiet and --no-progress silence it",
    "[cli][logs]") {
  ScratchDir dir;
  const std::string file = ThreeTasks(dir);
  auto run = [&](std::vector<std::string> extra) {
    std::vector<std::string> argv{
        Apollo11(),     "run",  file,          "--state-dir", dir.path() + "/s",
        "--log-format", "text", "--heartbeat", "100ms"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return Run(argv);
  };
  // Piped: the start line, no progress.
  CmdResult piped = run({});
  INFO(piped.err);
  CHECK(piped.exit_code == 0);
  CHECK(piped.err.find("started: 3 tasks") != std::string::npos);
  CHECK(piped.err.find("SUCCESS 3") == std::string::npos);
  CHECK(piped.err.find('\r') == std::string::npos);
  // --quiet: the summary and nothing else.
  CmdResult quiet = run({"--quiet"});
  INFO(quiet.err);
  CHECK(quiet.exit_code == 0);
  CHECK(quiet.err.empty());
  CHECK(quiet.out.find("SUCCESS") != std::string::npos);

  if (Run({"/bin/sh", "-c", "command -v script"}).exit_code != 0) {
    WARN("SKIPPED: util-linux `script` is absent: the terminal case is not tested");
    return;
  }
  // On a terminal (script(1) gives the command a pty): the progress line.
  auto on_tty = [&](const std::string& extra) {
    std::string cmd = Apollo11() + " run " + file + " --state-dir " + dir.path() +
                      "/s --heartbeat 100ms " + extra;
    if (extra.find("--log-format") == std::string::npos) cmd += " --log-format text";
    return Run({"script", "-qec", cmd, "/dev/null"});
  };
  CmdResult tty = on_tty("");
  INFO(tty.out);
  CHECK(tty.exit_code == 0);
  CHECK(tty.out.find("\r\033[K") != std::string::npos);
  CHECK(tty.out.find("SUCCESS 3") != std::string::npos);
  CmdResult no_progress = on_tty("--no-progress");
  CHECK(no_progress.exit_code == 0);
  CHECK(no_progress.out.find("\033[K") == std::string::npos);
  CHECK(no_progress.out.find("started: 3 tasks") != std::string::npos);
  CmdResult tty_quiet = on_tty("--quiet");
  CHECK(tty_quiet.exit_code == 0);
  CHECK(tty_quiet.out.find("\033[K") == std::string::npos);
  CHECK(tty_quiet.out.find("started") == std::string::npos);
  // JSON asked for on a terminal: records only, no progress line among them.
  CmdResult tty_json = on_tty("--log-format json");
  CHECK(tty_json.exit_code == 0);
  CHECK(tty_json.out.find("\033[K") == std::string::npos);
  CHECK(tty_json.out.find("\"event\":\"run_submitted\"") != std::string::npos);
}
