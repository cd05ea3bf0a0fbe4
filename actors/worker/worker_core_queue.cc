// WorkerCore: a DISPATCH becoming an attempt, at once or from the worker's
// queue when a slot frees (issue 18), and an attempt that never starts.
// Split from worker_core.cc.

#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>

#include "actors/worker/worker_core.h"
#include "common/log_event.h"
#include "dsl/pipeline.h"
#include "dsl/task_fields.h"
#include "dsl/task_types.h"

namespace apollo11::actors {

void WorkerCore::OnDispatch(transport::Dispatch&& d) {
  if (options_.drop_dispatches > 0) {
    --options_.drop_dispatches;
    spdlog::warn("worker {}: test hook dropped DISPATCH of {} attempt {}", options_.worker_id,
                 d.exec_id, d.attempt);
    return;
  }
  Key key{d.exec_id, d.attempt};
  auto existing = entries_.find(key);
  if (existing != entries_.end()) {
    // At-least-once delivery: a duplicate changes nothing, but a finished
    // one's result is worth resending.
    if (existing->second.finished) {
      Send(transport::MsgType::kResult, existing->second.result);
      existing->second.last_sent = clock_->Steady();
    }
    return;
  }
  const transport::TaskPayload& p = d.task;
  if (!p.refusal.empty()) {
    FinishUnstarted(key, p.refusal, /*retryable=*/false);
    return;
  }
  // A type this build does not know (a newer coordinator's) runs nothing.
  const std::optional<dsl::TaskType> type = dsl::TaskTypeFromWire(p.type);
  if (!type.has_value()) {
    std::string error = executor::UnknownTaskTypeError(p.type);
    LogEvent(spdlog::level::warn, "unknown_task_type",
             {{"exec_id", key.first}, {"attempt", key.second}, {"type", p.type}},
             "{} attempt {}: {}", key.first, key.second, error);
    FinishUnstarted(key, std::move(error), /*retryable=*/false);
    return;
  }
  executor::ExecRequest req;
  req.exec_id = d.exec_id;
  req.attempt = d.attempt;
  dsl::CopyWireFields(p, &req);
  req.type = *type;
  req.timeout = Millis(p.timeout_ms);
  req.kill_grace = Millis(p.kill_grace_ms);
  req.run_precheck = p.run_precheck;
  req.inputs.reserve(p.inputs.size());
  for (const transport::TaskInput& in : p.inputs) {
    req.inputs.push_back({in.kind == static_cast<uint8_t>(transport::InputKind::kOutput)
                              ? executor::TaskInput::Kind::kOutput
                              : executor::TaskInput::Kind::kParam,
                          in.name, in.value});
  }

  entries_[key] = Entry{};
  if (queue_.empty() && runner_->running() < run_slots_) {
    Launch(key, req, d.trace_id);
    return;
  }
  // Every slot is busy: it waits here, held, and starts when one frees.
  queue_.push_back({key, std::move(req), std::move(d.trace_id)});
}

void WorkerCore::Launch(const Key& key, const executor::ExecRequest& req,
                        const std::string& trace_id) {
  const Micros now = clock_->Now();
  const Micros launch_start = clock_->Steady();
  Status s = runner_->Launch(req);
  options_.metrics->Launched(s.ok(), clock_->Steady() - launch_start, runner_->running());
  if (!s.ok()) {
    FinishUnstarted(key, "worker " + options_.worker_id + " could not start it: " + s.message(),
                    /*retryable=*/true);
    return;
  }
  if (req.type != dsl::TaskType::kNoop) {
    entries_[key].log_events = true;
    LogEvent(spdlog::level::info, "started",
             {{"exec_id", key.first}, {"attempt", key.second}, {"trace_id", trace_id}},
             "{} attempt {} started", key.first, key.second);
    transport::Started started{key.first, key.second, now};
    Send(transport::MsgType::kStarted, started);
  }
}

void WorkerCore::StartQueued() {
  if (queue_.empty() || !hello_answered_) return;
  const Micros interval = options_.heartbeat.count() * kMicrosPerMilli;
  const Micros hold = interval * std::max(1, options_.liveness - 1);
  if (clock_->Steady() - last_frame_ > hold) return;
  while (!queue_.empty() && runner_->running() < run_slots_) {
    Queued next = std::move(queue_.front());
    queue_.pop_front();
    Launch(next.key, next.request, next.trace_id);
  }
}

void WorkerCore::DropQueued(const std::string& why) {
  if (queue_.empty()) return;
  LogEvent(spdlog::level::warn, "queue_dropped",
           {{"worker_id", options_.worker_id}, {"count", queue_.size()}, {"reason", why}},
           "worker {}: dropped {} queued executions without starting them ({}); the coordinator "
           "requeues them",
           options_.worker_id, queue_.size(), why);
  for (const Queued& q : queue_) entries_.erase(q.key);
  queue_.clear();
}

bool WorkerCore::CancelQueued(const Key& key) {
  auto it =
      std::find_if(queue_.begin(), queue_.end(), [&key](const Queued& q) { return q.key == key; });
  if (it == queue_.end()) return false;
  queue_.erase(it);
  const Micros now = clock_->Now();
  Entry& e = entries_[key];
  e.finished = true;
  e.result.exec_id = key.first;
  e.result.attempt = key.second;
  e.result.outcome = static_cast<uint8_t>(transport::Outcome::kCanceled);
  e.result.exit_code = -1;
  e.result.retryable = false;
  e.result.error = "canceled while queued on worker " + options_.worker_id + " (never started)";
  e.result.started_at = now;
  e.result.finished_at = now;
  Report({key});
  GrantCredit(1);
  return true;
}

uint32_t WorkerCore::Held() const {
  return static_cast<uint32_t>(runner_->running() + queue_.size());
}

void WorkerCore::FinishUnstarted(const Key& key, std::string error, bool retryable) {
  const Micros now = clock_->Now();
  Entry& e = entries_[key];
  e.finished = true;
  e.result.exec_id = key.first;
  e.result.attempt = key.second;
  e.result.outcome = static_cast<uint8_t>(transport::Outcome::kRejected);
  e.result.exit_code = -1;
  e.result.retryable = retryable;
  e.result.error = std::move(error);
  e.result.started_at = now;
  e.result.finished_at = now;
  Report({key});
  GrantCredit(1);
}

}  // namespace apollo11::actors
