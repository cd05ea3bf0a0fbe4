// DagRun: foreach fan-out (expansion, instances, their end). Split from
// dag_run.cc by concern, as the scheduler's files are.

#include <algorithm>

#include "engine/dag_run.h"

namespace apollo11::engine {
namespace {

using S = TaskState;

constexpr int kFailedNamed = 5;

}  // namespace

int DagRun::InstanceIndex(int slot) const {
  if (!IsInstance(slot)) return -1;
  return slot - fanout_.at(ParentOf(slot)).first;
}

int DagRun::InstanceSlot(int task, int i) const {
  auto it = fanout_.find(task);
  if (it == fanout_.end() || i < 0 || i >= it->second.count) return -1;
  return it->second.first + i;
}

int DagRun::InstanceCount(int task) const {
  auto it = fanout_.find(task);
  return it == fanout_.end() ? 0 : it->second.count;
}

std::string DagRun::Id(int slot) const {
  if (!IsInstance(slot)) return graph_->id(slot);
  return graph_->id(ParentOf(slot)) + "[" + std::to_string(InstanceIndex(slot)) + "]";
}

DagRun::Fanout& DagRun::AddInstances(int task, int items) {
  Fanout& f = fanout_[task];
  f.first = slots();
  f.count = items;
  tasks_.resize(tasks_.size() + static_cast<size_t>(items));
  retry_due_.resize(tasks_.size(), 0);
  parent_.resize(parent_.size() + static_cast<size_t>(items), task);
  counts_[static_cast<int>(S::kPending)] += items;
  return f;
}

Status DagRun::Expand(int task, int items, const std::string& source, Effects* out,
                      const std::vector<bool>& reused, const std::string& reuse_reason) {
  APOLLO11_RETURN_IF_ERROR(CheckIndex(task));
  if (IsInstance(task) || graph_->task(task).foreach.empty() || IsFanout(task) ||
      tasks_[task].state != S::kReady) {
    return Status::NotFound("'" + Id(task) + "' is not a foreach task waiting for its items");
  }
  if (items <= 0) {
    APOLLO11_RETURN_IF_ERROR(
        Transition(task, S::kSkipped, "foreach over " + source + ": no items", out));
    return Propagate(task, out);
  }
  if (items > options_.max_foreach_items) {
    return FailExpansion(
        task,
        "foreach over " + source + " gave " + std::to_string(items) + " items, over the cap of " +
            std::to_string(options_.max_foreach_items) + " (the coordinator's --max-foreach-items)",
        out);
  }
  Fanout& f = AddInstances(task, items);
  const int cap = graph_->task(task).max_parallel;
  std::string reason = "foreach over " + source + ": expanded into " + std::to_string(items) +
                       (items == 1 ? " instance" : " instances");
  if (cap > 0) reason += " (max_parallel " + std::to_string(cap) + ")";
  APOLLO11_RETURN_IF_ERROR(Transition(task, S::kRunning, std::move(reason), out));
  for (int i = 0; i < items && static_cast<size_t>(i) < reused.size(); ++i) {
    if (!reused[static_cast<size_t>(i)]) continue;
    Record(f.first + i, S::kSuccess, reuse_reason, out);  // attempt 0: IsReuseTransition
    ++f.ended;
    ++f.ahead;
  }
  if (f.ended > 0) QueueEarlyAny(task);
  PromoteInstances(task, out);
  if (f.ended == f.count) return FinishFanout(task, out);
  return Status::Ok();
}

Status DagRun::FailExpansion(int task, std::string reason, Effects* out) {
  APOLLO11_RETURN_IF_ERROR(CheckIndex(task));
  if (IsInstance(task) || IsFanout(task) || tasks_[task].state != S::kReady) {
    return Status::NotFound("'" + Id(task) + "' is not a foreach task waiting for its items");
  }
  APOLLO11_RETURN_IF_ERROR(Transition(task, S::kFailed, std::move(reason), out));
  return Propagate(task, out);
}

Status DagRun::RestoreExpansion(int task, int items) {
  APOLLO11_RETURN_IF_ERROR(CheckIndex(task));
  if (started_) return Status::Internal("RestoreExpansion after the run started");
  if (IsInstance(task) || graph_->task(task).foreach.empty() || IsFanout(task) || items <= 0 ||
      items > options_.max_foreach_items) {
    return Status::InvalidInput("bad foreach expansion of '" + Id(task) + "' (" +
                                std::to_string(items) + " items)");
  }
  AddInstances(task, items);
  return Status::Ok();
}

void DagRun::PromoteInstances(int task, Effects* out) {
  Fanout& f = fanout_.at(task);
  const int cap = graph_->task(task).max_parallel > 0 ? graph_->task(task).max_parallel : f.count;
  while (f.next < f.count && f.next - (f.ended - f.ahead) < cap) {
    const int slot = f.first + f.next++;
    if (tasks_[slot].state != S::kPending) {
      if (IsFinal(tasks_[slot].state)) --f.ahead;  // reused, or canceled before it ran
      continue;
    }
    tasks_[slot].attempt = 1;
    if (!Transition(
             slot, S::kReady,
             "foreach item " + std::to_string(slot - f.first) + " of " + std::to_string(f.count),
             out)
             .ok()) {
      continue;
    }
    out->dispatch.push_back(slot);
  }
}

Status DagRun::InstanceEnded(int slot, Effects* out) {
  const int task = ParentOf(slot);
  Fanout& f = fanout_.at(task);
  ++f.ended;
  if (tasks_[slot].state != S::kSuccess) ++f.failed;
  if (canceled_ || tasks_[task].state != S::kRunning) return Status::Ok();
  if (tasks_[slot].state == S::kSuccess && f.ended - f.failed == 1) QueueEarlyAny(task);
  PromoteInstances(task, out);
  if (f.ended < f.count) return Status::Ok();
  return FinishFanout(task, out);
}

Status DagRun::FinishFanout(int task, Effects* out) {
  const Fanout& f = fanout_.at(task);
  if (f.failed == 0) {
    APOLLO11_RETURN_IF_ERROR(Transition(
        task, S::kSuccess, "all " + std::to_string(f.count) + " foreach instances succeeded", out));
    return Propagate(task, out);
  }
  std::string reason = std::to_string(f.failed) + " of " + std::to_string(f.count) +
                       " foreach instances did not succeed: ";
  int named = 0;
  for (int i = 0; i < f.count && named < kFailedNamed; ++i) {
    const S s = tasks_[f.first + i].state;
    if (s == S::kSuccess) continue;
    if (named++ > 0) reason += ", ";
    reason += Id(f.first + i) + " " + ToString(s);
  }
  if (f.failed > named) reason += " +" + std::to_string(f.failed - named) + " more";
  APOLLO11_RETURN_IF_ERROR(Transition(task, S::kFailed, std::move(reason), out));
  return Propagate(task, out);
}

Status DagRun::ResumeFanouts(Effects* out) {
  for (int task = 0; task < graph_->size(); ++task) {
    if (graph_->task(task).foreach.empty()) continue;
    auto it = fanout_.find(task);
    if (it == fanout_.end()) {
      // Went READY but its expansion was not journaled: expand it again.
      if (tasks_[task].state == S::kReady) out->expand.push_back(task);
      continue;
    }
    Fanout& f = it->second;
    f.next = f.ended = f.failed = f.ahead = 0;
    for (int i = 0; i < f.count; ++i) {
      const TaskRt& t = tasks_[f.first + i];
      // Promoted ones ran an attempt; a final one without (reused) may lie
      // beyond them.
      if (t.state != S::kPending && t.attempt > 0) f.next = i + 1;
      if (t.state == S::kReady) out->dispatch.push_back(f.first + i);
      if (IsFinal(t.state)) ++f.ended;
      if (IsFinal(t.state) && t.state != S::kSuccess) ++f.failed;
    }
    for (int i = f.next; i < f.count; ++i) f.ahead += IsFinal(tasks_[f.first + i].state);
    if (tasks_[task].state != S::kRunning) continue;
    if (f.ended > f.failed) QueueEarlyAny(task);
    PromoteInstances(task, out);
    if (f.ended == f.count) APOLLO11_RETURN_IF_ERROR(FinishFanout(task, out));
  }
  return Status::Ok();
}

bool DagRun::EarlyMet(const Edge& e) const {
  if (e.on != dsl::DependencyCondition::kSuccess || tasks_[e.task].state != S::kRunning) {
    return false;
  }
  auto it = fanout_.find(e.task);
  return it != fanout_.end() && it->second.ended > it->second.failed;
}

void DagRun::QueueEarlyAny(int task) {
  for (const Edge& e : graph_->Dependents(task)) {
    if (e.on != dsl::DependencyCondition::kSuccess) continue;
    if (graph_->task(e.task).trigger != dsl::Trigger::kAny) continue;
    TaskRt& v = tasks_[e.task];
    if (v.state != S::kPending || v.queued) continue;
    v.queued = true;
    ready_queue_.push({graph_->task(e.task).priority, e.task});
  }
}

std::string DagRun::ExplainFanout(int task) const {
  const Fanout& f = fanout_.at(task);
  int by_state[kTaskStateCount] = {};
  for (int i = 0; i < f.count; ++i) ++by_state[static_cast<int>(tasks_[f.first + i].state)];
  auto n = [&](S s) { return std::to_string(by_state[static_cast<int>(s)]); };
  std::string text = Id(task) + " is RUNNING its " + std::to_string(f.count) +
                     " foreach instances: " + n(S::kSuccess) + " succeeded, " +
                     std::to_string(f.failed - by_state[static_cast<int>(S::kSkipped)] * 0) +
                     " did not succeed, " + n(S::kRunning) + " running, " + n(S::kReady) +
                     " ready, " + n(S::kRetrying) + " retrying, " + n(S::kPending) + " waiting";
  const int cap = graph_->task(task).max_parallel;
  if (cap > 0) text += " (max_parallel " + std::to_string(cap) + ")";
  return text;
}

}  // namespace apollo11::engine
