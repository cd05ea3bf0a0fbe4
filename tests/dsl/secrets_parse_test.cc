// `secrets:` in the DSL: references checked with their position, kept as
// references in the model and the snapshot; env values hidden by
// HideEnvValues.

#include <catch2/catch.hpp>

#include "dsl/parser.h"
#include "dsl/pipeline_json.h"
#include "dsl_test_util.h"

using namespace apollo11::dsl;  // NOLINT: test file
using apollo11::dsl::testing::Dump;
using apollo11::dsl::testing::Find;

namespace {

const std::string kHeader = "version: \"1.0\"\nname: test.secrets\npipeline:\n";

ParseResult Parse(const std::string& yaml) {
  return ParsePipelineText(yaml, "/nonexistent/p.yaml", {});
}

}  // namespace

TEST_CASE("secrets are references, read into the model and the snapshot as written",
          "[dsl][secrets]") {
  ParseResult r = Parse(kHeader +
                        "  - id: a\n    type: shell\n    command: \"true\"\n"
                        "    secrets:\n      DB_PASSWORD: file:/etc/apollo11/secrets/db1\n"
                        "      TOKEN: env:UPSTREAM_TOKEN\n      KEY: credential:key1\n");
  INFO(Dump(r));
  REQUIRE(r.ok());
  const TaskSpec& t = r.pipeline->tasks[0];
  CHECK(t.secrets ==
        std::map<std::string, std::string>{{"DB_PASSWORD", "file:/etc/apollo11/secrets/db1"},
                                           {"TOKEN", "env:UPSTREAM_TOKEN"},
                                           {"KEY", "credential:key1"}});
  auto back = PipelineFromJsonText(CanonicalJson(*r.pipeline));
  REQUIRE(back.ok());
  CHECK(back->tasks[0].secrets == t.secrets);
}

TEST_CASE("a bad secret reference is an error at its position", "[dsl][secrets]") {
  ParseResult r = Parse(kHeader +
                        "  - id: a\n    type: shell\n    command: \"true\"\n"
                        "    secrets:\n      P: file:relative/path\n      Q: vault:x\n"
                        "      1BAD: env:X\n");
  INFO(Dump(r));
  CHECK_FALSE(r.ok());
  const Diagnostic* rel = Find(r, "secret 'P': a secret file must be an absolute path");
  REQUIRE(rel != nullptr);
  CHECK(rel->where.line == 8);
  CHECK(rel->where.column == 10);
  CHECK(Find(r, "secret 'Q': unknown secret source") != nullptr);
  CHECK(Find(r, "keys must be variable names") != nullptr);
}

TEST_CASE("HideEnvValues leaves the names of env and the secret references", "[dsl][secrets]") {
  ParseResult r = Parse(kHeader +
                        "  - id: a\n    type: shell\n    command: \"true\"\n"
                        "    env: {PLAIN: visible-value, OTHER: x}\n"
                        "    secrets: {P: env:TOKEN}\n");
  REQUIRE(r.ok());
  nlohmann::json doc = ToJson(*r.pipeline);
  HideEnvValues(&doc);
  const std::string text = doc.dump();
  CHECK(text.find("visible-value") == std::string::npos);
  CHECK(doc["tasks"][0]["env"] == nlohmann::json::array({"OTHER", "PLAIN"}));
  CHECK(doc["tasks"][0]["secrets"]["P"] == "env:TOKEN");
}
