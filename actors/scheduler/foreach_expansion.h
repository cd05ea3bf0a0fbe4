#pragma once
// A foreach task's fan-out (dynamic tasks): when the task goes READY, its
// items are read from its upstream's output (its lines, or a JSON array at a
// path: ForeachItems), the task expands into one instance per item in its
// run's DAG, and each instance gets its execution record; after a restart
// the journaled instances are put back. Plain logic over a SchedulerRun:
// the run is the state, this class the rules; SchedulerCore applies the
// effects it returns.
//
// Scheduler thread only.

#include <string>
#include <vector>

#include "actors/scheduler/scheduler_run.h"
#include "common/status.h"
#include "engine/dag_run.h"
#include "storage/records.h"

namespace apollo11::actors {

class ForeachExpansion {
 public:
  // `max_items`: the items one foreach task may fan out into; more fails
  // the task (--max-foreach-items).
  explicit ForeachExpansion(size_t max_items) : max_items_(max_items) {}

  // The items of foreach task `task` of `run`, at most max_items + 1;
  // InvalidInput naming why they cannot be read (the upstream did not
  // succeed, its output is not the JSON the path names, only its journaled
  // tail survived a restart).
  Result<std::vector<std::string>> ItemsOf(const SchedulerRun& run, int task) const;
  // Expands `task` into its instances (or fails it with the reason its
  // items cannot be read), fills the instances' records and appends what
  // follows to `effects`. Returns false when the DAG refused the expansion
  // (logged): nothing changed.
  bool Expand(SchedulerRun& run, int task, engine::Effects* effects) const;
  // After a restart: puts the journaled `instances` of `run`'s foreach tasks
  // back into its DAG, after its tasks were restored. InvalidInput when an
  // instance does not fit its task's expansion.
  static Status Restore(SchedulerRun& run, std::vector<storage::ExecutionRecord>* instances);
  // A rerun's: by item index, whether the run being rerun has a successful
  // instance of `task_id` at that index with the same item (empty when the
  // run reuses none).
  static std::vector<bool> ReusedItems(const SchedulerRun& run, const std::string& task_id,
                                       const std::vector<std::string>& items);
  // Forgets `task_id`'s entries in run.reusable_items (its expansion has
  // taken what it reuses).
  static void DropReusableItems(SchedulerRun& run, const std::string& task_id);

 private:
  size_t max_items_;
};

}  // namespace apollo11::actors
