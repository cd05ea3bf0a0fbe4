// Retention through the real binaries: `apollo11 gc` on a state dir, its
// refusal while a node owns the dir, and a node's own `--retention`.

#include <catch2/catch.hpp>
#include <filesystem>

#include "tests/actors/cli_harness.h"
#include "tests/actors/node_harness.h"

using namespace apollo11::testing;  // NOLINT: test file

namespace {

const char* kEchoPipeline = R"(version: "1.0"
name: test.retention
pipeline:
  - id: hello
    type: shell
    command: "echo hello from $APOLLO11_RUN_ID"
)";

// Runs the pipeline with `apollo11 run` and returns its run id.
std::string RunOnce(const ScratchDir& dir, const std::string& state) {
  const std::string file = dir.Write("echo.yaml", kEchoPipeline);
  CmdResult r = Run({Apollo11(), "run", file, "--state-dir", state, "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto summary = ParseJson(r.out);
  REQUIRE(summary.is_object());
  return summary["run_id"].get<std::string>();
}

// Log files of `run_id` anywhere under `state`.
size_t LogFilesOf(const std::string& state, const std::string& run_id) {
  size_t n = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(state)) {
    const std::string name = entry.path().filename().string();
    if (entry.path().parent_path().filename() == "logs" && name.rfind(run_id + ".", 0) == 0) ++n;
  }
  return n;
}

CmdResult Gc(const std::string& state, std::vector<std::string> args) {
  std::vector<std::string> argv = {Apollo11(), "gc", "--state-dir", state};
  argv.insert(argv.end(), args.begin(), args.end());
  return Run(argv);
}

}  // namespace

TEST_CASE("apollo11 gc removes old finished runs with their history and logs, not recent ones",
          "[retention]") {
  ScratchDir dir;
  const std::string state = dir.path() + "/state";
  const std::string old_run = RunOnce(dir, state);
  // The second run starts once gc itself counts the first as older than 2 s.
  REQUIRE(WaitFor(
      [&] {
        auto plan = ParseJson(Gc(state, {"--older-than", "2s", "--dry-run", "--json"}).out);
        return plan.is_object() && plan["run_ids"] == nlohmann::json::array({old_run});
      },
      10000));
  const std::string new_run = RunOnce(dir, state);
  REQUIRE(LogFilesOf(state, old_run) == 1);
  REQUIRE(LogFilesOf(state, new_run) == 1);

  CmdResult plan = Gc(state, {"--older-than", "2s", "--dry-run", "--json"});
  INFO(plan.err);
  REQUIRE(plan.exit_code == 0);
  auto planned = ParseJson(plan.out);
  CHECK(planned["run_ids"] == nlohmann::json::array({old_run}));
  CHECK(planned["transitions"] == 3);
  CHECK(planned["log_files"] == 1);
  CHECK(planned["log_bytes"].get<int>() > 0);
  CHECK(LogFilesOf(state, old_run) == 1);  // a dry run removes nothing

  CmdResult gc = Gc(state, {"--older-than", "2s"});
  INFO(gc.err);
  REQUIRE(gc.exit_code == 0);
  CHECK(gc.out.find("removed 1 runs") != std::string::npos);
  CHECK(gc.out.find("3 transitions") != std::string::npos);
  CHECK(gc.out.find("1 log files") != std::string::npos);

  CmdResult history = Run({Apollo11(), "history", old_run, "--state-dir", state});
  CHECK(history.exit_code == 2);
  CHECK(history.err.find("no run " + old_run) != std::string::npos);
  CHECK(Run({Apollo11(), "status", old_run, "--state-dir", state}).exit_code == 2);
  CHECK(LogFilesOf(state, old_run) == 0);
  CHECK(Run({Apollo11(), "history", new_run, "--state-dir", state}).exit_code == 0);
  CHECK(LogFilesOf(state, new_run) == 1);
  CmdResult runs = Run({Apollo11(), "runs", "--state-dir", state, "--json"});
  auto listed = ParseJson(runs.out);
  REQUIRE(listed.size() == 1);
  CHECK(listed[0]["run_id"] == new_run);

  CmdResult bad = Gc(state, {"--older-than", "thirty days"});
  CHECK(bad.exit_code == 2);
  CHECK(bad.err.find("--older-than") != std::string::npos);
  CmdResult missing =
      Run({Apollo11(), "gc", "--older-than", "1d", "--state-dir", dir.path() + "/nothing-here"});
  CHECK(missing.exit_code == 2);
  CHECK(missing.err.find("no journal") != std::string::npos);
}

TEST_CASE("gc is refused while a node owns the state dir, and the node's --retention collects",
          "[retention]") {
  ScratchDir dir;
  const std::string state = dir.path() + "/state";
  NodeProcess node(dir, "node",
                   {"--role", "all", "--state-dir", state, "--bind", "tcp://127.0.0.1:0",
                    "--api-bind", "tcp://127.0.0.1:0", "--slots", "1", "--worker-id", "w1",
                    "--retention", "1s", "--retention-interval", "300ms"});
  const std::string file = dir.Write("echo.yaml", kEchoPipeline);
  CmdResult submitted = node.Cli({"submit", file, "--wait"});
  INFO(submitted.err);
  REQUIRE(submitted.exit_code == 0);
  const std::string run_id = submitted.out.substr(0, submitted.out.find('\n'));

  CmdResult refused = Gc(state, {"--older-than", "1s"});
  CHECK(refused.exit_code == 3);
  CHECK(refused.err.find("--retention") != std::string::npos);
  CHECK(Gc(state, {"--older-than", "0s", "--dry-run"}).exit_code == 0);  // reading is fine

  // Within a few passes the node removes the run, its history and its log.
  INFO(node.Log());
  REQUIRE(WaitFor([&] { return node.Cli({"history", run_id}).exit_code == 2; }, 10000));
  CHECK(node.Cli({"status", run_id}).exit_code == 2);
  CHECK(LogFilesOf(state, run_id) == 0);
  CHECK(node.Log().find("retention: removed 1 runs") != std::string::npos);
  CHECK(node.Stop() == 0);
}

TEST_CASE("a node's --audit-retention removes audit records by their own age, not the runs",
          "[retention][audit]") {
  ScratchDir dir;
  const std::string state = dir.path() + "/state";
  NodeProcess node(dir, "node",
                   {"--role", "all", "--state-dir", state, "--bind", "tcp://127.0.0.1:0",
                    "--api-bind", "tcp://127.0.0.1:0", "--slots", "1", "--worker-id", "w1",
                    "--audit-retention", "1s", "--retention-interval", "300ms"});
  const std::string file = dir.Write("echo.yaml", kEchoPipeline);
  CmdResult submitted = node.Cli({"submit", file, "--wait"});
  INFO(submitted.err);
  REQUIRE(submitted.exit_code == 0);
  const std::string run_id = submitted.out.substr(0, submitted.out.find('\n'));
  auto records = ParseJson(node.Cli({"audit", "--json"}).out);
  REQUIRE(records.is_array());
  REQUIRE(records.size() == 1);
  CHECK(records[0]["action"] == "submit");
  CHECK(records[0]["outcome"] == "run " + run_id);

  INFO(node.Log());
  REQUIRE(WaitFor([&] { return ParseJson(node.Cli({"audit", "--json"}).out).empty(); }, 10000));
  CHECK(node.Log().find("retention: removed 1 audit records") != std::string::npos);
  CHECK(node.Cli({"history", run_id}).exit_code == 0);  // runs have their own retention (off)
  CHECK(node.Stop() == 0);
}
