#include "actors/queries/task_explain.h"

#include "engine/placement.h"

namespace apollo11::actors {
namespace {

std::string HeldByBacklog(const BacklogFacts& b) {
  return "; held because the backlog is at its cap (" + std::to_string(b.in_flight) +
         " executions READY or RUNNING, cap " + std::to_string(b.max_backlog) +
         "); promotion resumes below " + std::to_string(static_cast<int>(b.resume_fraction * 100)) +
         "%";
}

// Where a READY task stands with the connected workers.
std::string WaitingForWorker(const dsl::TaskSpec& spec, const WorkersSnapshot& workers) {
  int in_group = 0, with_credit = 0, labeled = 0;
  for (const WorkerInfo& w : workers.workers) {
    if (w.group != spec.group) continue;
    ++in_group;
    // Snapshot labels are sorted by the dispatcher.
    if (!engine::HasLabels(w.labels, spec.labels)) continue;
    ++labeled;
    with_credit += w.credits > 0 ? 1 : 0;
  }
  std::string labels;
  for (const std::string& l : spec.labels) labels += (labels.empty() ? "" : ", ") + l;
  if (in_group == 0) {
    return "; no worker of group '" + spec.group + "' is connected: it waits until one joins";
  }
  if (labeled == 0) {
    return "; no connected worker of group '" + spec.group + "' has all the labels [" + labels +
           "] (" + std::to_string(in_group) + " connected): it waits until one with them joins";
  }
  if (with_credit == 0) {
    return "; all " + std::to_string(labeled) + " workers of group '" + spec.group + "'" +
           (labels.empty() ? "" : " with labels [" + labels + "]") + " are busy";
  }
  return "; being placed on a worker of group '" + spec.group + "'";
}

std::string Running(const storage::ExecutionRecord& rec, const std::string& exec_id) {
  // Placed but not started: queued on the worker behind its busy slots (or
  // its STARTED is still on the way).
  std::string text = rec.started_at == 0 ? "; queued on worker " + rec.worker_id
                                         : "; on worker " + rec.worker_id + " since " +
                                               FormatTimestamp(rec.started_at);
  if (rec.slow == storage::SlowFlag::kFlagged) {
    text += "; flagged slow and waiting for confirmation (" + rec.slow_reason +
            "): apollo11 confirm " + exec_id + " --kill|--keep";
  } else if (rec.slow == storage::SlowFlag::kKept) {
    text += "; flagged slow, then kept by the operator";
  }
  return text;
}

}  // namespace

std::string ExplainTask(const SchedulerRun& run, int task, const BacklogFacts& backlog,
                        const WorkersSnapshot& workers) {
  const TaskState state = run.dag->state(task);
  std::string text = std::string(ToString(state)) + ": " + run.dag->Explain(task);
  switch (state) {
    case TaskState::kPending:
      if (run.dag->IsEligible(task) && backlog.paused) text += HeldByBacklog(backlog);
      break;
    case TaskState::kReady:
      text += WaitingForWorker(run.task_spec(task), workers);
      break;
    case TaskState::kRetrying:
      if (backlog.retry_queue_position) {
        text += "; queued at position " + std::to_string(*backlog.retry_queue_position) +
                " because " + std::to_string(backlog.retrying) +
                " retries already wait with a timer (--max-retrying " +
                std::to_string(backlog.max_retrying) +
                "): its backoff starts when one of them comes due";
      } else {
        text += "; next attempt at " + FormatTimestamp(run.execs[task].next_retry_at);
      }
      break;
    case TaskState::kRunning:
      text += Running(run.execs[task], run.ExecId(task));
      break;
    default:
      break;
  }
  return text;
}

}  // namespace apollo11::actors
