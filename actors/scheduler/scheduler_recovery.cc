// SchedulerCore: building a run's in-memory state, for a submission or from
// the journal after a restart (Recover). Split from scheduler_core.cc by
// concern, as storage/journal_gc.cc is from journal.cc.

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>

#include "actors/scheduler/scheduler_core.h"
#include "alerts/pipeline_alerts.h"
#include "common/ids.h"
#include "dsl/pipeline_json.h"
#include "engine/placement.h"

namespace apollo11::actors {

// The pipeline model of a journaled snapshot, decoded task by task: the DOM
// of the whole document (several times the size of the model) never exists.
Result<std::unique_ptr<SchedulerRun>> SchedulerCore::MakeRun(const std::string& run_id,
                                                             dsl::PipelineSpec spec) {
  auto graph = engine::RunGraph::Compile(std::move(spec));
  if (!graph.ok()) return graph.status();
  graph->ReleaseDeclaredDependencies();  // the graph's edges say it all

  auto run = std::make_unique<SchedulerRun>();
  run->run_id = run_id;
  run->graph = std::make_shared<const engine::RunGraph>(std::move(*graph));
  engine::DagRunOptions dag_options;
  dag_options.max_requeues = static_cast<int>(options_.max_requeues);
  dag_options.retry_stagger = options_.retry_stagger;
  dag_options.stagger_key = run_id;
  dag_options.max_foreach_items = options_.max_foreach_items;
  run->dag = std::make_unique<engine::DagRun>(run->graph, dag_options);
  run->metrics = options_.metrics->Pipeline(run->spec().name);

  const size_t n = run->spec().tasks.size();
  run->execs.resize(n);
  run->exec_dirty.assign(n, 0);
  run->outputs.resize(n);
  run->has_dependents.assign(n, 0);
  run->stderr_tails.resize(n);
  run->alert_rules = alerts::PipelineAlertRules(run->spec());
  run->output_tail_only.assign(n, 0);
  // Placement weighs a worker's load by how long its tasks usually take: the
  // P50 of each task's past successful durations, read once per run here
  // rather than on every dispatch. Without history: the engine's default.
  run->expected_ms.assign(n, engine::kDefaultP50 / kMicrosPerMilli);
  run->p50.assign(n, 0);
  run->placed_steady.assign(n, 0);
  LoadHistory(*run);
  for (size_t i = 0; i < n; ++i) {
    const dsl::TaskSpec& task = run->spec().tasks[i];
    storage::ExecutionRecord& rec = run->execs[i];
    rec.task_id = task.id;
    rec.state = TaskState::kPending;
    run->has_dependents[i] = run->graph->Dependents(static_cast<int>(i)).empty() ? 0 : 1;
  }
  return run;
}

void SchedulerCore::LoadHistory(SchedulerRun& run) {
  for (size_t i = 0; i < run.execs.size(); ++i) {
    auto p50 = store_->DurationP50(run.spec().name + "/" + run.spec().tasks[i].id);
    if (p50.ok() && p50->has_value()) {
      run.expected_ms[i] = std::max<int64_t>(1, **p50 / kMicrosPerMilli);
      run.p50[i] = std::max<Micros>(1, **p50);
    }
  }
}

Result<std::string> SchedulerCore::NewRunId(Micros now) {
  if (!run_ids_seeded_) {
    auto last = store_->LastCreatedRunId();
    if (!last.ok()) return last.status();
    run_ids_.Seed(*last);
    run_ids_seeded_ = true;
  }
  // Unique by construction; the store is asked all the same, because a
  // commit it refused (a run record is never overwritten) would be retried
  // forever.
  constexpr int kTries = 16;
  for (int i = 0; i < kTries; ++i) {
    std::string id = run_ids_.Next(now);
    if (runs_.count(id)) continue;
    auto stored = store_->GetRun(id);
    if (!stored.ok()) return stored.status();
    if (stored->has_value()) continue;
    // Records committed ahead of a run whose creation never landed (a crash
    // in between, see Flush) would join a new run of the same id.
    auto left = store_->HasExecutionsOf(id);
    if (!left.ok()) return left.status();
    if (!*left) return id;
  }
  return Status::Internal("no unused run id after " + std::to_string(kTries) + " tries");
}

RecoveryReport SchedulerCore::Recover() {
  const Micros began = clock_->Steady();
  RecoveryReport report;
  const Micros now = clock_->Now();
  if (options_.recover == SchedulerOptions::RecoverMode::kNone) return report;
  auto unfinished = store_->UnfinishedRuns();
  if (!unfinished.ok()) {
    spdlog::error("recovery: cannot list unfinished runs: {}", unfinished.status().ToString());
  } else {
    for (const storage::RunRecord& record : *unfinished) {
      if (runs_.count(record.run_id)) continue;
      if (options_.recover == SchedulerOptions::RecoverMode::kOne &&
          record.run_id != options_.recover_run) {
        continue;
      }
      Status s = RecoverRun(record, now, &report);
      if (s.ok()) continue;
      // A run we cannot rebuild must not stay "running" forever, nor stop
      // the coordinator from serving the others: it ends FAILED, saying why.
      ++report.failed_runs;
      storage::RunRecord failed = record;
      failed.status = RunStatus::kFailed;
      failed.finished_at = now;
      failed.reason = "could not be recovered after a coordinator restart: " + s.message();
      batch_.PutRun(failed);
      spdlog::error("recovery: run {} {}", record.run_id, failed.reason);
    }
  }
  report.elapsed_us = clock_->Steady() - began;
  return report;
}

Status SchedulerCore::RecoverRun(const storage::RunRecord& record, Micros now,
                                 RecoveryReport* report) {
  // An id no execution id can be split back into (one with a '.') would
  // leave the run waiting forever.
  APOLLO11_RETURN_IF_ERROR(CheckRunId(record.run_id));
  auto snapshot = store_->GetPipeline(record.pipeline_hash);
  if (!snapshot.ok()) return snapshot.status();
  if (!snapshot->has_value()) {
    return Status::NotFound("pipeline snapshot " + record.pipeline_hash + " is missing");
  }
  auto spec = SpecFromSnapshot(**snapshot, "pipeline snapshot");
  if (!spec.ok()) return spec.status();
  auto made = MakeRun(record.run_id, std::move(*spec));
  if (!made.ok()) return made.status();
  std::unique_ptr<SchedulerRun> run = std::move(*made);
  run->record = record;
  run->record.status = RunStatus::kRunning;
  APOLLO11_RETURN_IF_ERROR(RestoreExecutions(*run));

  // In flight as journaled: what Resume then moves (foreach instances it
  // promotes) is counted by Apply as usual.
  size_t journaled_in_flight = 0;
  for (const storage::ExecutionRecord& e : run->execs) {
    if (e.state == TaskState::kReady || e.state == TaskState::kRunning) ++journaled_in_flight;
  }
  effects_.clear();
  APOLLO11_RETURN_IF_ERROR(run->dag->Resume(now, &effects_));
  SchedulerRun& ref = *run;
  runs_.emplace(record.run_id, std::move(run));
  // The executions gauge takes them in the states the journal left them in;
  // the transitions below then move them on.
  std::array<size_t, kTaskStateCount> by_state{};
  for (const storage::ExecutionRecord& e : ref.execs) ++by_state[static_cast<int>(e.state)];
  options_.metrics->RunRecovered(by_state);
  in_flight_ += journaled_in_flight;
  const size_t queued_before = staged_.enqueue.execs.size();
  // READY executions go straight back to the dispatcher: none of them was
  // sent before the crash, since a DISPATCH leaves only after its READY ->
  // RUNNING is committed. RUNNING ones wait for their workers to claim them.
  Apply(ref, effects_, "recovery");
  StageAdoption(ref, now, report);
  ++report->runs;
  report->tasks += static_cast<size_t>(ref.dag->size());
  report->ready += staged_.enqueue.execs.size() - queued_before;
  report->retrying += static_cast<size_t>(ref.dag->count(TaskState::kRetrying));
  ref.progress_dirty = true;
  FinishIfDone(ref);
  return Status::Ok();
}

Status SchedulerCore::RestoreExecutions(SchedulerRun& run) {
  auto records = store_->ExecutionsOfRun(run.run_id);
  if (!records.ok()) return records.status();
  std::vector<storage::ExecutionRecord> instances;
  for (storage::ExecutionRecord& rec : *records) {
    const int task = run.graph->Find(rec.task_id);
    const size_t open = rec.task_id.rfind('[');
    if (task < 0 && open != std::string::npos) {
      const int parent = run.graph->Find(rec.task_id.substr(0, open));
      if (parent >= 0 && !run.spec().tasks[parent].foreach.empty()) {
        instances.push_back(std::move(rec));
        continue;
      }
    }
    if (task < 0) continue;  // not in the snapshot: ignore rather than guess
    APOLLO11_RETURN_IF_ERROR(run.dag->Restore(task, rec.state, rec.attempt,
                                              static_cast<int>(rec.retries_used),
                                              static_cast<int>(rec.requeues), rec.next_retry_at));
    if (run.trace_id.empty()) run.trace_id = rec.trace_id;
    // Upstream outputs feed dependents' environments; after a restart only
    // the journaled tail (journal_output_cap) is left of them, which is the
    // whole output when shorter than that.
    if (run.has_dependents[task]) {
      run.outputs[task] = rec.output;
      run.output_tail_only[task] = !JournaledOutputWhole(rec);
    }
    run.Adopt(task, std::move(rec));
  }
  APOLLO11_RETURN_IF_ERROR(ForeachExpansion::Restore(run, &instances));
  if (run.trace_id.empty()) run.trace_id = NewTraceId();
  return Status::Ok();
}

void SchedulerCore::StageAdoption(SchedulerRun& run, Micros now, RecoveryReport* report) {
  staged_.adopt.claim_until = clock_->Steady() + options_.claim_window.count() * kMicrosPerMilli;
  for (int task = 0; task < run.dag->slots(); ++task) {
    // An expanded foreach task runs nothing itself: its instances are adopted.
    if (run.dag->state(task) != TaskState::kRunning || run.dag->InstanceCount(task) > 0) continue;
    const storage::ExecutionRecord& rec = run.execs[task];
    staged_.adopt.execs.push_back(
        {run.ExecId(task), run.dag->attempt(task), rec.worker_id, run.expected_ms[task]});
    // Only the journaled wall start survives a restart: the deadline and the
    // slow check count from it, mapped onto the steady clock (a start stamped
    // ahead of our wall clock counts from now). A slow flag came back with
    // the record; an unflagged attempt is watched again.
    const Micros started_at = rec.started_at ? rec.started_at : now;
    const Micros started_steady = std::min(SteadyOf(started_at), clock_->Steady());
    StageDeadline(run, task, started_steady);
    WatchSlow(run, task, run.dag->attempt(task), started_steady);
    ++report->running;
  }
}

}  // namespace apollo11::actors
