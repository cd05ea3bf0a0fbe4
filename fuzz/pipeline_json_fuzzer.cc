// libFuzzer target for pipeline JSON, which a coordinator accepts from any
// client (SubmitRun::pipeline_json) and reads back from its journal. The path
// is the scheduler's: parse, PipelineFromJson, RunGraph::Compile, then run.
// Any bytes must end in a pipeline or an error, never a crash; what decodes
// must re-encode to itself; what compiles must run to its end. The text
// decoder (PipelineFromJsonText, with its DOM-free readers) must agree with
// the DOM wherever it splits the text: refuse what the DOM refuses, and
// make the same model of the rest.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string_view>

#include "dsl/pipeline_json.h"
#include "dsl/snapshot_text.h"
#include "engine/run_graph.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/heap_budget.h"
#include "fuzz/run_to_end.h"

namespace apollo11::fuzz {
namespace {

// PipelineFromJsonText against the DOM's `spec` (an error when `json` is
// discarded). Text whose root has no single "tasks" member the text decoder
// streams through nlohmann as it always did; only refusal is compared there.
void CompareTextDecoder(std::string_view text, const nlohmann::json& json,
                        const Result<dsl::PipelineSpec>& spec) {
  auto decoded = dsl::PipelineFromJsonText(text);
  if (json.is_discarded()) {
    Require(!decoded.ok(), "the text decoder refuses text that is not JSON");
    return;
  }
  size_t begin = 0;
  size_t end = 0;
  if (!dsl::snapshot_text::FindRootTasks(text, &begin, &end)) return;
  Require(decoded.ok() == spec.ok(), "the text decoder refuses what the DOM refuses");
  if (spec.ok()) Require(*decoded == *spec, "the text decoder makes the DOM's model");
}

void ReadPipelineJson(const uint8_t* data, size_t size) {
  nlohmann::json json = nlohmann::json::parse(data, data + size, nullptr, false);
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (json.is_discarded()) {
    CompareTextDecoder(text, json, Status::InvalidInput("not JSON"));
    return;
  }
  auto spec = dsl::PipelineFromJson(json);
  CompareTextDecoder(text, json, spec);
  if (!spec.ok()) {
    Require(!spec.status().message().empty(), "refused pipeline JSON says why");
    return;
  }
  auto back = dsl::PipelineFromJson(dsl::ToJson(*spec));
  Require(back.ok() && *back == *spec, "decoded pipeline JSON re-encodes to the same pipeline");
  (void)dsl::ContentHash(*spec);
  auto graph = engine::RunGraph::Compile(*spec);
  if (!graph.ok()) {
    Require(!graph.status().message().empty(), "a refused graph says why");
    return;
  }
  DriveRunToEnd(std::make_shared<const engine::RunGraph>(std::move(*graph)));
}

}  // namespace
}  // namespace apollo11::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  apollo11::fuzz::HeapBudget budget;
  apollo11::fuzz::ReadPipelineJson(data, size);
  return 0;
}
