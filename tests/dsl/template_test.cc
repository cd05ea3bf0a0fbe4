// Templating: `${...}` placeholders in command, args, url, body, headers and
// env, expanded with escaping that fits the field, and checked at validation
// with the task's FILE:LINE:COL.

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>

#include "dsl/json_path.h"
#include "dsl/parser.h"
#include "dsl/template_expander.h"
#include "tests/dsl/dsl_test_util.h"

namespace {

using apollo11::dsl::ParsePipelineText;
using apollo11::dsl::ParseResult;
using apollo11::dsl::TemplateContext;
using apollo11::dsl::TemplateExpander;
using apollo11::dsl::TemplateValues;
using apollo11::dsl::testing::Dump;
using apollo11::dsl::testing::Find;

const std::map<std::string, std::string> kParams = {{"date", "2026-12-01"},
                                                    {"evil", "x'; rm -rf / #"}};
const std::map<std::string, std::string> kOutputs = {
    {"a", R"({"x":"hello world","n":3,"rows":[{"id":7},{"id":8}],"q":"it's \"quoted\""})"}};

TemplateValues Values() {
  TemplateValues v;
  v.run_id = "r-1";
  v.task_id = "b";
  v.idempotency_key = "r-1.b";
  v.params = &kParams;
  v.output = [](const std::string& id) -> const std::string* {
    auto it = kOutputs.find(id);
    return it == kOutputs.end() ? nullptr : &it->second;
  };
  return v;
}

std::string Expand(const std::string& text, TemplateContext ctx) {
  auto out = TemplateExpander::Expand(text, ctx, Values());
  INFO(text);
  REQUIRE(out.ok());
  return *out;
}

std::string ExpandError(const std::string& text, TemplateContext ctx) {
  auto out = TemplateExpander::Expand(text, ctx, Values());
  REQUIRE_FALSE(out.ok());
  return out.status().message();
}

const std::string kHeader =
    "version: \"1.0\"\nname: test.pipeline\nparams: {date: today}\npipeline:\n";

ParseResult Parse(const std::string& tasks) {
  return ParsePipelineText(kHeader + tasks, "/nonexistent/p.yaml", {});
}

}  // namespace

TEST_CASE("placeholders expand to run, task, key, params and output paths", "[dsl][template]") {
  const auto raw = TemplateContext::kRaw;
  CHECK(Expand("${run_id}/${task_id}/${task.idempotency_key}", raw) == "r-1/b/r-1.b");
  CHECK(Expand("day=${params.date}", raw) == "day=2026-12-01");
  CHECK(Expand("${tasks.a.output.x}", raw) == "hello world");
  CHECK(Expand("${tasks.a.output.n}", raw) == "3");
  CHECK(Expand("${tasks.a.output.rows.1.id}", raw) == "8");
  CHECK(Expand("${tasks.a.output.rows}", raw) == R"([{"id":7},{"id":8}])");
  // The whole output as the journal holds it: compact, keys sorted.
  CHECK(Expand("${tasks.a.output}", raw) ==
        R"({"n":3,"q":"it's \"quoted\"","rows":[{"id":7},{"id":8}],"x":"hello world"})");
}

TEST_CASE("a shell variable in braces is not a placeholder and stays as written",
          "[dsl][template]") {
  CHECK(Expand("echo ${HOME} ${APOLLO11_RUN_ID:-x}", TemplateContext::kShell) ==
        "echo ${HOME} ${APOLLO11_RUN_ID:-x}");
  CHECK_FALSE(TemplateExpander::HasPlaceholder("echo ${HOME} $run_id"));
  CHECK(TemplateExpander::HasPlaceholder("echo ${params.x}"));
}

TEST_CASE("shell injection through a value stays inert in a command", "[dsl][template]") {
  const std::string cmd = Expand("echo ${params.evil}", TemplateContext::kShell);
  CHECK(cmd == R"(echo 'x'\''; rm -rf / #')");
  CHECK(Expand("echo ${tasks.a.output.q}", TemplateContext::kShell) ==
        R"(echo 'it'\''s "quoted"')");
  // Run it: the shell prints the value and runs nothing else.
  const std::string probe = "/tmp/apollo11-template-injection-probe";
  std::remove(probe.c_str());
  std::map<std::string, std::string> params = {
      {"p", "$(touch " + probe + "); `touch " + probe + "`; touch " + probe}};
  TemplateValues v = Values();
  v.params = &params;
  auto out =
      TemplateExpander::Expand("printf %s ${params.p} >/dev/null", TemplateContext::kShell, v);
  REQUIRE(out.ok());
  CHECK(std::system(out->c_str()) == 0);
  CHECK_FALSE(std::filesystem::exists(probe));
}

TEST_CASE("a url value is percent-encoded", "[dsl][template]") {
  CHECK(Expand("https://h/p/${tasks.a.output.x}?d=${params.evil}", TemplateContext::kUrl) ==
        "https://h/p/hello%20world?d=x%27%3B%20rm%20-rf%20%2F%20%23");
}

TEST_CASE("a JSON body gets escaped strings inside quotes and JSON values outside",
          "[dsl][template]") {
  const std::string body =
      R"({"q": "${tasks.a.output.q}", "rows": ${tasks.a.output.rows}, "d": ${params.date}})";
  CHECK(TemplateExpander::BodyContext(body) == TemplateContext::kJsonBody);
  CHECK(Expand(body, TemplateContext::kJsonBody) ==
        R"({"q": "it's \"quoted\"", "rows": [{"id":7},{"id":8}], "d": "2026-12-01"})");
  CHECK(TemplateExpander::BodyContext("a=${params.date}") == TemplateContext::kRaw);
}

TEST_CASE("a header value with a line break is refused", "[dsl][template]") {
  std::map<std::string, std::string> params = {{"h", "v\r\nX-Evil: 1"}};
  TemplateValues v = Values();
  v.params = &params;
  auto out = TemplateExpander::Expand("${params.h}", TemplateContext::kHeader, v);
  REQUIRE_FALSE(out.ok());
  CHECK(out.status().message().find("line break") != std::string::npos);
}

TEST_CASE("a missing output or path is a clear error at expansion", "[dsl][template]") {
  CHECK(ExpandError("${tasks.zz.output}", TemplateContext::kRaw).find("gave no output") !=
        std::string::npos);
  CHECK(ExpandError("${tasks.a.output.nope}", TemplateContext::kRaw).find("output has no 'nope'") !=
        std::string::npos);
  CHECK(ExpandError("${item}", TemplateContext::kRaw).find("foreach") != std::string::npos);
  CHECK(ExpandError("${tasks.a}", TemplateContext::kRaw).find("${tasks.ID.output}") !=
        std::string::npos);
  CHECK(ExpandError("${params.date", TemplateContext::kRaw).find("unterminated") !=
        std::string::npos);
}

TEST_CASE("templates naming unknown params or tasks fail validation at the task",
          "[dsl][template]") {
  ParseResult r = Parse(
      "  - {id: a, type: shell, command: \"true\"}\n"
      "  - {id: side, type: shell, command: \"true\"}\n"
      "  - id: b\n"
      "    type: http\n"
      "    depends_on: a\n"
      "    url: \"http://h/${tasks.a.output.x}/${tasks.side.output}\"\n"
      "    headers: {X-Day: \"${params.nope}\"}\n"
      "    body: \"${item}\"\n"
      "  - {id: c, type: shell, command: \"true\", env: {V: \"${tasks.ghost.output}\"}}\n");
  INFO(Dump(r));
  CHECK_FALSE(r.ok());
  for (const char* text : {"'url': ${tasks.side.output}: task 'side' is not an upstream of 'b'",
                           "'headers': ${params.nope}: no such param 'nope'",
                           "'env': ${tasks.ghost.output}: unknown task 'ghost'",
                           "'body': ${item}: ${item} is only set in a task with foreach"}) {
    const auto* d = Find(r, text);
    INFO(text);
    REQUIRE(d != nullptr);
    CHECK(d->where.line == (std::string(text).find("'env'") == 0 ? 13 : 7));
    CHECK(d->where.column == 5);
  }
  CHECK(Find(r, "tasks.a.output.x") == nullptr);  // a is an upstream: fine
}

TEST_CASE("an ancestor further up may be referenced", "[dsl][template]") {
  ParseResult r = Parse(
      "  - {id: a, type: shell, command: \"true\"}\n"
      "  - {id: m, type: noop, depends_on: a}\n"
      "  - {id: b, type: shell, depends_on: m, command: \"echo ${tasks.a.output.x} "
      "${run_id} ${params.date} ${HOME}\"}\n");
  INFO(Dump(r));
  CHECK(r.ok());
}

TEST_CASE("odd placeholders are refused or left alone, never misread", "[dsl][template]") {
  for (const char* bad : {"${tasks.a.output.}", "${tasks.a.output..x}", "${tasks..output}",
                          "${tasks.a.outputs}", "${params.}", "${task.key}", "${tasks.a.output."}) {
    std::vector<apollo11::dsl::TemplateRef> refs;
    INFO(bad);
    CHECK_FALSE(TemplateExpander::Scan(bad, &refs).ok());
  }
  for (const char* alone : {"${items}", "${run_idx}", "${run_id:-x}", "$${HOME}", "${", "}"}) {
    std::vector<apollo11::dsl::TemplateRef> refs;
    INFO(alone);
    CHECK(TemplateExpander::Scan(alone, &refs).ok());
    CHECK(refs.empty());
  }
}

namespace apollo11::dsl {
namespace {

TEST_CASE("an output path names keys and array indexes, and a bad one is nullptr, never a throw",
          "[dsl][template]") {
  const nlohmann::json doc = nlohmann::json::parse(R"({"rows":[{"id":"a"},{"id":"b"}],"0":7})");
  REQUIRE(JsonAtPath(doc, "") == &doc);
  REQUIRE(JsonAtPath(doc, "rows.1.id") != nullptr);
  CHECK(*JsonAtPath(doc, "rows.1.id") == "b");
  CHECK(*JsonAtPath(doc, "0") == 7);  // an object's key, even a number
  CHECK(JsonAtPath(doc, "rows.2") == nullptr);
  CHECK(JsonAtPath(doc, "rows.99999999999999999999") == nullptr);
  CHECK(JsonAtPath(doc, "rows.-1") == nullptr);
  CHECK(JsonAtPath(doc, "rows.0.id.x") == nullptr);
  CHECK(JsonAtPath(doc, "missing") == nullptr);
}

}  // namespace
}  // namespace apollo11::dsl

TEST_CASE("a field that placeholders would grow past its limit is refused before it is built",
          "[dsl][template][limits]") {
  using apollo11::dsl::TemplateBudget;
  TemplateBudget budget(/*field_bytes=*/200, /*task_bytes=*/250, /*parse_bytes=*/1000);
  // The whole output is 74 bytes of compact JSON: two fit a field, three do not.
  auto two = TemplateExpander::Expand("${tasks.a.output} ${tasks.a.output}", TemplateContext::kRaw,
                                      Values(), &budget);
  REQUIRE(two.ok());
  auto three = TemplateExpander::Expand("${tasks.a.output} ${tasks.a.output} ${tasks.a.output}",
                                        TemplateContext::kRaw, Values(), &budget);
  REQUIRE_FALSE(three.ok());
  CHECK(three.status().message().find("over the 200-byte limit of an expanded field") !=
        std::string::npos);
  // The fields of a task share its budget: 149 bytes used, 149 more pass 250.
  auto again = TemplateExpander::Expand("${tasks.a.output} ${tasks.a.output}",
                                        TemplateContext::kRaw, Values(), &budget);
  REQUIRE_FALSE(again.ok());
  CHECK(again.status().message().find("250-byte limit of a task") != std::string::npos);
  // The default budget is the wire's: a 1 MiB field.
  CHECK(TemplateBudget().field_bytes() == apollo11::kWireMaxStringBytes);
}

TEST_CASE("an upstream output is parsed once per task, and parsing is bounded",
          "[dsl][template][limits]") {
  using apollo11::dsl::TemplateBudget;
  const std::string& a = kOutputs.at("a");
  // Room for exactly two parses: the cache must spare the other 98.
  TemplateBudget budget(1 << 20, 1 << 20, 2 * a.size());
  std::string text;
  for (int i = 0; i < 100; ++i) text += "${tasks.a.output.n}";
  auto out = TemplateExpander::Expand(text, TemplateContext::kRaw, Values(), &budget);
  REQUIRE(out.ok());
  CHECK(*out == std::string(100, '3'));
  TemplateBudget tight(1 << 20, 1 << 20, a.size() - 1);
  auto refused =
      TemplateExpander::Expand("${tasks.a.output.n}", TemplateContext::kRaw, Values(), &tight);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find(
            "bytes of upstream output a task's placeholders may parse") != std::string::npos);
}
