// libFuzzer target for pipeline YAML, the text users hand to `apollo11
// validate|run|submit`: the pre-scan, yaml-cpp, the field parser and the
// checker. Any text must give a pipeline or an error diagnostic, never a
// crash, hang or runaway allocation (run with -rss_limit_mb=2048: yaml-cpp
// 0.7 has inputs that allocate without bound, see dsl/yaml_prescan.h PreScanner;
// aliases are bounded by dsl/yaml_tree.h). A
// pipeline the checker accepts must survive the JSON snapshot unchanged,
// compile in the engine and run to its end.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "dsl/parser.h"
#include "dsl/pipeline_json.h"
#include "engine/run_graph.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/heap_budget.h"
#include "fuzz/run_to_end.h"

namespace apollo11::fuzz {
namespace {

// Imports in the input resolve against the design example, so its library
// file (common/retry_policy.yaml) is reachable and named policies get covered.
const std::string kPath = std::string(APOLLO11_SOURCE_DIR) + "/examples/design/fuzz.yaml";

void ParsePipeline(std::string_view text) {
  dsl::ParseResult result = dsl::ParsePipelineText(text, kPath);
  if (!result.ok()) {
    bool has_error = false;
    for (const dsl::Diagnostic& d : result.diagnostics) {
      if (d.severity == dsl::Diagnostic::Severity::kError && !d.message.empty()) has_error = true;
    }
    Require(has_error, "a refused pipeline comes with an error diagnostic that says why");
    return;
  }
  const dsl::PipelineSpec& spec = *result.pipeline;
  nlohmann::json snapshot = nlohmann::json::parse(dsl::CanonicalJson(spec), nullptr, false);
  Require(!snapshot.is_discarded(), "the canonical JSON of a valid pipeline parses");
  auto back = dsl::PipelineFromJson(snapshot);
  Require(back.ok() && *back == spec, "a valid pipeline survives its JSON snapshot unchanged");
  auto graph = engine::RunGraph::Compile(spec);
  Require(graph.ok(), "a pipeline the checker accepts compiles in the engine");
  DriveRunToEnd(std::make_shared<const engine::RunGraph>(std::move(*graph)));
}

}  // namespace
}  // namespace apollo11::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  apollo11::fuzz::HeapBudget budget;
  apollo11::fuzz::ParsePipeline(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
