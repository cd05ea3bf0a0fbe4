// The foreach and max_parallel keys: both forms of foreach, their snapshot
// round trip, and the errors with their positions.

#include <catch2/catch.hpp>
#include <string>

#include "dsl/parser.h"
#include "dsl/pipeline_json.h"

using namespace apollo11::dsl;  // NOLINT: test file

namespace {

const std::string kHeader = "version: \"1.0\"\nname: test.pipeline\npipeline:\n";

ParseResult Parse(const std::string& yaml) {
  return ParsePipelineText(yaml, "/nonexistent/p.yaml", {});
}

const Diagnostic* Find(const ParseResult& r, const std::string& text) {
  for (const Diagnostic& d : r.diagnostics) {
    if (d.message.find(text) != std::string::npos) return &d;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("foreach takes a task id or a task with an items path, and max_parallel",
          "[dsl][foreach]") {
  ParseResult r = Parse(kHeader +
                        "  - {id: a, type: shell, command: ls}\n"
                        "  - {id: b, type: shell, command: 'echo ${item}', depends_on: [a], "
                        "foreach: a, max_parallel: 4}\n"
                        "  - {id: c, type: shell, command: 'echo ${item}', depends_on: [a], "
                        "foreach: {task: a, items: output.data.files}}\n");
  INFO((r.diagnostics.empty() ? "" : r.diagnostics[0].message));
  REQUIRE(r.ok());
  const PipelineSpec& spec = *r.pipeline;
  CHECK(spec.tasks[1].foreach == "a");
  CHECK(spec.tasks[1].foreach_items.empty());
  CHECK(spec.tasks[1].max_parallel == 4);
  CHECK(spec.tasks[2].foreach == "a");
  CHECK(spec.tasks[2].foreach_items == "output.data.files");
  auto back = PipelineFromJsonText(ToJson(spec).dump());
  REQUIRE(back.ok());
  CHECK(back->tasks[2].foreach_items == "output.data.files");
  CHECK(back->tasks[1].max_parallel == 4);
}

TEST_CASE("foreach items and max_parallel errors are positioned", "[dsl][foreach]") {
  ParseResult bad = Parse(kHeader +
                          "  - {id: a, type: shell, command: ls}\n"
                          "  - {id: b, type: shell, command: ls, depends_on: [a], foreach: "
                          "{task: a, items: data.files}}\n");
  const Diagnostic* d = Find(bad, "foreach items 'data.files' must be 'output' or 'output.PATH'");
  REQUIRE(d != nullptr);
  CHECK(d->where.line == 5);
  CHECK_FALSE(bad.ok());
  ParseResult no_task = Parse(kHeader +
                              "  - {id: a, type: shell, command: ls}\n"
                              "  - {id: b, type: shell, command: ls, foreach: {items: output}}\n");
  CHECK(Find(no_task, "foreach needs 'task'") != nullptr);
  ParseResult lone = Parse(kHeader + "  - {id: a, type: shell, command: ls, max_parallel: 2}\n");
  CHECK(Find(lone, "max_parallel only applies to a task with foreach") != nullptr);
  ParseResult zero = Parse(kHeader +
                           "  - {id: a, type: shell, command: ls}\n"
                           "  - {id: b, type: shell, command: ls, depends_on: [a], foreach: a, "
                           "max_parallel: 0}\n");
  CHECK_FALSE(zero.ok());
}
