#pragma once
// What `apollo11 rerun RUN_ID` starts from, read and checked apart from the
// scheduler: the finished run's record, its snapshot as a model, and which
// of its tasks keep what they ended with (engine::SelectReused over the
// original's end states). SchedulerCore::Rerun then starts the new run from
// the plan: the kept tasks are journaled PENDING -> SUCCESS "reused from
// RUN_ID" with their outputs, the others run.
//
// Reads only (RunReader); scheduler thread.

#include <map>
#include <string>
#include <vector>

#include "actors/client_protocol.h"
#include "common/status.h"
#include "dsl/pipeline.h"
#include "engine/run_graph.h"
#include "storage/records.h"
#include "storage/run_reader.h"

namespace apollo11::actors {

struct RerunSource {
  storage::RunRecord original;
  dsl::PipelineSpec spec;
  std::vector<storage::ExecutionRecord> execs;  // the original's, by exec id
};

// Reads what a rerun of `rerun.run_id` needs. `still_active`: the scheduler
// holds that run unfinished. NotFound: no such run, or its snapshot is no
// longer in the journal; InvalidInput: a bad id, or a run that has not ended.
Result<RerunSource> ReadRerunSource(const RerunRun& rerun, storage::RunReader* runs,
                                    bool still_active);

// By task of `graph` (the new run's, compiled from source.spec): the
// original's record of each task the rerun keeps, null for those that run
// again. InvalidInput: nothing to rerun, an unknown --from task.
Result<std::vector<const storage::ExecutionRecord*>> ReusedRecords(const engine::RunGraph& graph,
                                                                   const RerunSource& source,
                                                                   const RerunRun& rerun);

// For a `rerun --failed`: by instance id ("ID[3]"), the original's records
// of the foreach instances that succeeded, of each foreach task that runs
// again (null in `reused`). Expanding it reuses those items
// (SchedulerRun::reusable_items).
std::map<std::string, storage::ExecutionRecord> ReusableItems(
    const engine::RunGraph& graph, const RerunSource& source,
    const std::vector<const storage::ExecutionRecord*>& reused);

}  // namespace apollo11::actors
