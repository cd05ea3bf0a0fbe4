// DagRun: the reason journaled with a promotion (ReadyReason: which
// dependencies were met) and with an impossible task's end (ImpossibleFate:
// which upstream decided, and whether that skips or cancels it). Split from
// dag_run.cc by concern.

#include "engine/dag_run.h"

namespace apollo11::engine {
namespace {

using dsl::DependencyCondition;
using S = TaskState;

const char* PastTense(S s) {
  switch (s) {
    case S::kSuccess:
      return "succeeded";
    case S::kFailed:
      return "failed";
    case S::kTimeout:
      return "timed out";
    case S::kSkipped:
      return "skipped";
    case S::kCanceled:
      return "canceled";
    default:
      return ToString(s);
  }
}

// "clean failed (on: failure)", "fetch succeeded".
void AppendEdge(std::string* out, const std::string& id, S upstream, DependencyCondition on) {
  *out += id;
  *out += ' ';
  *out += PastTense(upstream);
  if (on != DependencyCondition::kSuccess) {
    *out += " (on: ";
    *out += dsl::ToString(on);
    *out += ')';
  }
}

constexpr int kNamedInReason = 3;

}  // namespace

std::string DagRun::ImpossibleFate(int task, int last_upstream, S* fate) const {
  // The unmet upstream that decides: for trigger all the one whose end made
  // the task impossible; otherwise (trigger any, or Resume) the first unmet
  // upstream that cancels, else the first unmet one.
  int decider = -1;
  DependencyCondition on = DependencyCondition::kSuccess;
  const bool all = graph_->task(task).trigger == dsl::Trigger::kAll;
  if (all && last_upstream >= 0) {
    for (const Edge& e : graph_->Upstream(task)) {
      if (e.task == last_upstream && !EdgeMet(e.on, tasks_[e.task].state)) {
        decider = e.task;
        on = e.on;
        break;
      }
    }
  }
  if (decider < 0) {
    for (const Edge& e : graph_->Upstream(task)) {
      const S s = tasks_[e.task].state;
      if (!IsFinal(s) || EdgeMet(e.on, s)) continue;
      if (decider < 0 || (CancelsDownstream(e.task) && !CancelsDownstream(decider))) {
        decider = e.task;
        on = e.on;
      }
    }
  }
  if (decider < 0) {  // cannot happen when Impossible() holds
    *fate = S::kCanceled;
    return "dependencies can no longer be met";
  }
  const S s = tasks_[decider].state;
  std::string reason;
  if (!all && graph_->InDegree(task) > 1) {
    reason = "none of " + std::to_string(graph_->InDegree(task)) + " dependencies met; ";
  }
  if (CancelsDownstream(decider)) {
    *fate = S::kCanceled;
    reason += "upstream " + graph_->id(decider) + " " + PastTense(s);
  } else if (s == S::kSkipped) {
    *fate = S::kSkipped;
    reason += "upstream " + graph_->id(decider) + " skipped";
  } else {
    *fate = S::kSkipped;
    reason += "branch not taken: " + graph_->id(decider) + " " + PastTense(s) + " (waits on " +
              dsl::ToString(on) + ")";
  }
  return reason;
}

std::string DagRun::ReadyReason(int task) const {
  const int in = graph_->InDegree(task);
  if (in == 0) return "no dependencies";
  const bool all = graph_->task(task).trigger == dsl::Trigger::kAll;
  std::string reason = all ? (in == 1 ? "dependency met: " : "dependencies met: ")
                           : "dependency met (trigger: any): ";
  int named = 0, more = 0;
  for (const Edge& e : graph_->Upstream(task)) {
    const S s = tasks_[e.task].state;
    if (!all && EarlyMet(e)) {  // a foreach still running: one instance succeeded
      if (named++ > 0) reason += ", ";
      reason += graph_->id(e.task) + " has an instance that succeeded";
      continue;
    }
    if (!EdgeMet(e.on, s)) continue;
    if (named == kNamedInReason) {
      if (all) {  // every edge is met: no need to walk a wide join
        more = in - kNamedInReason;
        break;
      }
      ++more;
      continue;
    }
    if (named++ > 0) reason += ", ";
    AppendEdge(&reason, graph_->id(e.task), s, e.on);
  }
  if (more > 0) reason += " +" + std::to_string(more) + " more";
  return reason;
}

}  // namespace apollo11::engine
