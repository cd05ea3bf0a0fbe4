// SchedulerCore: what a turn stages for the other actors and the journal
// (progress, alerts, the dispatcher's enqueue, the outbox flush). Split from
// scheduler_core.cc by concern, as scheduler_timers.cc is.

#include <malloc.h>

#include "actors/scheduler_core.h"

namespace apollo11::actors {
namespace {

// A commit of this many execution records or more (a large submission's
// first), or runs of this many tasks leaving memory, hand their freed heap
// back to the system (malloc_trim). glibc returns free memory only from the
// top of an arena on its own: the snapshot's parse, the batch and the graph's
// build left some 50 MB free but resident under a 100k-task run.
constexpr size_t kTrimAfterRecords = 8192;

}  // namespace

void SchedulerCore::StageProgress(bool force) {
  const Micros now = clock_->Steady();
  if (!force && now - last_progress_ < options_.progress_interval.count() * kMicrosPerMilli) return;
  last_progress_ = now;
  for (auto& [id, run] : runs_) {
    if (!run->progress_dirty) continue;
    run->progress_dirty = false;
    RunProgress p;
    p.run_id = id;
    for (int s = 0; s < kTaskStateCount; ++s) {
      p.counts.push_back(static_cast<uint32_t>(run->dag->count(static_cast<TaskState>(s))));
    }
    staged_.progress.push_back(std::move(p));
  }
}

void SchedulerCore::StageAlert(alerts::AlertType type, const SchedulerRun& run, int task,
                               uint32_t attempt, const std::string& reason) {
  alerts::AlertEvent a;
  a.type = type;
  a.pipeline = run.spec().name;
  a.run_id = run.run_id;
  a.ts = clock_->Now();
  a.reason = reason;
  a.pipeline_rules = run.alert_rules;
  if (task >= 0) {
    const storage::ExecutionRecord& rec = run.execs[task];
    a.task_id = rec.task_id;
    a.exec_id = rec.exec_id;
    a.attempt = attempt;
    a.worker_id = rec.worker_id;
    a.stderr_tail = run.stderr_tails[task];
  }
  staged_alerts_.push_back(std::move(a));
}

void SchedulerCore::TakeEnqueue(Enqueue* out) {
  out->execs.clear();
  if (commit_failing_) return;
  Promote();
  std::swap(out->execs, staged_.enqueue.execs);
}

Status SchedulerCore::Flush(SchedulerOutbox* out) {
  // While commits fail (disk full) nothing new is promoted: what is staged
  // waits, and memory does not fill with work that cannot be journaled.
  if (!commit_failing_) Promote();
  size_t dirty = 0;
  for (const auto& [id, run] : runs_) dirty += run->dirty_list.size();
  batch_.ReserveExecutions(dirty);
  for (auto& [id, run] : runs_) {
    for (int task : run->dirty_list) {
      batch_.PutExecution(run->execs[task], run->run_id, run->trace_id);
      run->exec_dirty[task] = 0;
    }
    run->dirty_list.clear();
  }
  StageProgress(!staged_.finished.empty());
  options_.metrics->Backlog(in_flight_, paused_);
  const bool large = batch_.execution_records().size() >= kTrimAfterRecords;
  if (!batch_.empty()) {
    const Micros begin = clock_->Steady();
    const size_t transitions = batch_.transitions();
    Status s = store_->Commit(batch_);
    commit_failing_ = !s.ok();
    options_.metrics->Committed(s.ok(), transitions, clock_->Steady() - begin);
    if (!s.ok()) return s;  // staged messages stay staged; the batch is retried
  }
  std::swap(*out, staged_);
  staged_.Clear();
  staged_acks_.clear();
  for (alerts::AlertEvent& a : staged_alerts_) options_.alerts->Emit(std::move(a));
  staged_alerts_.clear();
  // Finished runs leave memory once their end is durable.
  size_t freed_tasks = 0;
  for (const RunFinished& f : out->finished) {
    auto it = runs_.find(f.run_id);
    if (it == runs_.end()) continue;
    freed_tasks += it->second->execs.size();
    runs_.erase(it);
  }
  if (large || freed_tasks >= kTrimAfterRecords) malloc_trim(0);
  return Status::Ok();
}

}  // namespace apollo11::actors
