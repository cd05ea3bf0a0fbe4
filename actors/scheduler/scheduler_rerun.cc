// SchedulerCore::Rerun: a new run of a finished run's snapshot that reuses
// the SUCCESS and outputs of what is not selected (engine/rerun_selection.h).
// The new run is an ordinary run from then on: recovered, canceled and
// queried like any other, its reused tasks restored from their records.

#include <spdlog/spdlog.h>

#include "actors/scheduler/scheduler_core.h"
#include "common/ids.h"
#include "common/log_event.h"
#include "engine/rerun_selection.h"

namespace apollo11::actors {

Result<std::string> SchedulerCore::Rerun(const RerunRun& rerun) {
  const std::string& original_id = rerun.run_id;
  if (Status valid = CheckRunId(original_id); !valid.ok()) return valid;
  if (auto it = runs_.find(original_id); it != runs_.end() && !it->second->finished) {
    return Status::InvalidInput("run " + original_id +
                                " is still RUNNING: wait for it to end, or cancel it, then rerun");
  }
  auto stored = store_->GetRun(original_id);
  if (!stored.ok()) return stored.status();
  if (!stored->has_value()) return Status::NotFound("no run " + original_id);
  const storage::RunRecord& original = **stored;
  if (!IsFinal(original.status)) {
    return Status::InvalidInput("run " + original_id + " is still " + ToString(original.status) +
                                ": wait for it to end, or cancel it, then rerun");
  }
  auto snapshot = store_->GetPipeline(original.pipeline_hash);
  if (!snapshot.ok()) return snapshot.status();
  if (!snapshot->has_value()) {
    return Status::NotFound("the pipeline snapshot " + original.pipeline_hash + " of run " +
                            original_id + " is no longer in the journal");
  }
  auto spec = SpecFromSnapshot(**snapshot, "pipeline snapshot");
  if (!spec.ok()) return spec.status();
  auto execs = store_->ExecutionsOfRun(original_id);
  if (!execs.ok()) return execs.status();

  const Micros now = clock_->Now();
  auto new_id = NewRunId(now);
  if (!new_id.ok()) return new_id.status();
  auto made = MakeRun(*new_id, std::move(*spec));
  if (!made.ok()) return made.status();
  const engine::RunGraph& graph = *(*made)->graph;
  // What each task ended as (PENDING: no record, it never started), and its
  // record; foreach instances ("ID[i]") are not tasks of the graph.
  std::vector<TaskState> ended(graph.size(), TaskState::kPending);
  std::vector<const storage::ExecutionRecord*> records(graph.size(), nullptr);
  for (const storage::ExecutionRecord& e : *execs) {
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

  storage::RunRecord record;
  record.pipeline_hash = original.pipeline_hash;
  record.params = original.params;
  record.rerun_of = original_id;
  record.pipeline_version = original.pipeline_version;  // the rerun keeps the version pin
  SchedulerRun& run = Register(std::move(*made), std::move(record), now);
  effects_.clear();
  size_t reused_count = 0;
  for (int task = 0; task < run.dag->size(); ++task) {
    if (!(*reused)[task]) continue;
    APOLLO11_RETURN_IF_ERROR(ReuseTask(run, task, *records[task]));
    ++reused_count;
  }
  run.dag->Start(now, &effects_);
  Apply(run, effects_, "scheduler");
  LogEvent(spdlog::level::info, "rerun_started",
           {{"run_id", run.run_id}, {"rerun_of", original_id}, {"reused", reused_count}},
           "run {} reruns {}: {} of {} tasks reused", run.run_id, original_id, reused_count,
           run.dag->size());
  FinishIfDone(run);
  return run.run_id;
}

Status SchedulerCore::ReuseTask(SchedulerRun& run, int task, const storage::ExecutionRecord& from) {
  APOLLO11_RETURN_IF_ERROR(run.dag->Reuse(task, "reused from " + from.run_id, &effects_));
  storage::ExecutionRecord& rec = run.execs[task];
  rec.exit_code = from.exit_code;
  rec.output = from.output;
  rec.task_output = from.task_output;
  // Dependents read the journaled tail, as after a restart.
  if (run.has_dependents[task]) {
    run.outputs[task] = from.output;
    run.output_tail_only[task] = 1;
  }
  return Status::Ok();
}

}  // namespace apollo11::actors
