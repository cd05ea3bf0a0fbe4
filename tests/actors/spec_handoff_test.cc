// SpecHandoff: the model an embedded `apollo11 run` hands its scheduler must
// be the one the scheduler would decode from the snapshot.

#include "actors/scheduler/spec_handoff.h"

#include <catch2/catch.hpp>
#include <string>

#include "dsl/parser.h"
#include "dsl/pipeline_json.h"
#include "tests/actors/cli_harness.h"

namespace apollo11::actors {
namespace {

dsl::PipelineSpec Named(const std::string& name) {
  dsl::PipelineSpec spec;
  spec.name = name;
  return spec;
}

TEST_CASE("a handed-off spec is taken once, and only under its hash", "[handoff]") {
  SpecHandoff::Offer("h1", Named("one"));
  CHECK_FALSE(SpecHandoff::Take("h2").has_value());
  auto taken = SpecHandoff::Take("h1");
  REQUIRE(taken.has_value());
  CHECK(taken->name == "one");
  CHECK_FALSE(SpecHandoff::Take("h1").has_value());
  // A newer offer replaces an untaken one.
  SpecHandoff::Offer("h1", Named("old"));
  SpecHandoff::Offer("h3", Named("new"));
  CHECK_FALSE(SpecHandoff::Take("h1").has_value());
  CHECK(SpecHandoff::Take("h3")->name == "new");
}

// What the embedded run hands over (the parsed file, locations dropped)
// against what the scheduler decodes from the same snapshot.
void CheckHandedEqualsDecoded(const dsl::ParseResult& parsed) {
  REQUIRE(parsed.ok());
  dsl::PipelineSpec handed = *parsed.pipeline;
  const std::string snapshot = dsl::CanonicalJson(handed);
  dsl::DropLocations(&handed);
  auto decoded = dsl::PipelineFromJsonText(snapshot, dsl::Locations::kCheckAndDrop);
  REQUIRE(decoded.ok());
  CHECK(handed == *decoded);
  // And the handed model writes the same snapshot bytes, locations aside.
  CHECK(dsl::CanonicalJson(handed) == dsl::CanonicalJson(*decoded));
}

TEST_CASE("the spec an embedded run hands over equals the one decoded from its snapshot",
          "[handoff]") {
  for (const char* example : {"hello", "design", "etl-db"}) {
    INFO(example);
    const std::string file =
        std::string(APOLLO11_SOURCE_DIR) + "/examples/" + example + "/pipeline.yaml";
    CheckHandedEqualsDecoded(dsl::LoadPipelineFile(file));
  }
  INFO("a generated 2,000-task DAG");
  CheckHandedEqualsDecoded(
      dsl::ParsePipelineText(testing::LayeredDag(2000, 10, "noop", 7), "/tmp/dag.yaml"));
}

}  // namespace
}  // namespace apollo11::actors
