// libFuzzer target for pipeline JSON, which a coordinator accepts from any
// client (SubmitRun::pipeline_json) and reads back from its journal. The path
// is the scheduler's: parse, PipelineFromJson, RunGraph::Compile, then run.
// Any bytes must end in a pipeline or an error, never a crash; what decodes
// must re-encode to itself; what compiles must run to its end.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>

#include "dsl/pipeline_json.h"
#include "engine/run_graph.h"
#include "fuzz/fuzz_check.h"
#include "fuzz/heap_budget.h"
#include "fuzz/run_to_end.h"

namespace apollo11::fuzz {
namespace {

void ReadPipelineJson(const uint8_t* data, size_t size) {
  nlohmann::json json = nlohmann::json::parse(data, data + size, nullptr, false);
  if (json.is_discarded()) return;
  auto spec = dsl::PipelineFromJson(json);
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
