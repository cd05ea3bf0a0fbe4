// DagRun::Explain: why a task is where it is. Split from dag_run.cc by
// concern.

#include "engine/dag_run.h"

namespace apollo11::engine {
namespace {

using dsl::DependencyCondition;
using S = TaskState;

constexpr int kNamedWaiting = 3;  // upstreams named before "+N more"

}  // namespace

std::string DagRun::Explain(int task) const {
  if (!CheckIndex(task).ok()) return "no such task";
  const TaskRt& t = tasks_[task];
  const std::string id = Id(task);
  if (IsFanout(task) && t.state == S::kRunning) return ExplainFanout(task);
  switch (t.state) {
    case S::kPending: {
      if (!started_) return id + " is PENDING: the run has not started";
      if (IsInstance(task)) {
        return id + " is PENDING: waiting for one of " + Id(ParentOf(task)) + "'s max_parallel (" +
               std::to_string(Spec(task).max_parallel) + ") slots";
      }
      if (t.queued) {
        if (ConcurrencyFull()) {
          return id + " is eligible, held by the run's concurrency limit (" +
                 std::to_string(active_) + " of " + std::to_string(graph_->spec().concurrency) +
                 " active)";
        }
        return id + " is eligible, waiting for room in the dispatch backlog";
      }
      const int in = graph_->InDegree(task);
      const bool all = graph_->task(task).trigger == dsl::Trigger::kAll;
      std::string text =
          id + " is PENDING: waiting on " +
          (all ? std::to_string(in - t.met) + " of " + std::to_string(in) + " dependencies: "
               : "any of " + std::to_string(in) + " dependencies: ");
      int named = 0, more = 0;
      for (const Edge& e : graph_->Upstream(task)) {
        const S s = tasks_[e.task].state;
        if (IsFinal(s)) continue;
        if (named == kNamedWaiting) {
          ++more;
          continue;
        }
        if (named++ > 0) text += ", ";
        text += graph_->id(e.task) + " (" + ToString(s);
        if (e.on != DependencyCondition::kSuccess)
          text += std::string(", on: ") + dsl::ToString(e.on);
        text += ')';
      }
      if (more > 0) text += " +" + std::to_string(more) + " more";
      return text;
    }
    case S::kReady:
      return id + " is READY (attempt " + std::to_string(t.attempt) + "), waiting for a worker";
    case S::kRunning:
      return id + " is RUNNING attempt " + std::to_string(t.attempt);
    case S::kRetrying: {
      const dsl::TaskSpec& spec = Spec(task);
      std::string text = id + " is RETRYING: attempt " + std::to_string(t.attempt) +
                         " failed; retry " + std::to_string(t.retries_used) + " of " +
                         std::to_string(spec.retry ? spec.retry->max_retries : 0);
      if (retry_due_[task] == 0) return text + " waits for a retry slot before its backoff starts";
      return text + " due at " + FormatTimestamp(retry_due_[task]);
    }
    default:
      if (t.attempt == 0) return id + " is " + ToString(t.state) + " (never ran)";
      return id + " is " + ToString(t.state) + " after " + std::to_string(t.attempt) +
             (t.attempt == 1 ? " attempt" : " attempts");
  }
}

}  // namespace apollo11::engine
