// Inputs the libFuzzer targets in fuzz/ found, replayed through the same entry
// points the targets use. Each input is kept in fuzz/corpus/<target>/ as
// regression_*.{yaml,json}, so the fuzzers also start from it.

#include <catch2/catch.hpp>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "dsl/parser.h"
#include "dsl/pipeline_json.h"
#include "dsl_test_util.h"

using namespace apollo11::dsl;
using apollo11::dsl::testing::Dump;

namespace {

std::string ReadCorpusFile(const std::string& target, const std::string& name) {
  const std::string path = std::string(APOLLO11_SOURCE_DIR) + "/fuzz/corpus/" + target + "/" + name;
  std::ifstream in(path, std::ios::binary);
  REQUIRE(in);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// Where fuzz_dsl_parser anchors its inputs, so imports resolve the same way.
const std::string kFuzzPath = std::string(APOLLO11_SOURCE_DIR) + "/examples/design/fuzz.yaml";

apollo11::Status FromJsonText(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  REQUIRE_FALSE(j.is_discarded());
  auto spec = PipelineFromJson(j);
  return spec.ok() ? apollo11::Status::Ok() : spec.status();
}

}  // namespace

TEST_CASE(
    "a pipeline that is not UTF-8 is refused at the bad byte, not accepted and then crashed on",
    "[dsl][fuzz-regression]") {
  // fuzz_dsl_parser: a Latin-1 byte in a command passed every check, then
  // CanonicalJson threw (nlohmann refuses to dump invalid UTF-8) and
  // `apollo11 run` aborted.
  ParseResult r =
      ParsePipelineText(ReadCorpusFile("dsl_parser", "regression_invalid_utf8.yaml"), kFuzzPath);
  INFO(Dump(r));
  REQUIRE_FALSE(r.ok());
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].where.line == 18);
  CHECK(r.diagnostics[0].where.column == 21);
  CHECK(r.diagnostics[0].message.find("invalid UTF-8 (byte 0xc9)") != std::string::npos);
}

TEST_CASE("every string of a valid pipeline can be written to its JSON snapshot",
          "[dsl][fuzz-regression]") {
  ParseResult r = ParsePipelineText(
      "version: \"1.0\"\nname: demo.utf8\npipeline:\n"
      "  - {id: x, type: shell, command: \"echo caf\xc3\xa9 \\u20ac \\xe9\"}\n",
      kFuzzPath);
  INFO(Dump(r));
  REQUIRE(r.ok());
  CHECK(r.pipeline->tasks[0].command == "echo caf\xc3\xa9 \xe2\x82\xac \xc3\xa9");
  CHECK_NOTHROW(CanonicalJson(*r.pipeline));
}

TEST_CASE("numbers out of range in pipeline JSON are refused, not cast", "[dsl][fuzz-regression]") {
  // fuzz_pipeline_json: "concurrency": 1e300 reached nlohmann's
  // static_cast<int>(double), undefined behaviour (UBSan).
  apollo11::Status s =
      FromJsonText(ReadCorpusFile("pipeline_json", "regression_concurrency_1e300.json"));
  CHECK(s.code() == apollo11::StatusCode::kCorrupt);
  CHECK(s.message().find("'concurrency' must be an integer, found a floating-point number") !=
        std::string::npos);

  // The same for every numeric field, and integers that would silently wrap.
  const std::string valid = ReadCorpusFile("pipeline_json", "branches.json");
  REQUIRE(FromJsonText(valid).ok());
  struct Case {
    const char* pointer;
    nlohmann::json value;
    const char* says;
  };
  for (const Case& c : {
           Case{"/concurrency", 4294967297LL, "'concurrency' = 4294967297 is out of range"},
           Case{"/concurrency", true, "'concurrency' must be an integer, found boolean"},
           Case{"/tasks/0/priority", -2147483649LL, "'priority' = -2147483649 is out of range"},
           Case{"/tasks/0/timeout_ms", 1.5, "'timeout_ms' must be an integer"},
           Case{"/tasks/0/timeout_ms", 18446744073709551615ULL, "'timeout_ms' = "},
           Case{"/tasks/0/retry/max_retries", 1e300, "'max_retries' must be an integer"},
           Case{"/tasks/0/retry/delay_ms", "5s", "'delay_ms' must be an integer, found string"},
           Case{"/tasks/0/retry/jitter", "x", "'jitter' must be a number, found string"},
           Case{"/tasks/0/retry/on_exit_codes", nlohmann::json::array({1, 1e10}),
                "'on_exit_codes' must be an integer"},
           Case{"/tasks/0/expect_status", 200, "'expect_status' must be a list, found number"},
           Case{"/tasks/0/where/line", 3e9, "'line' must be an integer"},
       }) {
    nlohmann::json j = nlohmann::json::parse(valid);
    j[nlohmann::json::json_pointer(c.pointer)] = c.value;
    INFO(c.pointer << " = " << c.value.dump());
    apollo11::Status bad = FromJsonText(j.dump());
    CHECK(bad.code() == apollo11::StatusCode::kCorrupt);
    CHECK(bad.message().find(c.says) != std::string::npos);
  }
}

TEST_CASE("an aliased dependency list repeated across tasks does not multiply",
          "[dsl][fuzz-regression]") {
  // fuzz_dsl_parser input class behind its out-of-memory reports: 900 copies
  // of one dependency in a list that 70 tasks alias became 63,000 dependency
  // entries, 63,000 warnings and their JSON snapshot (28 s and 560 MB under
  // ASan from a 4.8 KB input). A repeated entry now counts once.
  ParseResult r = ParsePipelineText(
      ReadCorpusFile("dsl_parser", "regression_aliased_dependency_list.yaml"), kFuzzPath);
  INFO(Dump(r));
  REQUIRE(r.ok());
  size_t entries = 0;
  for (const TaskSpec& t : r.pipeline->tasks) entries += t.depends_on.size();
  CHECK(entries == 70);
  REQUIRE(r.diagnostics.size() == 1);
  CHECK(r.diagnostics[0].message ==
        "dependency 'a' (on success) is listed 900 times; it counts once");
}

TEST_CASE("nested aliases, an alias loop and a cut-off quote are refused before expanding",
          "[dsl][fuzz-regression]") {
  ParseResult nested = ParsePipelineText(
      ReadCorpusFile("dsl_parser", "regression_nested_aliases_cut_quote.yaml"), kFuzzPath);
  INFO(Dump(nested));
  REQUIRE(nested.diagnostics.size() == 1);
  CHECK(nested.diagnostics[0].message.find("is never closed") != std::string::npos);
  // Closing the quote (on a line indented past its key) leaves 4^24 aliased
  // scalars: refused by the expanded size.
  ParseResult closed = ParsePipelineText(
      ReadCorpusFile("dsl_parser", "regression_nested_aliases_cut_quote.yaml") + "   \"}\n",
      kFuzzPath);
  INFO(Dump(closed));
  REQUIRE(closed.diagnostics.size() == 1);
  CHECK(closed.diagnostics[0].message.find("every alias written out, passes") != std::string::npos);
  ParseResult loop =
      ParsePipelineText(ReadCorpusFile("dsl_parser", "regression_alias_loop.yaml"), kFuzzPath);
  INFO(Dump(loop));
  REQUIRE(loop.diagnostics.size() == 1);
  CHECK(loop.diagnostics[0].message.find("refers to a node that contains it") != std::string::npos);
}
