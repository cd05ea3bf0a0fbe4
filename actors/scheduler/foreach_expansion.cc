#include "actors/scheduler/foreach_expansion.h"

#include <spdlog/spdlog.h>

#include <map>

#include "actors/scheduler/foreach_items.h"
#include "common/ids.h"
#include "common/log_event.h"

namespace apollo11::actors {

Result<std::vector<std::string>> ForeachExpansion::ItemsOf(const SchedulerRun& run,
                                                           int task) const {
  const dsl::TaskSpec& spec = run.spec().tasks[task];
  const int up = run.graph->Find(spec.foreach);
  if (up < 0) return Status::InvalidInput("no upstream task '" + spec.foreach + "'");
  if (run.dag->state(up) != TaskState::kSuccess) {
    return Status::InvalidInput("upstream " + spec.foreach + " is " + ToString(run.dag->state(up)) +
                                ", not SUCCESS");
  }
  const size_t cap = max_items_;
  if (!spec.foreach_items.empty()) {
    auto items = ForeachItems::FromJson(run.execs[up].task_output, spec.foreach_items, cap);
    if (!items.ok()) return Status::InvalidInput(spec.foreach + ": " + items.status().message());
    return items;
  }
  if (run.output_tail_only[up]) {
    return Status::InvalidInput(
        "only the journaled tail of " + spec.foreach +
        "'s output survived the coordinator restart; its lines cannot be fanned out over");
  }
  if (auto cut = run.output_cut.find(up); cut != run.output_cut.end()) {
    const std::string& tail = run.outputs[up].get();
    return Status::InvalidInput(
        spec.foreach + " printed " + std::to_string(cut->second) +
        " bytes, of which the coordinator got only " + std::to_string(tail.size()) +
        " (the worker's output tail): fanning out over them would lose items; write the items as a "
        "JSON array to $APOLLO11_OUTPUT and name it in "
        "`foreach: {task: " +
        spec.foreach + ", items: output}`");
  }
  return ForeachItems::FromLines(run.outputs[up], cap);
}

std::vector<bool> ForeachExpansion::ReusedItems(const SchedulerRun& run, const std::string& task_id,
                                                const std::vector<std::string>& items) {
  std::vector<bool> reused;
  if (run.reusable_items.empty()) return reused;
  reused.resize(items.size());
  for (size_t i = 0; i < items.size(); ++i) {
    auto it = run.reusable_items.find(task_id + "[" + std::to_string(i) + "]");
    // The same item at the same place: what succeeded on it stands.
    reused[i] = it != run.reusable_items.end() && it->second.item.get() == items[i];
  }
  return reused;
}

void ForeachExpansion::DropReusableItems(SchedulerRun& run, const std::string& task_id) {
  const std::string prefix = task_id + "[";
  auto it = run.reusable_items.lower_bound(prefix);
  while (it != run.reusable_items.end() && it->first.starts_with(prefix)) {
    it = run.reusable_items.erase(it);
  }
}

bool ForeachExpansion::Expand(SchedulerRun& run, int task, engine::Effects* effects) const {
  const dsl::TaskSpec& spec = run.spec().tasks[task];
  const std::string source =
      spec.foreach + (spec.foreach_items.empty() ? "'s output lines" : " " + spec.foreach_items);
  auto items = ItemsOf(run, task);
  const std::vector<bool> reused =
      items.ok() ? ReusedItems(run, spec.id, *items) : std::vector<bool>();
  Status s = items.ok()
                 ? run.dag->Expand(task, static_cast<int>(items->size()), source, effects, reused,
                                   "reused from " + run.record.rerun_of)
                 : run.dag->FailExpansion(
                       task, "foreach cannot read its items: " + items.status().message(), effects);
  if (!s.ok()) {
    spdlog::error("foreach expansion of {}.{} refused: {}", run.run_id, spec.id, s.message());
    return false;
  }
  const int count = run.dag->InstanceCount(task);
  if (count == 0) {
    DropReusableItems(run, spec.id);  // no items, or too many: nothing reused
    return true;
  }
  run.GrowSlots();
  for (int i = 0; i < count; ++i) {
    const int slot = run.dag->InstanceSlot(task, i);
    storage::ExecutionRecord& rec = run.execs[slot];
    rec.task_id = run.dag->Id(slot);
    rec.state = TaskState::kPending;
    rec.item = std::move((*items)[static_cast<size_t>(i)]);
    if (static_cast<size_t>(i) < reused.size() && reused[static_cast<size_t>(i)]) {
      // What it gave in the run being rerun (dependents read the task's).
      storage::ExecutionRecord& from = run.reusable_items.at(rec.task_id);
      rec.exit_code = from.exit_code;
      rec.output = std::move(from.output);
      rec.task_output = std::move(from.task_output);
    }
    run.MarkDirty(slot);
  }
  // Used once: the task expands once per run.
  DropReusableItems(run, spec.id);
  LogEvent(spdlog::level::info, "foreach_expanded",
           {{"run_id", run.run_id}, {"task_id", spec.id}, {"instances", count}},
           "{}.{} expanded into {} instances", run.run_id, spec.id, count);
  return true;
}

Status ForeachExpansion::Restore(SchedulerRun& run,
                                 std::vector<storage::ExecutionRecord>* instances) {
  std::map<int, int> counts;  // task -> instances journaled
  for (const storage::ExecutionRecord& rec : *instances) {
    const size_t open = rec.task_id.rfind('[');
    const int task = run.graph->Find(rec.task_id.substr(0, open));
    if (task >= 0) ++counts[task];
  }
  for (const auto& [task, count] : counts) {
    APOLLO11_RETURN_IF_ERROR(run.dag->RestoreExpansion(task, count));
  }
  run.GrowSlots();
  for (storage::ExecutionRecord& rec : *instances) {
    const int slot = run.FindSlot(rec.task_id);
    if (slot < 0) {
      return Status::InvalidInput("foreach instance " + rec.task_id +
                                  " does not fit its task's journaled expansion");
    }
    APOLLO11_RETURN_IF_ERROR(run.dag->Restore(slot, rec.state, rec.attempt,
                                              static_cast<int>(rec.retries_used),
                                              static_cast<int>(rec.requeues), rec.next_retry_at));
    run.Adopt(slot, std::move(rec));
  }
  return Status::Ok();
}

}  // namespace apollo11::actors
