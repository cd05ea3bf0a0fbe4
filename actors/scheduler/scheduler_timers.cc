// SchedulerCore: its timer queue (retries and slow checks, on the Steady()
// clock) and the operator's answer to a slow flag. Split from
// scheduler_core.cc by concern, as storage/journal_gc.cc is from journal.cc.

#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>

#include "actors/scheduler/scheduler_core.h"
#include "common/log_event.h"
#include "engine/retry.h"

namespace apollo11::actors {

// ---- timers -----------------------------------------------------------------

Micros SchedulerCore::SteadyOf(Micros wall) const {
  return clock_->Steady() + (wall - clock_->Now());
}

void SchedulerCore::OnTimers() {
  const Micros steady_now = clock_->Steady();
  const Micros wall_now = clock_->Now();
  timers_.PopDue(steady_now, [&](const Timer& timer) {
    if (timer.kind == Timer::Kind::kRetry) {
      FireRetry(timer, wall_now);
    } else {
      FireSlow(timer, steady_now, wall_now);
    }
  });
}

Micros SchedulerCore::NextTimer() const {
  const Micros due = timers_.NextDue();
  if (due == 0) return 0;
  return clock_->Now() + std::max<Micros>(due - clock_->Steady(), 0);
}

void SchedulerCore::FireRetry(const Timer& timer, Micros wall_now) {
  auto it = runs_.find(timer.run_id);
  if (it == runs_.end()) return;
  SchedulerRun& run = *it->second;
  if (run.dag->state(timer.task) != TaskState::kRetrying) return;
  effects_.clear();
  Status s = run.dag->OnRetryDue(timer.task, wall_now, &effects_);
  if (!s.ok()) {
    spdlog::warn("retry of {} refused: {}", run.ExecId(timer.task), s.message());
    return;
  }
  Apply(run, effects_, "scheduler");
}

void SchedulerCore::GateRetry(SchedulerRun& run, int task, Micros due, Micros now) {
  const Micros delay = std::max<Micros>(due - now, 0);
  if (retry_gate_.Admit(run.run_id, task, delay)) {
    ArmRetry(run, task, due);
    options_.metrics->Retries(retry_gate_.waiting(), retry_gate_.queued());
    return;
  }
  // Queued: no timer yet. Recovery finds next_retry_at 0 and passes the
  // retry through the gate again.
  run.execs[task].next_retry_at = 0;
  (void)run.dag->SetRetryDue(task, 0);
  options_.metrics->retries_deferred.Inc();
  options_.metrics->Retries(retry_gate_.waiting(), retry_gate_.queued());
  const size_t position = retry_gate_.QueuePosition(run.run_id, task).value_or(0);
  StageNote(run, task,
            "retry deferred: " + std::to_string(retry_gate_.waiting()) +
                " retries already wait with a timer (--max-retrying " +
                std::to_string(retry_gate_.max_retrying()) + "); queued at position " +
                std::to_string(position) + ", its " + engine::FormatDelay(Millis(delay / 1000)) +
                " backoff starts when a slot frees",
            "scheduler");
}

void SchedulerCore::ArmRetry(SchedulerRun& run, int task, Micros due) {
  // Journaled as wall time (it survives a restart); waited for on the steady
  // clock.
  run.execs[task].next_retry_at = due;
  run.MarkDirty(task);
  (void)run.dag->SetRetryDue(task, due);
  timers_.Arm(SteadyOf(due), {Timer::Kind::kRetry, run.run_id, task, 0});
}

void SchedulerCore::StartQueuedRetries(Micros now) {
  // Starting one may free nothing, but a queued entry whose task is gone
  // (run finished or forgotten) gives its slot straight back.
  for (size_t i = 0; i < retry_starts_.size(); ++i) {
    const RetryGate::Entry e = retry_starts_[i];
    auto it = runs_.find(e.run_id);
    if (it == runs_.end() || it->second->dag->state(e.task) != TaskState::kRetrying) {
      retry_gate_.Leave(e.run_id, e.task, &retry_starts_);
      continue;
    }
    SchedulerRun& run = *it->second;
    const Micros due = now + e.delay;
    ArmRetry(run, e.task, due);
    StageNote(run, e.task,
              "retry slot free: backoff of " + engine::FormatDelay(Millis(e.delay / 1000)) +
                  " started, due at " + FormatTimestamp(due),
              "scheduler");
  }
  retry_starts_.clear();
  options_.metrics->Retries(retry_gate_.waiting(), retry_gate_.queued());
}

void SchedulerCore::WatchSlow(SchedulerRun& run, int task, uint32_t attempt, Micros placed_steady) {
  const Micros due = slow_.Watch(run, task, placed_steady);
  if (due > 0) timers_.Arm(due, {Timer::Kind::kSlow, run.run_id, task, attempt});
}

void SchedulerCore::FireSlow(const Timer& timer, Micros steady_now, Micros wall_now) {
  auto it = runs_.find(timer.run_id);
  if (it == runs_.end()) return;
  SchedulerRun& run = *it->second;
  const Micros ran = slow_.Ran(run, timer.task, steady_now, wall_now);
  std::optional<std::string> reason = slow_.Flag(run, timer.task, timer.attempt, ran, wall_now);
  if (!reason) return;  // stale: the attempt ended, was requeued or was flagged
  ++slow_flags_;
  const storage::ExecutionRecord& rec = run.execs[timer.task];
  const std::string exec_id = run.ExecId(timer.task);
  LogEvent(spdlog::level::warn, "slow_task",
           {{"run_id", run.run_id},
            {"task_id", rec.task_id},
            {"exec_id", exec_id},
            {"attempt", timer.attempt},
            {"worker_id", rec.worker_id},
            {"reason", *reason}},
           "{} attempt {} on worker {} {}", exec_id, timer.attempt, rec.worker_id, *reason);
  StageAlert(alerts::AlertType::kSlowTask, run, timer.task, timer.attempt, *reason);
  StageNote(run, timer.task, std::move(*reason), "scheduler");
}

void SchedulerCore::StageNote(SchedulerRun& run, int task, std::string reason,
                              const std::string& actor) {
  const storage::ExecutionRecord& rec = run.execs[task];
  storage::TransitionRecord tr;
  tr.ts = clock_->Now();
  tr.run_id = run.run_id;
  tr.task_id = rec.task_id;
  tr.exec_id = run.ExecId(task);
  tr.attempt = run.dag->attempt(task);
  tr.from = tr.to = run.dag->state(task);
  tr.reason = std::move(reason);
  tr.actor = actor;
  tr.note = true;
  batch_.Append(std::move(tr));
  run.MarkDirty(task);
  run.progress_dirty = true;
}

Result<std::string> SchedulerCore::Confirm(const std::string& exec_id, bool kill,
                                           const std::string& actor) {
  int task = -1;
  SchedulerRun* run = FindRunOfExec(exec_id, &task);
  if (run == nullptr) {
    // Not in an active run: say whether it exists at all.
    auto stored = store_->GetExecution(exec_id);
    if (!stored.ok()) return stored.status();
    if (!stored->has_value()) return Status::NotFound("no execution " + exec_id);
    return Status::InvalidInput("execution " + exec_id + " is " + ToString((*stored)->state) +
                                ", not running: only a running execution flagged slow can be "
                                "confirmed");
  }
  APOLLO11_RETURN_IF_ERROR(slow_.CheckConfirmable(*run, task));
  storage::ExecutionRecord& rec = run->execs[task];
  const Micros now = clock_->Now();
  const std::string figures =
      slow_.Figures(*run, task, slow_.Ran(*run, task, clock_->Steady(), now));
  const uint32_t attempt = run->dag->attempt(task);
  if (!kill) {
    rec.slow = storage::SlowFlag::kKept;
    std::string reason =
        "operator kept it after slow flag (" + figures + "); not flagged again during this attempt";
    spdlog::info("exec_id={} attempt={}: {}", exec_id, attempt, reason);
    StageNote(*run, task, reason, actor);
    return "kept " + exec_id + " (" + figures + ")";
  }
  const std::string error = "killed by operator after slow flag (" + figures + ")";
  effects_.clear();
  Status s = run->dag->OnResult(task, attempt, AttemptOutcome::kFailed, -1, /*retryable=*/true,
                                error, now, options_.random->Uniform01(), &effects_);
  if (!s.ok()) return Status::Internal("kill of " + exec_id + " refused: " + s.message());
  rec.error = error;
  rec.exit_code = -1;
  staged_.cancels.execs.push_back({exec_id, attempt});
  if (run->task_spec(task).timeout) staged_.unwatch.execs.push_back({exec_id, attempt});
  Apply(*run, effects_, actor, "", task);
  const TaskState after = run->dag->state(task);
  spdlog::info("exec_id={} attempt={}: {}; now {}", exec_id, attempt, error, ToString(after));
  FinishIfDone(*run);
  return "killed " + exec_id + " (" + figures + "); the task is now " + ToString(after);
}

}  // namespace apollo11::actors
