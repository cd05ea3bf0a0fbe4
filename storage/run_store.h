#pragma once
// The port between the scheduler and its durable state: what it commits (one
// RunBatch per loop turn) and what it reads back (recovery, duration history,
// the state of an execution that is no longer active, the epoch).
// storage::Journal (LMDB) is the real implementation; MemoryRunStore and
// FaultyRunStore serve the tests.
//
// HA replication hooks in at Commit: each successful Commit is one batch,
// applied atomically, with its transitions numbered in seq order; shipping
// the batches in Commit order reproduces the store on a replica.
//
// Threads: one writer thread (the scheduler) calls Commit and BumpEpoch. Read
// methods may be called from any thread unless an implementation says
// otherwise.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "storage/records.h"
#include "storage/run_batch.h"

namespace apollo11::storage {

class RunStore {
 public:
  virtual ~RunStore() = default;

  // Commits `batch` atomically, assigning gap-free increasing seq numbers to
  // its transitions, and clears it on success. On failure nothing is applied,
  // no seq is consumed, and `batch` is left as it was so it can be committed
  // again: Full (disk full; retry when space returns), InvalidInput (a key
  // the store cannot hold), Io. Writer thread only.
  virtual Status Commit(RunBatch& batch) = 0;
  // The seq of the last committed transition (0 when none).
  virtual uint64_t last_seq() const = 0;

  // Replication. The number of non-empty batches committed or applied so far
  // (0 on a fresh store): the replication position, which unlike last_seq
  // also advances for a batch without transitions.
  virtual uint64_t last_batch() const = 0;
  // The epoch in which the last batch was committed (by this store's
  // Commit: the current Epoch(); by ApplyReplicated: the leader's), 0 when
  // none. Two stores holding the same last_batch() with the same
  // last_batch_epoch() hold the same batches: a leader numbers each batch
  // once per term, so a standby that diverged (it led in an older term and
  // committed batches no one received) differs here even where the numbers
  // match.
  virtual uint64_t last_batch_epoch() const = 0;
  // Applies batch number `batch_no` that a leader committed in `epoch` with
  // its transitions numbered from `first_seq`: atomically, with those same
  // seq numbers (so the store equals the leader's), and clears `batch` on
  // success. Refused with InvalidInput, nothing applied, unless batch_no ==
  // last_batch() + 1 and first_seq == last_seq() + 1 (a gap, a replay or a
  // store that diverged); other errors as Commit. Writer thread only; a store
  // that applies replicated batches is not committed to by a scheduler.
  virtual Status ApplyReplicated(uint64_t batch_no, uint64_t first_seq, uint64_t epoch,
                                 RunBatch& batch) = 0;

  // Transitions of one run / one execution, oldest first (by seq).
  virtual Result<std::vector<TransitionRecord>> HistoryOfRun(const std::string& run_id) = 0;
  virtual Result<std::vector<TransitionRecord>> HistoryOfExecution(const std::string& exec_id) = 0;
  virtual Result<std::optional<RunRecord>> GetRun(const std::string& run_id) = 0;
  // The id of the run most recently stored with RunBatch::CreateRun ("" when
  // none), so that the run id generator continues after it on restart.
  virtual Result<std::string> LastCreatedRunId() = 0;
  // The newest `limit` runs by created_at, newest first.
  virtual Result<std::vector<RunRecord>> ListRuns(size_t limit) = 0;
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

  // registry: the state of every registered pipeline name (removed ones
  // too, with active = 0), ordered by name.
  virtual Result<std::vector<PipelineStateRecord>> ListPipelineStates() = 0;
  // registry: the state of pipeline `name`; nullopt when never registered.
  virtual Result<std::optional<PipelineStateRecord>> GetPipelineState(const std::string& name) = 0;
  // registry: the versions of pipeline `name`, oldest first (empty when none).
  virtual Result<std::vector<PipelineVersionRecord>> PipelineVersions(const std::string& name) = 0;
  // registry: the run that trigger key `key` of pipeline `name` started;
  // nullopt when the key is unknown.
  virtual Result<std::optional<std::string>> RunOfTriggerKey(const std::string& name,
                                                             const std::string& key) = 0;
  // Every registered schedule (RunBatch::PutSchedule), by pipeline name.
  virtual Result<std::vector<ScheduleRecord>> Schedules() = 0;
  // The fires of `pipeline` with from <= scheduled_at <= to, oldest first.
  virtual Result<std::vector<FireRecord>> Fires(const std::string& pipeline, Micros from,
                                                Micros to) = 0;
  // The fire of `pipeline` with the latest scheduled time, if any.
  virtual Result<std::optional<FireRecord>> LastFire(const std::string& pipeline) = 0;

  // Increments and durably stores the coordinator epoch, returning the new
  // value (1 on a fresh store). Writer thread only.
  virtual Result<uint64_t> BumpEpoch() = 0;
  // The current epoch (0 before the first BumpEpoch).
  virtual Result<uint64_t> Epoch() = 0;
  // election: journals an HA term: stores `epoch` (an etcd create_revision)
  // as the coordinator epoch when it is above the stored one and returns it;
  // InvalidInput ("epoch N is not above the journal's epoch M") and no
  // change otherwise, so a term never reuses or goes below an earlier
  // epoch. Writer thread only (or with the writer idle).
  virtual Result<uint64_t> BeginTerm(uint64_t epoch) = 0;
};

// BeginTerm's refusal of an epoch that is not above the stored one.
inline Status TermNotAbove(uint64_t epoch, uint64_t stored) {
  return Status::InvalidInput("epoch " + std::to_string(epoch) +
                              " is not above the journal's epoch " + std::to_string(stored));
}

}  // namespace apollo11::storage
