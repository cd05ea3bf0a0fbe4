#pragma once
// What the scheduler and its readers read back of runs (one part of
// RunStore, storage/run_store.h): recovery, history, executions, pipeline
// snapshots and duration history. Any thread unless an implementation says
// otherwise.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "storage/records.h"
#include "storage/run_page.h"

namespace apollo11::storage {

class RunReader {
 public:
  virtual ~RunReader() = default;

  // Transitions of one run / one execution, oldest first (by seq).
  virtual Result<std::vector<TransitionRecord>> HistoryOfRun(const std::string& run_id) = 0;
  virtual Result<std::vector<TransitionRecord>> HistoryOfExecution(const std::string& exec_id) = 0;
  virtual Result<std::optional<RunRecord>> GetRun(const std::string& run_id) = 0;
  // The id of the run most recently stored with RunBatch::CreateRun ("" when
  // none), so that the run id generator continues after it on restart.
  virtual Result<std::string> LastCreatedRunId() = 0;
  // The newest `limit` runs by created_at, newest first.
  virtual Result<std::vector<RunRecord>> ListRuns(size_t limit) = 0;
  // A page of the whole history, filtered (storage/run_page.h). The default
  // reads every run (ListRuns); the journal walks its time index.
  virtual Result<RunPage> ListRunsPage(const RunFilter& filter) {
    auto all = ListRuns(SIZE_MAX);
    if (!all.ok()) return all.status();
    return PageOfRuns(*all, filter);
  }
  // Runs whose status is not final, for recovery; ordered by run id.
  virtual Result<std::vector<RunRecord>> UnfinishedRuns() = 0;
  // Current state of every execution of a run, ordered by exec id.
  virtual Result<std::vector<ExecutionRecord>> ExecutionsOfRun(const std::string& run_id) = 0;
  // The same records one at a time, oldest exec id first; `visit` may move
  // from the record. Stops at the first error, of the store or returned by
  // `visit`. The default reads them all first (ExecutionsOfRun); the
  // journal streams them in one read transaction.
  virtual Status ForEachExecutionOfRun(const std::string& run_id,
                                       const std::function<Status(ExecutionRecord&)>& visit) {
    auto all = ExecutionsOfRun(run_id);
    if (!all.ok()) return all.status();
    for (ExecutionRecord& e : *all) APOLLO11_RETURN_IF_ERROR(visit(e));
    return Status::Ok();
  }
  // Whether any execution record of `run_id` is stored. A large new run's
  // records are committed ahead of the commit that creates it
  // (actors/scheduler/scheduler_outbox.cc); a crash between leaves records without a
  // run, and their run id must not be given to another run.
  virtual Result<bool> HasExecutionsOf(const std::string& run_id) = 0;
  virtual Result<std::optional<ExecutionRecord>> GetExecution(const std::string& exec_id) = 0;
  // A pipeline snapshot stored by RunBatch::PutPipeline.
  virtual Result<std::optional<std::string>> GetPipeline(const std::string& hash) = 0;
  // The median of the last 64 durations recorded for `stats_key` (mean of the
  // two middle ones for an even count); nullopt without history.
  virtual Result<std::optional<Micros>> DurationP50(const std::string& stats_key) = 0;
};

}  // namespace apollo11::storage
