#pragma once
// Which tasks a rerun runs again and which it takes as they ended in the run
// it reruns (DAGMan's rescue DAG, Airflow's clear). Plain logic over the
// graph: the scheduler reads the original run's task states from the journal
// and passes them in.

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "engine/run_graph.h"
#include "engine/task_state.h"

namespace apollo11::engine {

struct RerunSelection {
  // true: what did not succeed (FAILED, TIMEOUT, CANCELED, SKIPPED, never
  // started) and everything downstream of it. false: `from` and, with
  // `downstream`, everything downstream of it.
  bool failed = true;
  std::string from;
  bool downstream = false;
};

// By task index, 1 when the rerun reuses the task (its SUCCESS and outputs
// from the original run), 0 when it runs it again. A task that did not
// succeed in the original (`original[i]` its final state, kPending for one
// that has no record) always runs again; a selected one runs again even if
// it succeeded. NotFound when `from` names no task of the graph;
// InvalidInput when `original` does not match the graph, or when --failed
// finds nothing to rerun (every task succeeded).
Result<std::vector<uint8_t>> SelectReused(const RunGraph& graph,
                                          const std::vector<TaskState>& original,
                                          const RerunSelection& selection);

}  // namespace apollo11::engine
