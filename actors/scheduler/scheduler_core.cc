#include "actors/scheduler/scheduler_core.h"

#include <malloc.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>

#include "actors/scheduler/handled_failures.h"
#include "common/ids.h"
#include "common/log_event.h"
#include "dsl/pipeline_json.h"
#include "dsl/task_limits.h"
#include "storage/snapshot_pack.h"

namespace apollo11::actors {

namespace {

bool InFlight(TaskState s) { return s == TaskState::kReady || s == TaskState::kRunning; }

// What a worker's outcome means for the attempt; nullopt for a kill we asked
// for (the task already left RUNNING on our side).
std::optional<AttemptOutcome> OutcomeOf(uint8_t wire) {
  switch (static_cast<transport::Outcome>(wire)) {
    case transport::Outcome::kSuccess:
      return AttemptOutcome::kSuccess;
    case transport::Outcome::kAlreadyDone:
      return AttemptOutcome::kAlreadyDone;
    case transport::Outcome::kTimeout:
      return AttemptOutcome::kTimeout;
    case transport::Outcome::kCanceled:
      return std::nullopt;
    default:
      return AttemptOutcome::kFailed;
  }
}

}  // namespace

void SchedulerOutbox::Clear() {
  enqueue.execs.clear();
  acks.acks.clear();
  cancels.execs.clear();
  cancels.reason.clear();
  watch.deadlines.clear();
  unwatch.execs.clear();
  adopt.execs.clear();
  adopt.claim_until = 0;
  release.execs.clear();
  progress.clear();
  finished.clear();
  changes.clear();
}

bool SchedulerOutbox::Empty() const {
  return enqueue.execs.empty() && acks.acks.empty() && cancels.execs.empty() &&
         watch.deadlines.empty() && unwatch.execs.empty() && adopt.execs.empty() &&
         release.execs.empty() && progress.empty() && finished.empty() && changes.empty();
}

SchedulerCore::SchedulerCore(storage::RunStore* store, const Clock* clock, SchedulerOptions options)
    : store_(store),
      clock_(clock),
      options_(options),
      registry_(store, store, clock, this),
      dispatch_(options.kill_grace, options.output_env_cap),
      foreach_(static_cast<size_t>(options.max_foreach_items)),
      slow_(options.slow_min, options.slow_factor),
      retry_gate_(options.max_retrying) {
  registry_.pipelines().set_require_domain_prefix(options.require_domain_prefix);
  if (!options_.metrics) options_.metrics = observability::CoordinatorMetrics::Inert();
  if (!options_.alerts) options_.alerts = alerts::NullSink::Instance();
  if (!options_.random) {
    own_random_ = engine::NewEntropyRandom();
    options_.random = own_random_.get();
  }
  options_.metrics->backlog_cap.Set(static_cast<int64_t>(options_.max_backlog));
}

SchedulerCore::~SchedulerCore() = default;

void SchedulerCore::StageDeadline(SchedulerRun& run, int task, Micros started_steady) {
  const dsl::TaskSpec& spec = run.task_spec(task);
  if (!spec.timeout) return;
  Deadline d;
  d.exec_id = run.ExecId(task);
  d.attempt = run.dag->attempt(task);
  d.timeout_ms = spec.timeout->count();
  d.deadline = started_steady + (spec.timeout->count() + options_.kill_grace.count() +
                                 options_.deadline_slack.count()) *
                                    kMicrosPerMilli;
  staged_.watch.deadlines.push_back(std::move(d));
}

Status SchedulerCore::Cancel(const std::string& run_id, const std::string& reason,
                             const std::string& actor) {
  auto it = runs_.find(run_id);
  if (it == runs_.end()) return Status::NotFound("no active run " + run_id);
  SchedulerRun& run = *it->second;
  effects_.clear();
  run.dag->Cancel(reason, &effects_);
  Apply(run, effects_, actor);
  run.record.reason = reason;
  FinishIfDone(run);
  return Status::Ok();
}

SchedulerRun* SchedulerCore::FindRunOfExec(const std::string& exec_id, int* task) {
  auto dot = exec_id.find('.');
  if (dot == std::string::npos) return nullptr;
  auto it = runs_.find(exec_id.substr(0, dot));
  if (it == runs_.end()) return nullptr;
  int index = it->second->FindSlot(exec_id.substr(dot + 1));
  if (index < 0) return nullptr;
  *task = index;
  return it->second.get();
}

void SchedulerCore::OnPlaced(const Placed& placed) {
  for (const WorkerExecRef& ref : placed.placed) {
    int task = -1;
    SchedulerRun* run = FindRunOfExec(ref.exec_id, &task);
    if (run == nullptr) {  // the run ended meanwhile: free the reserved slot
      staged_.cancels.execs.push_back({ref.exec_id, ref.attempt});
      continue;
    }
    effects_.clear();
    Status s = run->dag->OnDispatched(task, ref.attempt, ref.worker_id, placed.at, &effects_);
    if (!s.ok()) {
      // Canceled or superseded meanwhile: the dispatcher frees the slot it
      // reserved (the DISPATCH was never sent).
      spdlog::warn("placement of {} attempt {} refused: {}", ref.exec_id, ref.attempt, s.message());
      staged_.cancels.execs.push_back({ref.exec_id, ref.attempt});
      continue;
    }
    staged_.release.execs.push_back({ref.exec_id, ref.attempt});
    storage::ExecutionRecord& rec = run->execs[task];
    rec.worker_id = ref.worker_id;
    // Held by the worker, maybe queued there: its timeout and slow check
    // count from its STARTED (OnStarted), not from here.
    rec.started_at = 0;
    Apply(*run, effects_, "dispatcher", ref.worker_id, task);
  }
}

void SchedulerCore::OnStarted(const StartedBatch& batch) {
  for (const StartedFrom& item : batch.items) {
    int task = -1;
    SchedulerRun* run = FindRunOfExec(item.started.exec_id, &task);
    if (run == nullptr || run->dag->attempt(task) != item.started.attempt) continue;
    if (run->dag->state(task) != TaskState::kRunning) continue;
    storage::ExecutionRecord& rec = run->execs[task];
    const bool first = rec.started_at == 0;
    // A start stamped ahead of our wall clock counts from now.
    rec.started_at = std::min<Micros>(item.started.started_at, clock_->Now());
    run->MarkDirty(task);
    if (!first) continue;  // a duplicate STARTED arms nothing again
    // The deadline and the slow check count from this STARTED's arrival on
    // our steady clock, not from its wall stamp: a worker's wall clock may be
    // skewed from ours, and either may be stepped (NTP, `date -s`) between
    // the stamp and now. The worker enforces the timeout itself; ours is the
    // backstop, so arriving a little late only makes it more lenient.
    const Micros started_steady = clock_->Steady();
    StageDeadline(*run, task, started_steady);
    WatchSlow(*run, task, item.started.attempt, started_steady);
  }
}

void SchedulerCore::OnResults(const ResultBatch& batch) {
  const Micros now = clock_->Now();
  for (const ResultFrom& item : batch.items) {
    const transport::ResultMsg& r = item.result;
    // Whatever happens below, the worker stops resending once we answer.
    if (staged_acks_.emplace(item.worker_id, r.exec_id, r.attempt).second) {
      staged_.acks.acks.push_back({item.worker_id, r.exec_id, r.attempt});
    }
    int task = -1;
    SchedulerRun* run = FindRunOfExec(r.exec_id, &task);
    if (run == nullptr) {
      ++stale_results_;
      options_.metrics->stale_results.Inc();
      // The result of an attempt the coordinator canceled, arriving after its
      // run ended (Ctrl-C, cancel): expected, not worth a warning.
      const bool canceled = r.outcome == static_cast<uint8_t>(transport::Outcome::kCanceled);
      LogEvent(canceled ? spdlog::level::debug : spdlog::level::warn, "result_dropped",
               {{"exec_id", r.exec_id}, {"attempt", r.attempt}, {"worker_id", item.worker_id}},
               "result for unknown or finished execution {} attempt {} from {} dropped", r.exec_id,
               r.attempt, item.worker_id);
      continue;
    }
    const std::optional<AttemptOutcome> outcome = OutcomeOf(r.outcome);
    if (!outcome) continue;
    const Status holder = CheckHolder(*run, task, item);
    Status s = holder.ok() ? ApplyResult(*run, task, item, *outcome, now) : holder;
    if (!s.ok()) {
      ++stale_results_;
      options_.metrics->stale_results.Inc();
      // A resend of the current attempt's result is routine (its ACK was lost,
      // or is held while the journal cannot be written): not worth a warning.
      const bool resent = holder.ok() && r.attempt == run->dag->attempt(task);
      const bool canceled = r.outcome == static_cast<uint8_t>(transport::Outcome::kCanceled) &&
                            run->dag->state(task) == TaskState::kCanceled;
      LogEvent(resent || canceled ? spdlog::level::debug : spdlog::level::warn, "stale_result",
               {{"exec_id", r.exec_id},
                {"attempt", r.attempt},
                {"worker_id", item.worker_id},
                {"reason", s.message()}},
               "stale result for {} attempt {} from worker {} recorded and ignored: {}", r.exec_id,
               r.attempt, item.worker_id, s.message());
      continue;
    }
    FinishIfDone(*run);
  }
}

Status SchedulerCore::CheckHolder(const SchedulerRun& run, int task, const ResultFrom& item) const {
  const storage::ExecutionRecord& held = run.execs[task];
  if (held.attempt != item.result.attempt || held.worker_id.empty() ||
      held.worker_id == item.worker_id) {
    return Status::Ok();
  }
  return Status::NotFound("attempt " + std::to_string(held.attempt) + " is held by worker " +
                          held.worker_id + ", not by the worker that reported it");
}

Status SchedulerCore::ApplyResult(SchedulerRun& run, int task, const ResultFrom& item,
                                  AttemptOutcome outcome, Micros now) {
  const transport::ResultMsg& r = item.result;
  effects_.clear();
  APOLLO11_RETURN_IF_ERROR(run.dag->OnResult(task, r.attempt, outcome, r.exit_code, r.retryable,
                                             r.error, now, options_.random->Uniform01(),
                                             &effects_));
  if (outcome != AttemptOutcome::kSuccess && outcome != AttemptOutcome::kAlreadyDone) {
    // Only failures: a success is in the journal and keeps the hot path quiet.
    LogEvent(spdlog::level::info, "attempt_failed",
             {{"run_id", run.run_id},
              {"task_id", run.execs[task].task_id},
              {"exec_id", r.exec_id},
              {"attempt", r.attempt},
              {"worker_id", item.worker_id},
              {"exit_code", r.exit_code},
              {"reason", r.error}},
             "{} attempt {} failed on worker {} (exit {}): {}", r.exec_id, r.attempt,
             item.worker_id, r.exit_code, r.error);
  }
  storage::ExecutionRecord& rec = run.execs[task];
  options_.metrics->AttemptEnded(outcome == AttemptOutcome::kTimeout, now - rec.ready_at);
  rec.exit_code = r.exit_code;
  rec.error = r.error;
  rec.logs_truncated = r.logs_truncated;
  rec.task_output = outcome == AttemptOutcome::kSuccess ? r.task_output : std::string();
  rec.output = r.output.size() > options_.journal_output_cap
                   ? r.output.substr(r.output.size() - options_.journal_output_cap)
                   : r.output;
  if (r.started_at) rec.started_at = r.started_at;
  if (r.started_at && r.finished_at >= r.started_at) {
    run.metrics->AttemptRan(r.finished_at - r.started_at);
  }
  if (run.has_dependents[task]) {
    run.outputs[task] = r.output;
    if (r.output_bytes > r.output.size()) {
      run.output_cut[task] = r.output_bytes;
    } else {
      run.output_cut.erase(task);
    }
  }
  run.stderr_tails[task] = outcome == AttemptOutcome::kSuccess ? "" : r.stderr_tail;
  if (outcome == AttemptOutcome::kSuccess && r.finished_at > r.started_at) {
    batch_.RecordDuration(run.spec().name + "/" + run.task_spec(task).id,
                          r.finished_at - r.started_at);
  }
  if (run.task_spec(task).timeout) staged_.unwatch.execs.push_back({r.exec_id, r.attempt});
  Apply(run, effects_, "worker " + item.worker_id, item.worker_id, task);
  return Status::Ok();
}

void SchedulerCore::OnWorkerGone(const WorkerGone& gone) {
  for (const transport::ExecRef& ref : gone.execs) {
    int task = -1;
    SchedulerRun* run = FindRunOfExec(ref.exec_id, &task);
    if (run == nullptr) continue;
    if (run->dag->attempt(task) != ref.attempt || run->dag->state(task) != TaskState::kRunning) {
      continue;
    }
    effects_.clear();
    Status s = run->dag->OnRequeue(task, ref.attempt, gone.reason, &effects_);
    if (!s.ok()) {
      spdlog::warn("requeue of {} refused: {}", ref.exec_id, s.message());
      continue;
    }
    LogEvent(spdlog::level::warn, "requeued",
             {{"exec_id", ref.exec_id},
              {"attempt", ref.attempt},
              {"worker_id", gone.worker_id},
              {"reason", gone.reason}},
             "{} attempt {} requeued: {}", ref.exec_id, ref.attempt, gone.reason);
    Apply(*run, effects_, "reconciler", "", task);
    FinishIfDone(*run);
  }
}

void SchedulerCore::OnDeadlineExceeded(const DeadlineExceeded& exceeded) {
  const Micros now = clock_->Now();
  for (const Deadline& d : exceeded.exceeded) {
    int task = -1;
    SchedulerRun* run = FindRunOfExec(d.exec_id, &task);
    if (run == nullptr || run->dag->attempt(task) != d.attempt ||
        run->dag->state(task) != TaskState::kRunning) {
      continue;
    }
    effects_.clear();
    std::string error = "no result within the " + FormatDuration(Millis(d.timeout_ms)) +
                        " timeout plus grace: timed out by the coordinator";
    Status s = run->dag->OnResult(task, d.attempt, AttemptOutcome::kTimeout, -1, true, error, now,
                                  options_.random->Uniform01(), &effects_);
    if (!s.ok()) continue;
    options_.metrics->AttemptEnded(true, now - run->execs[task].ready_at);
    run->execs[task].error = error;
    staged_.cancels.execs.push_back({d.exec_id, d.attempt});
    Apply(*run, effects_, "reconciler", "", task);
    FinishIfDone(*run);
  }
}

void SchedulerCore::ExpandForeach(SchedulerRun& run, int task) {
  engine::Effects effects;
  if (!foreach_.Expand(run, task, &effects)) return;
  Apply(run, effects, "scheduler");
  FinishIfDone(run);  // a foreach task that ended at once may end the run
}

void SchedulerCore::Apply(SchedulerRun& run, engine::Effects& effects, const std::string& actor,
                          const std::string& worker_id, int cause_task) {
  const Micros now = clock_->Now();
  for (engine::TaskTransition& t : effects.transitions) {
    ApplyTransition(run, t, actor, worker_id, cause_task, now);
  }
  for (int task : effects.dispatch) {
    staged_.enqueue.execs.push_back(dispatch_.Build(run, task, now));
  }
  for (const auto& [task, due] : effects.retry_timers) GateRetry(run, task, due, now);
  // Last: an expansion applies effects of its own (its instances' READY).
  for (int task : effects.expand) ExpandForeach(run, task);
  for (int task : effects.kill) {
    staged_.cancels.execs.push_back({run.ExecId(task), run.dag->attempt(task)});
    if (run.task_spec(task).timeout) {
      staged_.unwatch.execs.push_back({run.ExecId(task), run.dag->attempt(task)});
    }
  }
  StartQueuedRetries(now);
}

void SchedulerCore::ApplyTransition(SchedulerRun& run, engine::TaskTransition& t,
                                    const std::string& actor, const std::string& worker_id,
                                    int cause_task, Micros now) {
  storage::ExecutionRecord& rec = run.execs[t.task];
  storage::TransitionRecord tr;
  tr.ts = now;
  tr.run_id = run.run_id;
  tr.task_id = rec.task_id;
  tr.exec_id = run.ExecId(t.task);
  tr.attempt = t.attempt;
  tr.from = t.from;
  tr.to = t.to;
  if (t.to == TaskState::kFailed || t.to == TaskState::kTimeout) {
    StageAlert(t.to == TaskState::kFailed ? alerts::AlertType::kRetriesExhausted
                                          : alerts::AlertType::kTimeout,
               run, t.task, t.attempt, t.reason);
  }
  if (t.to == TaskState::kRunning) tr.worker_id = worker_id;
  // Why it was canceled (by the operator, or because an upstream failed) is
  // the task's error in status: no attempt of it failed.
  if (t.to == TaskState::kCanceled) rec.error = t.reason;
  // Likewise why a foreach task ended without success (no items, too many,
  // failed instances): it ran nothing itself.
  const bool fanout = !run.dag->IsInstance(t.task) && !run.spec().tasks[t.task].foreach.empty();
  if (fanout && IsFinal(t.to) && t.to != TaskState::kSuccess) rec.error = t.reason;
  tr.reason = std::move(t.reason);
  tr.actor = (cause_task < 0 || t.task == cause_task) ? actor : "scheduler";
  batch_.Append(std::move(tr));
  options_.metrics->Transition(t.from, t.to, run.metrics);

  if (InFlight(t.from)) --in_flight_;
  if (InFlight(t.to)) ++in_flight_;
  if (t.from == TaskState::kRetrying) retry_gate_.Leave(run.run_id, t.task, &retry_starts_);
  if (t.from == TaskState::kRunning) {
    // A slow flag concerns one attempt; it ends with it (history keeps it).
    rec.slow = storage::SlowFlag::kNone;
    rec.slow_reason.clear();
    rec.flagged_at = 0;
  }
  if (t.to == TaskState::kRunning) rec.logs_truncated.clear();  // a new attempt's files
  rec.state = t.to;
  rec.attempt = t.attempt;
  rec.retries_used = run.dag->retries_used(t.task);
  rec.requeues = run.dag->requeues(t.task);
  switch (t.to) {
    case TaskState::kReady:
      rec.ready_at = now;
      rec.next_retry_at = 0;
      break;
    case TaskState::kRunning:
      if (!worker_id.empty()) rec.worker_id = worker_id;
      break;
    default:
      if (IsFinal(t.to)) rec.finished_at = now;
      break;
  }
  run.MarkDirty(t.task);
  run.progress_dirty = true;
}

void SchedulerCore::FinishIfDone(SchedulerRun& run) {
  if (run.finished || !run.dag->Finished()) return;
  run.finished = true;
  const Micros now = clock_->Now();
  run.record.status = run.dag->Outcome();
  run.record.finished_at = now;
  if (run.record.reason.empty()) {
    auto count = [&](TaskState s) { return run.dag->count(s); };
    run.record.reason = std::to_string(count(TaskState::kSuccess)) + " succeeded, " +
                        std::to_string(count(TaskState::kFailed)) + " failed, " +
                        std::to_string(count(TaskState::kTimeout)) + " timed out, " +
                        std::to_string(count(TaskState::kSkipped)) + " skipped, " +
                        std::to_string(count(TaskState::kCanceled)) + " canceled";
  }
  // A run ends SUCCESS with failed tasks only when a branch handled each
  // (DagRun::Outcome): say so wherever the run is shown.
  if (run.record.status == RunStatus::kSuccess) {
    run.record.handled_failures = static_cast<uint32_t>(run.dag->count(TaskState::kFailed) +
                                                        run.dag->count(TaskState::kTimeout));
    if (run.record.handled_failures > 0) run.record.reason += HandledFailuresNote(*run.dag);
  }
  batch_.PutRun(run.record);
  options_.metrics->RunFinished(run.record.status, run.metrics,
                                run.record.finished_at - run.record.started_at,
                                run.record.handled_failures > 0);
  RunFinished f;
  f.run_id = run.run_id;
  f.status = static_cast<uint8_t>(run.record.status);
  f.reason = run.record.reason;
  staged_.finished.push_back(std::move(f));
  run.progress_dirty = true;
  run.feed_dirty = true;
  switch (run.record.status) {
    case RunStatus::kFailed:
      StageAlert(alerts::AlertType::kRunFailed, run, -1, 0, run.record.reason);
      break;
    case RunStatus::kCanceled:
      StageAlert(alerts::AlertType::kRunCanceled, run, -1, 0, run.record.reason);
      break;
    case RunStatus::kSuccess:
      StageAlert(alerts::AlertType::kRunSucceeded, run, -1, 0, run.record.reason);
      if (run.record.handled_failures > 0) {
        StageAlert(alerts::AlertType::kRunFailuresHandled, run, -1, 0, run.record.reason);
      }
      break;
    default:
      break;
  }
  LogEvent(spdlog::level::info, "run_finished",
           {{"run_id", run.run_id},
            {"state", ToString(run.record.status)},
            {"reason", run.record.reason}},
           "run {} finished {}: {}", run.run_id, ToString(run.record.status), run.record.reason);
}

std::string SchedulerCore::PipelineOf(const std::string& run_id) const {
  auto it = runs_.find(run_id);
  return it == runs_.end() ? "" : it->second->record.pipeline_name;
}

std::vector<std::string> SchedulerCore::ActiveRunIds() const {
  std::vector<std::string> ids;
  ids.reserve(runs_.size());
  for (const auto& [id, run] : runs_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());
  return ids;
}

void SchedulerCore::StagePipelineRejected(const std::string& name, const std::string& errors) {
  alerts::AlertEvent a;
  a.type = alerts::AlertType::kPipelineRejected;
  a.pipeline = name;
  a.ts = clock_->Now();
  a.reason = errors;
  staged_alerts_.push_back(std::move(a));
}

}  // namespace apollo11::actors
