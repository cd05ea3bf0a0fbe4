// SchedulerCore: what a turn stages for the other actors and the journal
// (progress, alerts, the dispatcher's enqueue, the outbox flush). Split from
// scheduler_core.cc by concern, as scheduler_timers.cc is.

#include <malloc.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "actors/scheduler/scheduler_core.h"

namespace apollo11::actors {
namespace {

// A commit of this many execution records or more (a large submission's
// first), or runs of this many tasks leaving memory, hand their freed heap
// back to the system (malloc_trim). glibc returns free memory only from the
// top of an arena on its own: the snapshot's parse, the batch and the graph's
// build left some 50 MB free but resident under a 100k-task run.
constexpr size_t kTrimAfterRecords = 8192;

// A new run's PENDING records go ahead of its creation in commits of this
// many (about 1.2 MB encoded), once it has more than this many at all.
constexpr size_t kRecordsPerPart = 8192;

}  // namespace

// A new run's first commit would otherwise hold the record of every task at
// once: at 100k tasks some 40 MB of encoded records and LMDB dirty pages on
// top of the run itself, and at 1M a replication frame over its 64 MiB
// bound. The records of its tasks still PENDING are what MakeRun made them,
// implied by nothing else staged, so they may be journaled first, in parts,
// in exec id order (LMDB then fills each leaf as it appends). No reader
// finds them before the turn's commit creates the run: every lookup starts
// from a run record. A crash in between leaves them without a run; NewRunId
// never gives their id out again. A part that fails to commit stops the
// split: the rest go with the turn's commit, as they did before.
size_t SchedulerCore::CommitNewRecordsAhead() {
  size_t written = 0;
  storage::RunBatch part;
  std::vector<int> pending;
  for (auto& [id, run] : runs_) {
    if (!run->creation_unjournaled || run->dirty_list.size() <= kRecordsPerPart) continue;
    pending.clear();
    for (int task : run->dirty_list) {
      if (run->execs[task].state == TaskState::kPending) pending.push_back(task);
    }
    // In the journal's key order: within one run, ordering by exec id
    // (RUN.TASK) is ordering by task id.
    const std::vector<storage::ExecutionRecord>& execs = run->execs;
    std::sort(pending.begin(), pending.end(),
              [&execs](int a, int b) { return execs[a].task_id < execs[b].task_id; });
    for (size_t at = 0; at < pending.size(); at += kRecordsPerPart) {
      const size_t end = std::min(pending.size(), at + kRecordsPerPart);
      part.ReserveExecutions(end - at);
      for (size_t i = at; i < end; ++i) {
        part.PutExecution(execs[pending[i]], run->run_id, run->trace_id);
      }
      const Micros begin = clock_->Steady();
      Status s = store_->Commit(part);
      options_.metrics->Committed(s.ok(), 0, clock_->Steady() - begin);
      if (!s.ok()) {
        // Not tried again for this run (a full disk would fail each retry):
        // the rest go with the turn's commit.
        part.Clear();
        run->creation_unjournaled = false;
        spdlog::warn("run {}: its records could not be committed ahead ({}); they go with the run",
                     run->run_id, s.ToString());
        break;
      }
      for (size_t i = at; i < end; ++i) run->exec_dirty[pending[i]] = 0;
      written += end - at;
    }
    const std::vector<uint8_t>& dirty = run->exec_dirty;
    std::erase_if(run->dirty_list, [&dirty](int task) { return dirty[task] == 0; });
  }
  return written;
}

RunChange SchedulerCore::ChangeOf(SchedulerRun& run) {
  run.feed_dirty = false;
  RunChange c;
  c.run_id = run.run_id;
  c.pipeline = run.spec().name;
  c.status = run.record.status;
  for (int s = 0; s < kTaskStateCount; ++s) {
    c.tasks[s] = static_cast<uint32_t>(run.dag->count(static_cast<TaskState>(s)));
  }
  return c;
}

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
    a.exec_id = run.ExecId(task);
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
  const size_t ahead = CommitNewRecordsAhead();
  size_t dirty = 0;
  for (const auto& [id, run] : runs_) dirty += run->dirty_list.size();
  batch_.ReserveExecutions(dirty);
  for (auto& [id, run] : runs_) {
    if (!run->dirty_list.empty()) run->feed_dirty = true;
    for (int task : run->dirty_list) {
      batch_.PutExecution(run->execs[task], run->run_id, run->trace_id);
      run->exec_dirty[task] = 0;
    }
    run->dirty_list.clear();
  }
  StageProgress(!staged_.finished.empty());
  options_.metrics->Backlog(in_flight_, paused_);
  const bool large = ahead + batch_.execution_records().size() >= kTrimAfterRecords;
  if (!batch_.empty()) {
    const Micros begin = clock_->Steady();
    const size_t transitions = batch_.transitions();
    Status s = store_->Commit(batch_);
    commit_failing_ = !s.ok();
    options_.metrics->Committed(s.ok(), transitions, clock_->Steady() - begin);
    if (!s.ok()) return s;  // staged messages stay staged; the batch is retried
  }
  for (auto& [id, run] : runs_) {
    run->creation_unjournaled = false;
    if (run->feed_dirty) staged_.changes.push_back(ChangeOf(*run));
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
