// DagRun: the rules that move a run's task states (dag_run.h). The reason
// text of a promotion and of an impossible task's end is in
// dag_run_reasons.cc; foreach fan-out in dag_run_foreach.cc; Explain in
// dag_run_explain.cc.

#include "engine/dag_run.h"

#include <algorithm>

#include "engine/retry.h"

namespace apollo11::engine {
namespace {

using S = TaskState;

bool IsActive(S s) { return s == S::kReady || s == S::kRunning || s == S::kRetrying; }

}  // namespace

DagRun::DagRun(std::shared_ptr<const RunGraph> graph, DagRunOptions options)
    : graph_(std::move(graph)), options_(options) {
  options_.max_requeues = std::clamp(options_.max_requeues, 0, 65535);
  tasks_.resize(graph_->size());
  retry_due_.assign(graph_->size(), 0);
  counts_[static_cast<int>(S::kPending)] = graph_->size();
}

Status DagRun::CheckIndex(int task) const {
  if (task < 0 || task >= slots()) {
    return Status::InvalidInput("no task with index " + std::to_string(task));
  }
  return Status::Ok();
}

Status DagRun::Transition(int task, S to, std::string reason, Effects* out) {
  const S from = tasks_[task].state;
  if (!IsAllowedTransition(from, to)) {
    return Status::Internal("illegal transition of task '" + Id(task) + "': " + ToString(from) +
                            " -> " + ToString(to) + " (" + reason + ")");
  }
  Record(task, to, std::move(reason), out);
  return Status::Ok();
}

void DagRun::Record(int task, S to, std::string reason, Effects* out) {
  TaskRt& t = tasks_[task];
  const S from = t.state;
  t.state = to;
  --counts_[static_cast<int>(from)];
  ++counts_[static_cast<int>(to)];
  if (IsFinal(to)) ++final_count_;
  if (IsInstance(task)) {  // its task holds the concurrency slot and the outcome
    out->transitions.push_back({task, t.attempt, from, to, std::move(reason)});
    return;
  }
  active_ += static_cast<int>(IsActive(to)) - static_cast<int>(IsActive(from));
  if ((to == S::kFailed && !graph_->FailureHandled(task)) ||
      (to == S::kTimeout && !graph_->TimeoutHandled(task))) {
    ++unhandled_failures_;
  }
  out->transitions.push_back({task, t.attempt, from, to, std::move(reason)});
}

bool DagRun::Eligible(int task) const {
  const int in = graph_->InDegree(task);
  if (in == 0) return true;
  const TaskRt& t = tasks_[task];
  return graph_->task(task).trigger == dsl::Trigger::kAll ? t.met == in : t.met > 0;
}

bool DagRun::Impossible(int task) const {
  const int in = graph_->InDegree(task);
  const TaskRt& t = tasks_[task];
  return graph_->task(task).trigger == dsl::Trigger::kAll
             ? t.resolved > t.met
             : (in > 0 && t.resolved == in && t.met == 0);
}

bool DagRun::ConcurrencyFull() const {
  const int limit = graph_->spec().concurrency;
  return limit > 0 && active_ >= limit;
}

bool DagRun::CancelsDownstream(int upstream) const {
  switch (tasks_[upstream].state) {
    case S::kCanceled:
      return true;
    case S::kFailed:
      return !graph_->FailureHandled(upstream);
    case S::kTimeout:
      return !graph_->TimeoutHandled(upstream);
    default:
      return false;
  }
}

Status DagRun::Evaluate(int task, int last_upstream, Effects* out, std::vector<int>* settled) {
  TaskRt& t = tasks_[task];
  if (t.state != S::kPending || t.queued) return Status::Ok();
  if (Eligible(task)) {
    t.queued = true;
    ready_queue_.push({graph_->task(task).priority, task});
  } else if (Impossible(task)) {
    S fate;
    std::string reason = ImpossibleFate(task, last_upstream, &fate);
    APOLLO11_RETURN_IF_ERROR(Transition(task, fate, std::move(reason), out));
    settled->push_back(task);
  }
  return Status::Ok();
}

Status DagRun::Drain(Effects* out) {
  while (!work_.empty()) {
    const int u = work_.back();
    work_.pop_back();
    const S s = tasks_[u].state;
    for (const Edge& e : graph_->Dependents(u)) {
      TaskRt& v = tasks_[e.task];
      ++v.resolved;
      if (EdgeMet(e.on, s)) ++v.met;
      APOLLO11_RETURN_IF_ERROR(Evaluate(e.task, u, out, &work_));
    }
  }
  return Status::Ok();
}

Status DagRun::Propagate(int task, Effects* out) {
  if (IsInstance(task)) return InstanceEnded(task, out);
  work_.clear();
  work_.push_back(task);
  return Drain(out);
}

void DagRun::Start(Micros /*now*/, Effects* out) {
  if (started_) return;
  started_ = true;
  work_.clear();
  for (int i = 0; i < graph_->size(); ++i) {
    if (tasks_[i].state == S::kSuccess) work_.push_back(i);  // reused
  }
  (void)Drain(out);
  for (int i = 0; i < graph_->size(); ++i) {
    if (graph_->InDegree(i) == 0) (void)Evaluate(i, -1, out, &work_);
  }
}

Status DagRun::Reuse(int task, std::string reason, Effects* out) {
  if (started_) return Status::Internal("Reuse after the run started");
  if (task < 0 || task >= graph_->size()) {
    return Status::InvalidInput("no task with index " + std::to_string(task));
  }
  if (!IsReuseTransition(tasks_[task].state, S::kSuccess)) {
    return Status::InvalidInput("task '" + Id(task) + "' is " + ToString(tasks_[task].state) +
                                ", not PENDING: it cannot be reused");
  }
  Record(task, S::kSuccess, std::move(reason), out);
  return Status::Ok();
}

int DagRun::PromoteEligible(int budget, Effects* out) {
  int promoted = 0;
  while (promoted < budget && !ready_queue_.empty() && !ConcurrencyFull()) {
    const int task = ready_queue_.top().task;
    ready_queue_.pop();
    if (tasks_[task].state != S::kPending) continue;  // canceled while it waited
    tasks_[task].attempt = 1;
    if (!Transition(task, S::kReady, ReadyReason(task), out).ok()) continue;
    (graph_->task(task).foreach.empty() ? out->dispatch : out->expand).push_back(task);
    ++promoted;
  }
  return promoted;
}

Status DagRun::OnDispatched(int task, uint32_t attempt, const std::string& worker, Micros,
                            Effects* out) {
  APOLLO11_RETURN_IF_ERROR(CheckIndex(task));
  const TaskRt& t = tasks_[task];
  if (t.state != S::kReady || attempt != t.attempt) {
    return Status::NotFound("stale dispatch of '" + Id(task) + "' attempt " +
                            std::to_string(attempt) + " (current " + std::to_string(t.attempt) +
                            ", " + ToString(t.state) + ")");
  }
  return Transition(task, S::kRunning, "dispatched to worker " + worker, out);
}

Status DagRun::OnResult(int task, uint32_t attempt, AttemptOutcome outcome, int exit_code,
                        bool retryable, const std::string& error, Micros now, double u01,
                        Effects* out) {
  APOLLO11_RETURN_IF_ERROR(CheckIndex(task));
  TaskRt& t = tasks_[task];
  if (t.state != S::kRunning || attempt != t.attempt || IsFanout(task)) {
    return Status::NotFound("stale result for attempt " + std::to_string(attempt) + " (current " +
                            std::to_string(t.attempt) + ", " + ToString(t.state) + ") of '" +
                            Id(task) + "'");
  }
  if (outcome == AttemptOutcome::kSuccess || outcome == AttemptOutcome::kAlreadyDone) {
    std::string reason = outcome == AttemptOutcome::kAlreadyDone ? "precheck says already done"
                         : exit_code == 0                        ? std::string("exited 0")
                                          : "succeeded (code " + std::to_string(exit_code) + ")";
    // A success's error is a note, e.g. "killed 2 leftover processes".
    if (outcome == AttemptOutcome::kSuccess && !error.empty()) reason += "; " + error;
    APOLLO11_RETURN_IF_ERROR(Transition(task, S::kSuccess, std::move(reason), out));
    return Propagate(task, out);
  }

  const dsl::TaskSpec& spec = Spec(task);
  const dsl::RetryPolicy* policy = spec.retry ? &*spec.retry : nullptr;
  const bool timed_out = outcome == AttemptOutcome::kTimeout;
  std::string reason = "attempt " + std::to_string(attempt);
  if (timed_out) {
    reason += spec.timeout ? " timed out after " + FormatDuration(*spec.timeout) : " timed out";
  } else {
    reason += " failed (";
    reason += error.empty() ? "exit code " + std::to_string(exit_code) : error;
    reason += ')';
  }

  if (ShouldRetry(policy, t.retries_used, outcome, exit_code, retryable)) {
    const int retry = t.retries_used + 1;
    Millis delay = RetryDelay(*policy, retry, u01);
    if (options_.retry_stagger > 0) {
      delay +=
          StaggerOffset(RetryDelay(*policy, retry, 0.5), options_.retry_stagger,
                        RetryDomain(graph_->spec().name), options_.stagger_key + "." + Id(task));
    }
    reason += "; retry " + std::to_string(retry) + " of " + std::to_string(policy->max_retries) +
              " in " + FormatDelay(delay);
    APOLLO11_RETURN_IF_ERROR(Transition(task, S::kRetrying, std::move(reason), out));
    t.retries_used = static_cast<uint16_t>(std::min(retry, 65535));
    retry_due_[task] = now + delay.count() * kMicrosPerMilli;
    out->retry_timers.emplace_back(task, retry_due_[task]);
    return Status::Ok();
  }
  if (policy != nullptr && policy->max_retries > 0) {
    if (t.retries_used >= policy->max_retries) {
      reason += "; retries exhausted (" + std::to_string(t.retries_used) + " of " +
                std::to_string(policy->max_retries) + ")";
    } else if (!retryable) {
      reason += "; not retryable";
    } else {
      reason += "; exit code " + std::to_string(exit_code) + " is not in on_exit_codes";
    }
  }
  APOLLO11_RETURN_IF_ERROR(
      Transition(task, timed_out ? S::kTimeout : S::kFailed, std::move(reason), out));
  return Propagate(task, out);
}

Status DagRun::OnRetryDue(int task, Micros, Effects* out) {
  APOLLO11_RETURN_IF_ERROR(CheckIndex(task));
  TaskRt& t = tasks_[task];
  if (t.state != S::kRetrying) {
    return Status::NotFound("no retry pending for '" + Id(task) + "' (" + ToString(t.state) + ")");
  }
  const dsl::TaskSpec& spec = Spec(task);
  std::string reason = "retry " + std::to_string(t.retries_used) + " of " +
                       std::to_string(spec.retry ? spec.retry->max_retries : 0) + " due";
  ++t.attempt;
  Status s = Transition(task, S::kReady, std::move(reason), out);
  if (!s.ok()) {
    --t.attempt;
    return s;
  }
  retry_due_[task] = 0;
  out->dispatch.push_back(task);
  return Status::Ok();
}

Status DagRun::SetRetryDue(int task, Micros due) {
  APOLLO11_RETURN_IF_ERROR(CheckIndex(task));
  if (tasks_[task].state != S::kRetrying) {
    return Status::NotFound("no retry pending for '" + Id(task) + "'");
  }
  retry_due_[task] = due;
  return Status::Ok();
}

Status DagRun::OnRequeue(int task, uint32_t attempt, const std::string& reason, Effects* out) {
  APOLLO11_RETURN_IF_ERROR(CheckIndex(task));
  TaskRt& t = tasks_[task];
  if (t.state != S::kRunning || attempt != t.attempt || IsFanout(task)) {
    return Status::NotFound("stale requeue for attempt " + std::to_string(attempt) + " (current " +
                            std::to_string(t.attempt) + ", " + ToString(t.state) + ") of '" +
                            Id(task) + "'");
  }
  const int requeues = t.requeues + 1;
  if (requeues > options_.max_requeues) {
    APOLLO11_RETURN_IF_ERROR(Transition(
        task, S::kFailed,
        "requeued " + std::to_string(t.requeues) + " times after worker loss; then " + reason,
        out));
    t.requeues = static_cast<uint16_t>(requeues);
    return Propagate(task, out);
  }
  ++t.attempt;
  Status s = Transition(task, S::kReady,
                        reason + " (requeue " + std::to_string(requeues) + " of " +
                            std::to_string(options_.max_requeues) + ")",
                        out);
  if (!s.ok()) {
    --t.attempt;
    return s;
  }
  t.requeues = static_cast<uint16_t>(requeues);
  out->dispatch.push_back(task);
  return Status::Ok();
}

void DagRun::Cancel(const std::string& reason, Effects* out) {
  if (Finished()) return;
  canceled_ = true;
  for (int i = 0; i < slots(); ++i) {
    const S s = tasks_[i].state;
    if (IsFinal(s)) continue;
    // Every non-final state has an edge to CANCELED; nothing to fail here.
    // An expanded foreach task runs nothing itself: its instances are killed.
    if (Transition(i, S::kCanceled, reason, out).ok() && s == S::kRunning && !IsFanout(i)) {
      out->kill.push_back(i);
    }
  }
}

RunStatus DagRun::Outcome() const {
  if (!Finished()) return started_ ? RunStatus::kRunning : RunStatus::kPending;
  if (canceled_) return RunStatus::kCanceled;
  if (unhandled_failures_ > 0 || count(S::kCanceled) > 0) return RunStatus::kFailed;
  return RunStatus::kSuccess;
}

Status DagRun::Restore(int task, S state, uint32_t attempt, int retries_used, int requeues,
                       Micros retry_due) {
  APOLLO11_RETURN_IF_ERROR(CheckIndex(task));
  if (started_) return Status::Internal("Restore after the run started");
  if (retries_used < 0 || retries_used > 65535 || requeues < 0 || requeues > 65535) {
    return Status::InvalidInput("bad retry/requeue counts for '" + Id(task) + "'");
  }
  if (IsActive(state) && attempt == 0) {
    return Status::InvalidInput("task '" + Id(task) + "' is " + ToString(state) +
                                " with attempt 0");
  }
  TaskRt& t = tasks_[task];
  t.state = state;
  t.attempt = attempt;
  t.retries_used = static_cast<uint16_t>(retries_used);
  t.requeues = static_cast<uint16_t>(requeues);
  retry_due_[task] = state == S::kRetrying ? retry_due : 0;
  return Status::Ok();
}

Status DagRun::Resume(Micros now, Effects* out) {
  if (started_) return Status::Internal("Resume after the run started");
  started_ = true;
  const int n = graph_->size();
  std::fill(std::begin(counts_), std::end(counts_), 0);
  final_count_ = active_ = unhandled_failures_ = 0;
  ready_queue_ = {};
  for (int i = n; i < slots(); ++i) {
    ++counts_[static_cast<int>(tasks_[i].state)];
    if (IsFinal(tasks_[i].state)) ++final_count_;
  }
  for (int i = 0; i < n; ++i) {
    TaskRt& t = tasks_[i];
    ++counts_[static_cast<int>(t.state)];
    if (IsFinal(t.state)) ++final_count_;
    if (IsActive(t.state)) ++active_;
    if ((t.state == S::kFailed && !graph_->FailureHandled(i)) ||
        (t.state == S::kTimeout && !graph_->TimeoutHandled(i))) {
      ++unhandled_failures_;
    }
    t.resolved = t.met = 0;
    t.queued = false;
    for (const Edge& e : graph_->Upstream(i)) {
      const S s = tasks_[e.task].state;
      if (!IsFinal(s)) continue;
      ++t.resolved;
      if (EdgeMet(e.on, s)) ++t.met;
    }
  }
  APOLLO11_RETURN_IF_ERROR(ResumeFanouts(out));
  for (int i = 0; i < n; ++i) {
    if (tasks_[i].state != S::kPending) continue;
    work_.clear();
    APOLLO11_RETURN_IF_ERROR(Evaluate(i, -1, out, &work_));
    APOLLO11_RETURN_IF_ERROR(Drain(out));
  }
  // READY instances were emitted by ResumeFanouts.
  for (int i = 0; i < slots(); ++i) {
    const bool foreach = IsInstance(i) || !graph_->task(i).foreach.empty();
    if (tasks_[i].state == S::kReady && !foreach) out->dispatch.push_back(i);
    if (tasks_[i].state == S::kRetrying) {
      out->retry_timers.emplace_back(i, std::max(retry_due_[i], now));
    }
  }
  return Status::Ok();
}

}  // namespace apollo11::engine
