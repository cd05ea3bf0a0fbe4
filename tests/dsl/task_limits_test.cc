// The size limits a pipeline is validated against, so that every task's
// DISPATCH fits the worker link (common/wire_limits.h).

#include "dsl/task_limits.h"

#include <catch2/catch.hpp>
#include <string>

#include "common/wire_limits.h"
#include "dsl/checker.h"

using namespace apollo11;       // NOLINT: test file
using namespace apollo11::dsl;  // NOLINT: test file

namespace {

PipelineSpec OneTask() {
  PipelineSpec spec;
  spec.name = "test.limits";
  spec.source_file = "/p.yaml";
  TaskSpec t;
  t.id = "t";
  t.type = TaskType::kShell;
  t.command = "true";
  spec.tasks.push_back(t);
  return spec;
}

std::string Errors(const PipelineSpec& spec) {
  std::vector<Diagnostic> out;
  CheckTaskLimits(spec, &out);
  std::string all;
  for (const Diagnostic& d : out) all += FormatDiagnostic(d) + "\n";
  return all;
}

}  // namespace

TEST_CASE("a task within every limit passes", "[dsl][limits]") {
  PipelineSpec spec = OneTask();
  for (int i = 0; i < 10'000; ++i)
    spec.tasks[0].depends_on.push_back(
        {"u" + std::to_string(i), DependencyCondition::kSuccess, {}});
  spec.params["date"] = "2026-12-01";
  CHECK(Errors(spec).empty());
}

TEST_CASE("a task over the dependency limit is refused, naming the limit", "[dsl][limits]") {
  PipelineSpec spec = OneTask();
  for (size_t i = 0; i <= kMaxTaskDependencies; ++i) {
    spec.tasks[0].depends_on.push_back(
        {"u" + std::to_string(i), DependencyCondition::kSuccess, {}});
  }
  CHECK(Errors(spec).find("task 't' has 50001 dependencies, above the limit of 50000") !=
        std::string::npos);
  // The whole checker reports it too.
  std::vector<Diagnostic> out;
  CheckPipeline(spec, CheckOptions{}, &out);
  bool named = false;
  for (const Diagnostic& d : out)
    named |= d.message.find("above the limit of 50000") != std::string::npos;
  CHECK(named);
}

TEST_CASE("one field over the value limit and fields over the task limit are refused",
          "[dsl][limits]") {
  PipelineSpec spec = OneTask();
  spec.tasks[0].command = std::string(kWireMaxStringBytes + 1, 'c');
  CHECK(Errors(spec).find("has a command value of 1048577 bytes, above the limit of 1048576") !=
        std::string::npos);
  spec = OneTask();
  for (int i = 0; i < 5; ++i)
    spec.tasks[0].env.mut()["V" + std::to_string(i)] = std::string(1 << 20, 'v');
  CHECK(Errors(spec).find("above the limit of 4194304 bytes") != std::string::npos);
  spec = OneTask();
  for (size_t i = 0; i <= kMaxTaskMapEntries; ++i)
    spec.tasks[0].env.mut()["V" + std::to_string(i)] = "v";
  CHECK(Errors(spec).find("has 1001 env entries, above the limit of 1000") != std::string::npos);
}

TEST_CASE("params over their limits are refused at validation and at submission", "[dsl][limits]") {
  PipelineSpec spec = OneTask();
  spec.params["big"] = std::string(200'000, 'p');  // large, but within the limits: a file
  CHECK(Errors(spec).empty());
  spec.params["huge"] = std::string(kWireMaxStringBytes + 1, 'p');
  CHECK(Errors(spec).find("param 'huge' is 1048577 bytes, above the limit of 1048576") !=
        std::string::npos);
  std::map<std::string, std::string> params;
  for (int i = 0; i < 3; ++i) params["p" + std::to_string(i)] = std::string(1 << 20, 'p');
  Status s = CheckParamLimits(params);
  CHECK_FALSE(s.ok());
  CHECK(s.message().find("above the limit of 2097152 bytes") != std::string::npos);
}
