// A task's JSON result through $APOLLO11_OUTPUT: read after a clean exit,
// compacted, capped, and a clear non-retryable failure when it is too big or
// not JSON.

#include <catch2/catch.hpp>
#include <string>

#include "common/clock.h"
#include "executor/executor.h"
#include "executor/task_output_file.h"
#include "tests/executor/executor_test_util.h"

namespace {

using apollo11::SystemClock;
using apollo11::dsl::TaskType;
using apollo11::executor::ExecOutcome;
using apollo11::executor::ExecOutcomeKind;
using apollo11::executor::ExecRequest;
using apollo11::executor::Executor;
using apollo11::executor::ExecutorOptions;
using apollo11::executor::testing::RunToCompletion;
using apollo11::executor::testing::TempDir;

ExecOutcome RunShell(const std::string& command, size_t cap = 64 << 10) {
  TempDir root;
  SystemClock clock;
  ExecutorOptions options;
  options.inputs_dir = root.path();
  options.max_task_output_bytes = cap;
  Executor ex(options, clock);
  ExecRequest r;
  r.exec_id = "r1.t";
  r.attempt = 1;
  r.type = TaskType::kShell;
  r.command = command;
  REQUIRE(ex.Launch(r).ok());
  auto out = RunToCompletion(ex, clock, std::chrono::milliseconds(10000));
  REQUIRE(out.size() == 1);
  return out[0];
}

}  // namespace

TEST_CASE("a task's JSON in APOLLO11_OUTPUT becomes its compact task output",
          "[executor][output]") {
  ExecOutcome o = RunShell(R"(printf '{ "x": 42,\n "rows": [1, 2] }\n' > "$APOLLO11_OUTPUT")");
  INFO(o.error);
  CHECK(o.kind == ExecOutcomeKind::kSuccess);
  CHECK(o.task_output == R"({"rows":[1,2],"x":42})");
}

TEST_CASE("a task that writes no output file has no task output", "[executor][output]") {
  ExecOutcome o = RunShell("echo hello");
  CHECK(o.kind == ExecOutcomeKind::kSuccess);
  CHECK(o.task_output.empty());
  CHECK(o.output == "hello\n");
}

TEST_CASE("an output that is not JSON fails the task and is not retried", "[executor][output]") {
  ExecOutcome o = RunShell(R"(echo 'x = 1' > "$APOLLO11_OUTPUT")");
  CHECK(o.kind == ExecOutcomeKind::kFailed);
  CHECK_FALSE(o.retryable);
  CHECK(o.error.find("$APOLLO11_OUTPUT is not valid JSON") != std::string::npos);
  CHECK(o.task_output.empty());
}

TEST_CASE("an output over the cap fails the task naming the limit", "[executor][output]") {
  ExecOutcome o = RunShell(R"(printf '"%0200d"' 0 > "$APOLLO11_OUTPUT")", 100);
  CHECK(o.kind == ExecOutcomeKind::kFailed);
  CHECK_FALSE(o.retryable);
  INFO(o.error);
  CHECK(o.error.find("over the 100-byte limit") != std::string::npos);
}

TEST_CASE("an output nested deeper than the limit fails the task, and one at the limit is kept",
          "[executor][output]") {
  // 32,000 levels fit in 64 KiB: printing them back would recurse as deep.
  ExecOutcome deep =
      RunShell(R"(python3 -c 'print("[" * 32000 + "]" * 32000)' > "$APOLLO11_OUTPUT")");
  CHECK(deep.kind == ExecOutcomeKind::kFailed);
  CHECK_FALSE(deep.retryable);
  INFO(deep.error);
  CHECK(deep.error.find("$APOLLO11_OUTPUT nests arrays and objects over the 128-level limit") !=
        std::string::npos);
  CHECK(deep.task_output.empty());
  ExecOutcome at_limit =
      RunShell(R"(python3 -c 'print("[" * 128 + "]" * 128)' > "$APOLLO11_OUTPUT")");
  CHECK(at_limit.kind == ExecOutcomeKind::kSuccess);
  CHECK(at_limit.task_output == std::string(128, '[') + std::string(128, ']'));
}

TEST_CASE("a failed task's output file is not read", "[executor][output]") {
  ExecOutcome o = RunShell(R"(echo '{"a":1}' > "$APOLLO11_OUTPUT"; exit 4)");
  CHECK(o.kind == ExecOutcomeKind::kFailed);
  CHECK(o.exit_code == 4);
  CHECK(o.task_output.empty());
}
