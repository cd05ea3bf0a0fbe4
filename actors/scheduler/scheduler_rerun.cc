// SchedulerCore::Rerun: a new run of a finished run's snapshot that reuses
// the SUCCESS and outputs of what is not selected (planned by rerun_plan.h).
// The new run is an ordinary run from then on: recovered, canceled and
// queried like any other, its reused tasks restored from their records.

#include <spdlog/spdlog.h>

#include "actors/scheduler/rerun_plan.h"
#include "actors/scheduler/scheduler_core.h"
#include "common/log_event.h"

namespace apollo11::actors {

Result<std::string> SchedulerCore::Rerun(const RerunRun& rerun) {
  APOLLO11_RETURN_IF_ERROR(CheckRunCap());
  auto active = runs_.find(rerun.run_id);
  auto source = ReadRerunSource(rerun, store_, active != runs_.end() && !active->second->finished);
  if (!source.ok()) return source.status();
  const Micros now = clock_->Now();
  auto new_id = NewRunId(now);
  if (!new_id.ok()) return new_id.status();
  auto made = MakeRun(*new_id, std::move(source->spec));
  if (!made.ok()) return made.status();
  auto reused = ReusedRecords(*(*made)->graph, *source, rerun);
  if (!reused.ok()) return reused.status();

  const storage::RunRecord& original = source->original;
  storage::RunRecord record;
  record.pipeline_hash = original.pipeline_hash;
  record.params = original.params;
  record.rerun_of = original.run_id;
  record.pipeline_version = original.pipeline_version;  // the rerun keeps the version pin
  SchedulerRun& run = Register(std::move(*made), std::move(record), now);
  if (rerun.failed) run.reusable_items = ReusableItems(*run.graph, *source, *reused);
  effects_.clear();
  size_t reused_count = 0;
  for (int task = 0; task < run.dag->size(); ++task) {
    if ((*reused)[task] == nullptr) continue;
    APOLLO11_RETURN_IF_ERROR(ReuseTask(run, task, *(*reused)[task]));
    ++reused_count;
  }
  run.dag->Start(now, &effects_);
  Apply(run, effects_, "scheduler");
  LogEvent(spdlog::level::info, "rerun_started",
           {{"run_id", run.run_id}, {"rerun_of", original.run_id}, {"reused", reused_count}},
           "run {} reruns {}: {} of {} tasks reused", run.run_id, original.run_id, reused_count,
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
    run.output_tail_only[task] = !JournaledOutputWhole(from);
  }
  return Status::Ok();
}

}  // namespace apollo11::actors
