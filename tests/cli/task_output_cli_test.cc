// Task outputs and templating on the real `apollo11` binary: a task's
// $APOLLO11_OUTPUT JSON is journaled with its SUCCESS, read back by a later
// process (`status --json`), and feeds a downstream task's fields.

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <string>

#include "tests/actors/cli_harness.h"

using namespace apollo11::testing;  // NOLINT: test file

TEST_CASE("a task output is journaled and status shows it after the run", "[cli][output]") {
  ScratchDir dir;
  const std::string state = dir.path() + "/s";
  const std::string file = dir.Write("p.yaml", R"(version: "1.0"
name: test.outputs
pipeline:
  - id: a
    type: shell
    command: "printf '{\"x\": \"hello\", \"n\": [1, 2]}' > \"$APOLLO11_OUTPUT\""
  - id: plain
    type: shell
    command: "echo not json on stdout"
)");
  CmdResult run = Run({Apollo11(), "run", file, "--state-dir", state, "--json"});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  const std::string run_id = ParseJson(run.out)["run_id"];

  // A new process reads the journal: the output survived the coordinator.
  auto status = ParseJson(Run({Apollo11(), "status", run_id, "--state-dir", state, "--json"}).out);
  INFO(status.dump());
  CHECK(status["tasks"]["a"]["output"]["x"] == "hello");
  CHECK(status["tasks"]["a"]["output"]["n"][1] == 2);
  CHECK_FALSE(status["tasks"]["plain"].contains("output"));
}

TEST_CASE("an output that is not JSON fails the run with the reason", "[cli][output]") {
  ScratchDir dir;
  const std::string state = dir.path() + "/s";
  const std::string file = dir.Write("p.yaml", R"(version: "1.0"
name: test.badoutput
pipeline:
  - id: a
    type: shell
    retry: {max_retries: 3, delay: 10ms}
    command: "echo 'not json' > \"$APOLLO11_OUTPUT\""
)");
  CmdResult run = Run({Apollo11(), "run", file, "--state-dir", state, "--json"});
  CHECK(run.exit_code != 0);
  const std::string run_id = ParseJson(run.out)["run_id"];
  auto status = ParseJson(Run({Apollo11(), "status", run_id, "--state-dir", state, "--json"}).out);
  INFO(status.dump());
  CHECK(status["tasks"]["a"]["state"] == "FAILED");
  CHECK(status["tasks"]["a"]["attempts"] == 1);  // not retried: it cannot help
  CHECK(status["tasks"]["a"]["error"].get<std::string>().find("not valid JSON") !=
        std::string::npos);
}

TEST_CASE("a downstream command and env get an upstream's output through templates",
          "[cli][output][template]") {
  ScratchDir dir;
  const std::string state = dir.path() + "/s";
  const std::string out = dir.path() + "/b.out";
  const std::string file =
      dir.Write("p.yaml", R"(version: "1.0"
name: test.templates
params: {day: "2026-12-01"}
pipeline:
  - id: a
    type: shell
    command: "printf '{\"x\": \"a b; touch )" +
                              dir.path() + R"(/pwned\", \"n\": [4, 5]}' > \"$APOLLO11_OUTPUT\""
  - id: b
    type: shell
    depends_on: a
    env: {N: "${tasks.a.output.n.1}"}
    command: "printf '%s|%s|%s|%s' ${tasks.a.output.x} \"$N\" ${params.day} ${task_id} > )" +
                              out + R"("
)");
  CmdResult run = Run({Apollo11(), "run", file, "--state-dir", state, "--json"});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);
  CHECK(dir.Read("b.out") == "a b; touch " + dir.path() + "/pwned|5|2026-12-01|b");
  CHECK_FALSE(dir.Exists("pwned"));
}

TEST_CASE("a template naming a task that is not upstream is refused with its place",
          "[cli][template]") {
  ScratchDir dir;
  const std::string file = dir.Write("p.yaml", R"(version: "1.0"
name: test.badtemplate
pipeline:
  - id: a
    type: shell
    command: "true"
  - id: b
    type: shell
    command: "echo ${tasks.a.output.x}"
)");
  CmdResult v = Run({Apollo11(), "validate", file});
  CHECK(v.exit_code == 2);
  CHECK(v.err.find(file + ":7:5: error: task 'b', 'command': ${tasks.a.output.x}: task 'a' is "
                          "not an upstream of 'b'") != std::string::npos);
}

TEST_CASE("placeholders that would grow a task past 4 MiB fail it with the limit, not the node",
          "[cli][output][template][limits]") {
  ScratchDir dir;
  const std::string state = dir.path() + "/s";
  // a's output is a 60,000-character JSON string; b repeats it in 80 env
  // values: each fits a field, together 4.8 MB pass the task's 4 MiB.
  std::string yaml = R"(version: "1.0"
name: test.templatebomb
pipeline:
  - id: a
    type: shell
    command: "printf '\"%060000d\"' 0 > \"$APOLLO11_OUTPUT\""
  - id: b
    type: shell
    depends_on: a
    command: "echo never"
    env:
)";
  for (int i = 0; i < 80; ++i) yaml += "      V" + std::to_string(i) + ": \"${tasks.a.output}\"\n";
  const std::string file = dir.Write("p.yaml", yaml);
  CmdResult run = Run({Apollo11(), "run", file, "--state-dir", state, "--json"});
  CHECK(run.exit_code != 0);
  const std::string run_id = ParseJson(run.out)["run_id"];
  auto status = ParseJson(Run({Apollo11(), "status", run_id, "--state-dir", state, "--json"}).out);
  INFO(status.dump().substr(0, 4000));
  CHECK(status["tasks"]["a"]["state"] == "SUCCESS");
  CHECK(status["tasks"]["b"]["state"] == "FAILED");
  CHECK(status["tasks"]["b"]["attempts"] == 1);
  const std::string error = status["tasks"]["b"].value("error", "");
  CHECK(error.find("could not fill in the task's fields") != std::string::npos);
  CHECK(error.find("4194304-byte limit of a task") != std::string::npos);
}

TEST_CASE("foreach over a stdout larger than the tail the worker keeps fails, losing no item",
          "[cli][output][foreach][limits]") {
  ScratchDir dir;
  const std::string state = dir.path() + "/s";
  const std::string ledger = dir.path() + "/ran";
  // 100 lines of about 1 KB: 100 KB, past the 64 KiB stdout tail.
  const std::string file = dir.Write("p.yaml", R"(version: "1.0"
name: test.foreachcut
pipeline:
  - id: list
    type: shell
    command: "for i in $(seq 1 100); do printf '%s-%01000d\n' $i 0; done"
  - id: each
    type: shell
    depends_on: list
    foreach: list
    command: "echo x >> )" + ledger + R"("
)");
  CmdResult run = Run({Apollo11(), "run", file, "--state-dir", state, "--json"});
  CHECK(run.exit_code != 0);
  const std::string run_id = ParseJson(run.out)["run_id"];
  auto status = ParseJson(Run({Apollo11(), "status", run_id, "--state-dir", state, "--json"}).out);
  INFO(status.dump().substr(0, 4000));
  CHECK(status["tasks"]["list"]["state"] == "SUCCESS");
  CHECK(status["tasks"]["each"]["state"] == "FAILED");
  CHECK_FALSE(status["tasks"].contains("each[0]"));
  CHECK_FALSE(dir.Exists("ran"));  // no instance ran on a partial list
  const std::string error = status["tasks"]["each"].value("error", "");
  CHECK(error.find("list printed 100") != std::string::npos);
  CHECK(error.find("the coordinator got only 65536") != std::string::npos);
  CHECK(error.find("$APOLLO11_OUTPUT") != std::string::npos);
}

TEST_CASE("apollo11 run reads a pipeline's file secrets from --secrets-dir and masks them",
          "[cli][secrets]") {
  ScratchDir dir;
  const std::string state = dir.path() + "/s";
  const std::string secrets = dir.path() + "/secrets";
  dir.Write("secrets/test/db", "run-secret-3b1f9c\n");
  REQUIRE(::chmod((secrets + "/test/db").c_str(), 0600) == 0);
  dir.Write("secrets/other/key", "other-secret-77aa01\n");
  REQUIRE(::chmod((secrets + "/other/key").c_str(), 0600) == 0);
  const std::string file = dir.Write("p.yaml", R"(version: "1.0"
name: test.runsecrets
pipeline:
  - id: own
    type: shell
    command: "echo \"pw=$PW\"; printf '{\"pw\": \"%s\"}' \"$PW\" > \"$APOLLO11_OUTPUT\""
    secrets: {PW: "file:)" + secrets + R"(/test/db"}
  - id: theirs
    type: shell
    command: "echo \"key=$K\""
    secrets: {K: "file:)" + secrets + R"(/other/key"}
)");
  CmdResult run =
      Run({Apollo11(), "run", file, "--state-dir", state, "--secrets-dir", secrets, "--json"});
  INFO(run.out << run.err);
  auto summary = ParseJson(run.out);
  REQUIRE(summary.is_object());
  CHECK(summary["tasks"]["own"]["state"] == "SUCCESS");
  CHECK(summary["tasks"]["own"]["output"]["pw"] == "***");
  CHECK(summary["tasks"]["theirs"]["state"] == "FAILED");
  CHECK_THAT(summary["tasks"]["theirs"].value("error", ""),
             Catch::Contains("is not a secret of pipeline test.runsecrets"));
  const std::string exec = summary.value("run_id", "") + ".own";
  CmdResult logs = Run({Apollo11(), "logs", exec, "--state-dir", state});
  CHECK(logs.out == "pw=***\n");
  CHECK(run.out.find("run-secret-3b1f9c") == std::string::npos);
}
