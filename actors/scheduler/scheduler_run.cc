#include "actors/scheduler/scheduler_run.h"

#include "dsl/pipeline_json.h"

namespace apollo11::actors {

Result<dsl::PipelineSpec> SpecFromSnapshot(const std::string& snapshot, const char* what) {
  auto spec = dsl::PipelineFromJsonText(snapshot, dsl::Locations::kCheckAndDrop);
  if (!spec.ok() && spec.status().code() == StatusCode::kInvalidInput) {
    return Status::InvalidInput(std::string(what) + " is not valid JSON");
  }
  return spec;
}

int SchedulerRun::FindSlot(const std::string& task_id) const {
  const int task = graph->Find(task_id);
  if (task >= 0 || task_id.empty() || task_id.back() != ']') return task;
  const size_t open = task_id.rfind('[');
  if (open == std::string::npos || open + 2 > task_id.size() - 1) return -1;
  const std::string index = task_id.substr(open + 1, task_id.size() - open - 2);
  if (index.size() > 9 || index.find_first_not_of("0123456789") != std::string::npos) return -1;
  return dag->InstanceSlot(graph->Find(task_id.substr(0, open)), std::stoi(index));
}

void SchedulerRun::GrowSlots() {
  const size_t from = execs.size();
  const size_t n = static_cast<size_t>(dag->slots());
  if (n <= from) return;
  execs.resize(n);
  exec_dirty.resize(n, 0);
  outputs.resize(n);
  has_dependents.resize(n, 0);
  stderr_tails.resize(n);
  output_tail_only.resize(n, 0);
  placed_steady.resize(n, 0);
  expected_ms.resize(n);
  p50.resize(n);
  for (size_t slot = from; slot < n; ++slot) {
    const auto parent = static_cast<size_t>(dag->ParentOf(static_cast<int>(slot)));
    expected_ms[slot] = expected_ms[parent];
    p50[slot] = p50[parent];
  }
}

}  // namespace apollo11::actors
