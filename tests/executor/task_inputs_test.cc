// How parameters and upstream outputs reach a process task: files in a
// per-execution $APOLLO11_INPUTS_DIR, small values inline, and a clear
// failure instead of E2BIG.

#include "executor/task_inputs.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "common/clock.h"
#include "executor/executor.h"
#include "tests/executor/executor_test_util.h"

namespace {

using apollo11::Status;
using apollo11::SystemClock;
using apollo11::dsl::TaskType;
using apollo11::executor::ExecOutcomeKind;
using apollo11::executor::ExecRequest;
using apollo11::executor::Executor;
using apollo11::executor::ExecutorOptions;
using apollo11::executor::TaskInput;
using apollo11::executor::TaskInputs;
using apollo11::executor::testing::ReadFile;
using apollo11::executor::testing::RunToCompletion;
using apollo11::executor::testing::TempDir;
using apollo11::executor::testing::WriteFile;
using Env = std::map<std::string, std::string>;

TaskInput Output(const std::string& task, std::string value) {
  return {TaskInput::Kind::kOutput, task, std::move(value)};
}
TaskInput Param(const std::string& name, std::string value) {
  return {TaskInput::Kind::kParam, name, std::move(value)};
}

size_t Entries(const std::string& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

}  // namespace

TEST_CASE("every input is a file and small ones are also inline", "[executor][inputs]") {
  TempDir root;
  std::string dir;
  {
    TaskInputs inputs;
    Env env;
    const std::string big(TaskInputs::kInlineValueBytes + 1, 'b');
    REQUIRE(inputs
                .Prepare(root.path(), "r1.join", 2,
                         {Param("date", "2026-12-01"), Output("load_a", "small"),
                          Output("load_b", big), Output("empty", "")},
                         &env)
                .ok());
    dir = inputs.dir();
    CHECK(env.at("APOLLO11_INPUTS_DIR") == dir);
    CHECK(ReadFile(dir + "/params/date") == "2026-12-01");
    CHECK(ReadFile(dir + "/outputs/load_a") == "small");
    CHECK(ReadFile(dir + "/outputs/load_b") == big);
    CHECK(std::filesystem::exists(dir + "/outputs/empty"));
    CHECK(env.at("APOLLO11_PARAM_DATE") == "2026-12-01");
    CHECK(env.at("APOLLO11_OUTPUT_LOAD_A") == "small");
    CHECK(env.at("APOLLO11_OUTPUT_EMPTY").empty());
    CHECK(env.count("APOLLO11_OUTPUT_LOAD_B") == 0);  // over the inline cap: its file only
  }
  CHECK_FALSE(std::filesystem::exists(dir));  // removed with the execution
}

TEST_CASE("the directory goes whatever the task added to it or took from it",
          "[executor][inputs]") {
  TempDir root;
  TempDir elsewhere;
  WriteFile(elsewhere.path() + "/date", "not the task's");
  for (int variant = 0; variant < 4; ++variant) {
    std::string dir;
    {
      TaskInputs inputs;
      Env env;
      REQUIRE(inputs
                  .Prepare(root.path(), "r1.t" + std::to_string(variant), 1,
                           {Param("date", "2026-12-01"), Output("up", "x")}, &env)
                  .ok());
      dir = inputs.dir();
      if (variant == 0) {  // an output file and a folder of its own
        WriteFile(dir + "/output.json", "{}");
        std::filesystem::create_directories(dir + "/scratch/deep");
        WriteFile(dir + "/scratch/deep/f", "y");
      } else if (variant == 1) {  // a file beside the inputs, one input removed
        WriteFile(dir + "/outputs/extra", "z");
        std::filesystem::remove(dir + "/params/date");
      } else if (variant == 2) {  // the folders themselves removed
        std::filesystem::remove_all(dir + "/params");
        std::filesystem::remove_all(dir + "/outputs");
      } else {  // a folder swapped for a link to a directory holding "date"
        std::filesystem::remove_all(dir + "/params");
        std::filesystem::create_directory_symlink(elsewhere.path(), dir + "/params");
      }
    }
    INFO("variant " << variant);
    CHECK_FALSE(std::filesystem::exists(dir));
    CHECK(ReadFile(elsewhere.path() + "/date") == "not the task's");  // never followed
  }
  CHECK(Entries(root.path()) == 0);
}

TEST_CASE("inline inputs stop at the total budget and the rest are files only",
          "[executor][inputs]") {
  TempDir root;
  TaskInputs inputs;
  Env env;
  std::vector<TaskInput> many;
  for (int i = 0; i < 100; ++i) {
    many.push_back(Output("t" + std::to_string(i), std::string(4000, 'x')));
  }
  REQUIRE(inputs.Prepare(root.path(), "r1.join", 1, many, &env).ok());
  size_t inline_bytes = 0;
  for (const auto& [k, v] : env) inline_bytes += k.size() + v.size();
  CHECK(inline_bytes <= TaskInputs::kInlineTotalBytes);
  CHECK(env.count("APOLLO11_OUTPUT_T0") == 1);
  CHECK(env.count("APOLLO11_OUTPUT_T99") == 0);
  CHECK(Entries(inputs.dir() + "/outputs") == 100);
}

TEST_CASE("an input name that cannot be a file name is refused and leaves nothing",
          "[executor][inputs]") {
  TempDir root;
  for (const char* bad : {"../escape", "", "a/b", ".."}) {
    TaskInputs inputs;
    Env env;
    Status s = inputs.Prepare(root.path(), "r1.t", 1, {Output(bad, "v")}, &env);
    CHECK_FALSE(s.ok());
    CHECK(s.message().find("cannot be a file name") != std::string::npos);
    CHECK(inputs.dir().empty());
  }
  CHECK(Entries(root.path()) == 0);
}

TEST_CASE("an environment over the exec limits is refused with the sizes, not E2BIG",
          "[executor][inputs]") {
  CHECK(TaskInputs::CheckExecSize({"/bin/sh", "-c", "true"}, {{"A", "b"}}).ok());
  Status one = TaskInputs::CheckExecSize({"/bin/sh"}, {{"HUGE", std::string(200'000, 'v')}});
  CHECK_FALSE(one.ok());
  CHECK(one.message().find("HUGE is 200005 bytes") != std::string::npos);
  Env many;
  for (int i = 0; i < 100; ++i) many["V" + std::to_string(i)] = std::string(100'000, 'v');
  Status total = TaskInputs::CheckExecSize({"/bin/sh"}, many);
  CHECK_FALSE(total.ok());
  CHECK(total.message().find("ARG_MAX") != std::string::npos);
}

TEST_CASE("a task reads a large input from its file and the directory goes when it ends",
          "[executor][inputs]") {
  TempDir root;
  SystemClock clock;
  ExecutorOptions options;
  options.inputs_dir = root.path() + "/inputs";
  Executor ex(options, clock);
  ExecRequest r;
  r.exec_id = "r1.join";
  r.attempt = 1;
  r.type = TaskType::kShell;
  r.command = R"(wc -c < "$APOLLO11_INPUTS_DIR/outputs/up"; echo "[${APOLLO11_OUTPUT_UP-unset}]")";
  r.inputs = {Output("up", std::string(300'000, 'o'))};
  REQUIRE(ex.Launch(r).ok());
  auto out = RunToCompletion(ex, clock, std::chrono::milliseconds(10000));
  REQUIRE(out.size() == 1);
  INFO(out[0].error);
  CHECK(out[0].kind == ExecOutcomeKind::kSuccess);
  CHECK(out[0].output == "300000\n[unset]\n");
  CHECK(Entries(root.path() + "/inputs") == 0);
}

TEST_CASE("a task whose environment is too large fails with a clear reason", "[executor][inputs]") {
  TempDir root;
  SystemClock clock;
  Executor ex(ExecutorOptions{}, clock);
  ExecRequest r;
  r.exec_id = "r1.big";
  r.attempt = 1;
  r.type = TaskType::kShell;
  r.command = "true";
  r.env["APOLLO11_HUGE"] = std::string(200'000, 'h');
  REQUIRE(ex.Launch(r).ok());
  auto out = RunToCompletion(ex, clock, std::chrono::milliseconds(10000));
  REQUIRE(out.size() == 1);
  CHECK(out[0].kind == ExecOutcomeKind::kFailed);
  INFO(out[0].error);
  CHECK(out[0].error.find("could not start: APOLLO11_HUGE is 200014 bytes") != std::string::npos);
}

TEST_CASE("a python task runs its shipped code from its inputs directory, which then goes",
          "[executor][inputs][code]") {
  TempDir root;
  SystemClock clock;
  ExecutorOptions options;
  options.inputs_dir = root.path() + "/inputs";
  Executor ex(options, clock);
  ExecRequest r;
  r.exec_id = "r1.py";
  r.attempt = 1;
  r.type = TaskType::kPython;
  r.script = "job.py";  // a file name: the code is written there, not looked up
  r.code =
      "import os, sys\nprint(os.path.relpath(__file__, os.environ['APOLLO11_INPUTS_DIR']), "
      "sys.argv[1:])\n";
  r.args = {"a"};
  REQUIRE(ex.Launch(r).ok());
  auto out = RunToCompletion(ex, clock, std::chrono::milliseconds(10000));
  REQUIRE(out.size() == 1);
  INFO(out[0].error);
  CHECK(out[0].kind == ExecOutcomeKind::kSuccess);
  CHECK(out[0].output == "code/job.py ['a']\n");
  CHECK(Entries(root.path() + "/inputs") == 0);

  // A name that cannot be a file name fails the attempt, naming it.
  r.attempt = 2;
  r.script = "..";
  REQUIRE(ex.Launch(r).ok());
  out = RunToCompletion(ex, clock, std::chrono::milliseconds(10000));
  REQUIRE(out.size() == 1);
  CHECK(out[0].kind == ExecOutcomeKind::kFailed);
  CHECK(out[0].error.find("could not write the task's code: .. cannot be a file name") !=
        std::string::npos);
  CHECK(Entries(root.path() + "/inputs") == 0);
}
