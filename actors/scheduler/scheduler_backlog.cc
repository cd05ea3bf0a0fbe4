// SchedulerCore: the backlog cap (what may be promoted) and why a task waits
// (Explain). Split from scheduler_core.cc by concern, as storage/journal_gc.cc
// is from journal.cc.

#include <spdlog/spdlog.h>

#include "actors/queries/task_explain.h"
#include "actors/scheduler/scheduler_core.h"
#include "common/log_event.h"

namespace apollo11::actors {

namespace {

// A large run meets the cap on nearly every turn (a 1M-task run paused and
// resumed 3,700 times): that is flow control, not news. One pause, and its
// resume, is logged per this interval; the others are counted (metric
// apollo11_backlog_pauses_total) and the next logged pause says how many.
constexpr Micros kBacklogLogEvery = 60 * kMicrosPerSecond;

}  // namespace

void SchedulerCore::UpdateBacklogPause() {
  if (!paused_ && in_flight_ >= options_.max_backlog) {
    paused_ = true;
    ++backlog_events_;
    options_.metrics->backlog_pauses.Inc();
    const Micros now = clock_->Steady();
    pause_logged_ = backlog_events_ == 1 || now - backlog_logged_at_ >= kBacklogLogEvery;
    if (pause_logged_) {
      const std::string since =
          unlogged_pauses_ == 0
              ? std::string()
              : " (and " + std::to_string(unlogged_pauses_) + " times since the last one logged)";
      LogEvent(spdlog::level::warn, "backlog_paused",
               {{"backlog", in_flight_},
                {"cap", options_.max_backlog},
                {"unlogged_pauses", unlogged_pauses_}},
               "backlog at its cap ({} executions READY or RUNNING): promotion paused{}",
               in_flight_, since);
      backlog_logged_at_ = now;
      unlogged_pauses_ = 0;
    } else {
      ++unlogged_pauses_;
    }
    alerts::AlertEvent a;
    a.type = alerts::AlertType::kBacklogAtCap;
    a.ts = clock_->Now();
    a.reason = "backlog at its cap (" + std::to_string(in_flight_) + " executions READY or " +
               "RUNNING, cap " + std::to_string(options_.max_backlog) +
               "): promotion paused until it falls below " +
               std::to_string(static_cast<int>(options_.resume_fraction * 100)) + "%";
    staged_alerts_.push_back(std::move(a));
  } else if (paused_ &&
             in_flight_ < static_cast<size_t>(options_.resume_fraction * options_.max_backlog)) {
    paused_ = false;
    if (pause_logged_) {
      LogEvent(spdlog::level::info, "backlog_resumed", {{"backlog", in_flight_}},
               "backlog down to {}: promotion resumed", in_flight_);
    }
  }
}

void SchedulerCore::Promote() {
  UpdateBacklogPause();
  if (paused_) return;
  for (auto& [id, run] : runs_) {
    if (run->finished) continue;
    if (in_flight_ >= options_.max_backlog) break;
    int budget = static_cast<int>(options_.max_backlog - in_flight_);
    effects_.clear();
    if (run->dag->PromoteEligible(budget, &effects_) > 0) Apply(*run, effects_, "scheduler");
  }
}

Result<std::string> SchedulerCore::Explain(const std::string& run_id, const std::string& task_id,
                                           const WorkersSnapshot& workers) const {
  auto it = runs_.find(run_id);
  if (it == runs_.end()) return Status::NotFound("run " + run_id + " is not active");
  const SchedulerRun& run = *it->second;
  const int task = run.FindSlot(task_id);
  if (task < 0) return Status::InvalidInput("run " + run_id + " has no task " + task_id);
  BacklogFacts backlog;
  backlog.paused = paused_;
  backlog.in_flight = in_flight_;
  backlog.max_backlog = options_.max_backlog;
  backlog.resume_fraction = options_.resume_fraction;
  backlog.retrying = retry_gate_.waiting();
  backlog.max_retrying = retry_gate_.max_retrying();
  backlog.retry_queue_position = retry_gate_.QueuePosition(run_id, task);
  return ExplainTask(run, task, backlog, workers);
}

// ---- staging ----------------------------------------------------------------

}  // namespace apollo11::actors
