#include "actors/scheduler/rerun_plan.h"

#include "actors/scheduler/scheduler_run.h"
#include "common/ids.h"
#include "engine/rerun_selection.h"

namespace apollo11::actors {

Result<RerunSource> ReadRerunSource(const RerunRun& rerun, storage::RunReader* runs,
                                    bool still_active) {
  const std::string& id = rerun.run_id;
  if (Status valid = CheckRunId(id); !valid.ok()) return valid;
  if (still_active) {
    return Status::InvalidInput("run " + id +
                                " is still RUNNING: wait for it to end, or cancel it, then rerun");
  }
  auto stored = runs->GetRun(id);
  if (!stored.ok()) return stored.status();
  if (!stored->has_value()) return Status::NotFound("no run " + id);
  RerunSource source;
  source.original = std::move(**stored);
  if (!IsFinal(source.original.status)) {
    return Status::InvalidInput("run " + id + " is still " + ToString(source.original.status) +
                                ": wait for it to end, or cancel it, then rerun");
  }
  auto snapshot = runs->GetPipeline(source.original.pipeline_hash);
  if (!snapshot.ok()) return snapshot.status();
  if (!snapshot->has_value()) {
    return Status::NotFound("the pipeline snapshot " + source.original.pipeline_hash + " of run " +
                            id + " is no longer in the journal");
  }
  auto spec = SpecFromSnapshot(**snapshot, "pipeline snapshot");
  if (!spec.ok()) return spec.status();
  source.spec = std::move(*spec);
  auto execs = runs->ExecutionsOfRun(id);
  if (!execs.ok()) return execs.status();
  source.execs = std::move(*execs);
  return source;
}

Result<std::vector<const storage::ExecutionRecord*>> ReusedRecords(const engine::RunGraph& graph,
                                                                   const RerunSource& source,
                                                                   const RerunRun& rerun) {
  // What each task ended as (PENDING: no record, it never started), and its
  // record; foreach instances ("ID[i]") are not tasks of the graph.
  std::vector<TaskState> ended(graph.size(), TaskState::kPending);
  std::vector<const storage::ExecutionRecord*> records(graph.size(), nullptr);
  for (const storage::ExecutionRecord& e : source.execs) {
    const int task = graph.Find(e.task_id);
    if (task < 0) continue;
    ended[task] = e.state;
    records[task] = &e;
  }
  engine::RerunSelection selection;
  selection.failed = rerun.failed;
  selection.from = rerun.from_task;
  selection.downstream = rerun.downstream;
  auto reused = engine::SelectReused(graph, ended, selection);
  if (!reused.ok()) return reused.status();
  for (int task = 0; task < graph.size(); ++task) {
    if (!(*reused)[task]) records[task] = nullptr;
  }
  return records;
}

std::map<std::string, storage::ExecutionRecord> ReusableItems(
    const engine::RunGraph& graph, const RerunSource& source,
    const std::vector<const storage::ExecutionRecord*>& reused) {
  std::map<std::string, storage::ExecutionRecord> out;
  for (const storage::ExecutionRecord& e : source.execs) {
    const size_t open = e.task_id.rfind('[');
    if (open == std::string::npos || e.state != TaskState::kSuccess) continue;
    const int task = graph.Find(e.task_id.substr(0, open));
    // A foreach task reused whole needs none; one rerun runs its items again
    // but those that succeeded.
    if (task < 0 || reused[static_cast<size_t>(task)] != nullptr) continue;
    out.emplace(e.task_id, e);
  }
  return out;
}

}  // namespace apollo11::actors
