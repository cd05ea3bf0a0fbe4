#pragma once
// The scheduler's in-memory state of one active run: its compiled graph, DAG
// state and the current record of every execution, plus what the loop needs
// between turns (dirty records, upstream outputs, duration history). Owned by
// SchedulerCore; the dispatch builder, slow watch and explain read it.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "alerts/alert_rule.h"
#include "common/clock.h"
#include "common/ids.h"
#include "common/rare.h"
#include "dsl/pipeline.h"
#include "engine/dag_run.h"
#include "engine/run_graph.h"
#include "observability/pipeline_metrics.h"
#include "storage/records.h"

namespace apollo11::actors {

struct SchedulerRun {
  std::string run_id;
  std::string trace_id;
  // The pipeline snapshot lives in the graph only: a 100k-task spec is tens
  // of MB, and a second copy here doubled it.
  std::shared_ptr<const engine::RunGraph> graph;
  const dsl::PipelineSpec& spec() const { return graph->spec(); }
  std::unique_ptr<engine::DagRun> dag;
  storage::RunRecord record;
  // By task index. Their run_id, trace_id and exec_id are left empty: the
  // run's own ids, above, are filled in when a record is journaled, and the
  // exec id is made from them (ExecId): 112 bytes of heap a task saved, 11 MB
  // at 100k tasks.
  std::vector<storage::ExecutionRecord> execs;
  std::vector<uint8_t> exec_dirty;
  std::vector<int> dirty_list;
  // By task index; kept only for tasks with dependents. Boxed: most slots
  // stay empty, 8 bytes each instead of 32.
  std::vector<Rare<std::string>> outputs;
  std::vector<int64_t> expected_ms;  // by task index: P50 of past durations, for placement
  std::vector<Micros> p50;           // by task index: 0 = no history, never flagged slow
  // By task index: when the current attempt was placed, on the Steady()
  // clock (0: not known in this process).
  std::vector<Micros> placed_steady;
  std::vector<uint8_t> has_dependents;
  // By task index: of the last failed attempt, for alerts.
  std::vector<Rare<std::string>> stderr_tails;
  observability::PipelineMetrics* metrics = nullptr;  // its pipeline's series; never null
  // The pipeline's own `alerts:`, attached to each of its alert events.
  std::shared_ptr<const std::vector<alerts::AlertRule>> alert_rules;
  // By task index: the output above holds only the journaled tail (the run
  // was recovered), too little to fan a foreach out over its lines.
  std::vector<uint8_t> output_tail_only;
  // Task index -> how many bytes it printed, for the few tasks whose output
  // above is only the tail the worker kept (its stdout outgrew the tail).
  std::map<int, uint64_t> output_cut;
  // A `rerun --failed` of a run whose foreach tasks failed in part: by
  // instance id ("ID[3]"), the records of the instances that succeeded in
  // the run it reruns. Expanding the task again reuses each whose item is
  // the same instead of running it (ForeachExpansion::Expand).
  std::map<std::string, storage::ExecutionRecord> reusable_items;
  bool progress_dirty = true;
  // Changed since the last commit, for the change feed (SchedulerOutbox::
  // changes): a new or recovered run, a task's record, the run's end.
  bool feed_dirty = true;
  bool finished = false;
  // Created by this process and its run record not yet committed: its
  // PENDING records may go ahead of that commit (SchedulerCore::Flush).
  bool creation_unjournaled = false;

  // The spec a slot runs: a task's own, or for a foreach instance its task's.
  const dsl::TaskSpec& task_spec(int slot) const { return graph->task(dag->ParentOf(slot)); }
  // The slot of a task id or a foreach instance id ("ID[3]"); -1 if none.
  int FindSlot(const std::string& task_id) const;
  // Grows every per-slot vector to the DAG's slots; a new instance slot
  // takes its task's history.
  void GrowSlots();

  // The execution id of `slot`: RUN.TASK (MakeExecId), a foreach instance's
  // task id being "ID[i]". The records in execs leave their exec_id empty;
  // this is where it is made when a message or a log line needs it.
  std::string ExecId(int slot) const { return MakeExecId(run_id, execs[slot].task_id); }

  // Stores `rec`, read from the journal, as the record of `slot`, without
  // its run id, trace id and exec id (see execs).
  void Adopt(int slot, storage::ExecutionRecord rec) {
    rec.run_id.Free();  // assigning "" would keep the box
    rec.trace_id.Free();
    std::string().swap(rec.exec_id);  // clear() would keep the buffer
    execs[slot] = std::move(rec);
  }

  // The execution record of `task` is written with the turn's commit.
  void MarkDirty(int task) {
    if (exec_dirty[task]) return;
    exec_dirty[task] = 1;
    dirty_list.push_back(task);
  }
};

// The pipeline model of a journaled or submitted snapshot, without source
// locations (the scheduler shows none); `what` names it in the error.
Result<dsl::PipelineSpec> SpecFromSnapshot(const std::string& snapshot, const char* what);

}  // namespace apollo11::actors
