#pragma once
// A RunStore held in memory, for tests and the simulator: the same contract
// as the LMDB journal (atomic commits, gap-free seqs, the same orderings and
// P50), nothing on disk. Not thread-safe: one thread calls everything.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "storage/commit_observer.h"
#include "storage/run_store.h"

namespace apollo11::storage {

class MemoryRunStore final : public RunStore {
 public:
  MemoryRunStore() = default;
  MemoryRunStore(const MemoryRunStore&) = delete;

  // Replaces this store's contents with `other`'s, as installing a journal
  // copy does (the tests' replicas); its commit observer stays its own.
  void CopyFrom(const MemoryRunStore& other) {
    CommitObserver* observer = observer_;
    *this = other;
    observer_ = observer;
  }

  // InvalidInput for an empty run or execution id, or a created run whose id
  // is stored already (nothing applied), as the journal; never Full.
  // As storage::Journal, a successful Commit hands the batch to the commit
  // observer (when set) before it returns; ApplyReplicated does not.
  Status Commit(RunBatch& batch) override;
  void SetCommitObserver(CommitObserver* observer) { observer_ = observer; }
  uint64_t last_seq() const override { return last_seq_; }
  uint64_t last_batch() const override { return commits_; }
  uint64_t last_batch_epoch() const override { return batch_epoch_; }
  Status ApplyReplicated(uint64_t batch_no, uint64_t first_seq, uint64_t epoch,
                         RunBatch& batch) override;

  Result<std::vector<TransitionRecord>> HistoryOfRun(const std::string& run_id) override;
  Result<std::vector<TransitionRecord>> HistoryOfExecution(const std::string& exec_id) override;
  Result<std::optional<RunRecord>> GetRun(const std::string& run_id) override;
  Result<std::string> LastCreatedRunId() override { return last_created_; }
  Result<std::vector<RunRecord>> ListRuns(size_t limit) override;
  Result<std::vector<RunRecord>> UnfinishedRuns() override;
  Result<std::vector<ExecutionRecord>> ExecutionsOfRun(const std::string& run_id) override;
  Result<bool> HasExecutionsOf(const std::string& run_id) override;
  Result<std::optional<ExecutionRecord>> GetExecution(const std::string& exec_id) override;
  Result<std::optional<std::string>> GetPipeline(const std::string& hash) override;
  Result<std::optional<Micros>> DurationP50(const std::string& stats_key) override;
  Result<std::vector<PipelineStateRecord>> ListPipelineStates() override;
  Result<std::optional<PipelineStateRecord>> GetPipelineState(const std::string& name) override;
  Result<std::vector<PipelineVersionRecord>> PipelineVersions(const std::string& name) override;
  Result<std::optional<std::string>> RunOfTriggerKey(const std::string& name,
                                                     const std::string& key) override;
  Result<std::vector<ScheduleRecord>> Schedules() override;
  Result<std::vector<FireRecord>> Fires(const std::string& pipeline, Micros from,
                                        Micros to) override;
  Result<std::optional<FireRecord>> LastFire(const std::string& pipeline) override;
  using AuditStore::ListAudit;
  Result<std::vector<AuditRecord>> ListAudit(const AuditFilter& filter, bool* complete) override;
  Result<size_t> PruneAudit(Micros before, size_t max_records) override;
  Result<uint64_t> BumpEpoch() override { return ++epoch_; }
  Result<uint64_t> Epoch() override { return epoch_; }
  Result<uint64_t> BeginTerm(uint64_t epoch) override {
    if (epoch <= epoch_) return TermNotAbove(epoch, epoch_);
    return epoch_ = epoch;
  }

  // Every transition committed so far, in seq order (index i has seq i + 1).
  const std::vector<TransitionRecord>& transitions() const { return transitions_; }
  // Successful commits (and applied replicated batches) so far.
  uint64_t commits() const { return commits_; }

 private:
  MemoryRunStore& operator=(const MemoryRunStore&) = default;  // CopyFrom
  // Commit's work; `observe`: hand the batch to the observer.
  Status Apply(RunBatch& batch, bool observe);

  CommitObserver* observer_ = nullptr;
  std::vector<TransitionRecord> transitions_;
  std::map<std::string, ExecutionRecord> executions_;  // by exec id
  std::map<std::string, RunRecord> runs_;              // by run id
  std::map<std::string, std::string> pipelines_;       // by hash
  std::map<std::string, std::vector<Micros>> durations_;
  // registry
  std::map<std::pair<std::string, uint32_t>, PipelineVersionRecord> versions_;
  std::map<std::string, PipelineStateRecord> states_;
  std::map<std::pair<std::string, std::string>, std::string> trigger_keys_;  // -> run id
  std::map<std::string, ScheduleRecord> schedules_;                          // by pipeline
  std::map<std::string, FireRecord> fires_;                                  // by FireKey
  std::map<uint64_t, AuditRecord> audit_;                                    // by AuditId
  std::string last_created_;
  uint64_t last_seq_ = 0;
  uint64_t epoch_ = 0;
  uint64_t commits_ = 0;
  uint64_t batch_epoch_ = 0;
};

}  // namespace apollo11::storage
