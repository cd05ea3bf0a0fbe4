#pragma once
// A RunStore that forwards to another and fails commits on demand, the way
// LevelDB's fault-injection Env fails writes: tests use it to see what the
// scheduler does while the disk is full and once space returns. Reads always
// pass through. Same threading as the store it wraps.

#include <cstdint>
#include <string>

#include "storage/run_store.h"

namespace apollo11::storage {

class FaultyRunStore final : public RunStore {
 public:
  // `base` must outlive this wrapper.
  explicit FaultyRunStore(RunStore* base) : base_(base) {}

  // Every Commit from now on fails with `error` (by default Full, "disk
  // full"), applying nothing and leaving the batch as it was, until Heal().
  void FailCommits(Status error = Status::Full("No space left on device (injected)"));
  // Only the next `n` Commits fail, then commits succeed again.
  void FailNextCommits(int n, Status error = Status::Full("No space left on device (injected)"));
  // The next `n` Commits go through, then every Commit fails until Heal():
  // a process that dies after its n-th commit, as the store sees it.
  void FailCommitsAfter(int n, Status error = Status::Full("No space left on device (injected)"));
  // Commits reach the wrapped store again.
  void Heal();
  // Commits refused so far.
  uint64_t failed_commits() const { return failed_commits_; }

  Status Commit(RunBatch& batch) override;
  uint64_t last_seq() const override { return base_->last_seq(); }
  uint64_t last_batch() const override { return base_->last_batch(); }
  // Fails like Commit while commits are failing.
  uint64_t last_batch_epoch() const override { return base_->last_batch_epoch(); }
  Status ApplyReplicated(uint64_t batch_no, uint64_t first_seq, uint64_t epoch,
                         RunBatch& batch) override;
  Result<std::vector<TransitionRecord>> HistoryOfRun(const std::string& run_id) override {
    return base_->HistoryOfRun(run_id);
  }
  Result<std::vector<TransitionRecord>> HistoryOfExecution(const std::string& exec_id) override {
    return base_->HistoryOfExecution(exec_id);
  }
  Result<std::optional<RunRecord>> GetRun(const std::string& run_id) override {
    return base_->GetRun(run_id);
  }
  Result<std::string> LastCreatedRunId() override { return base_->LastCreatedRunId(); }
  Result<std::vector<RunRecord>> ListRuns(size_t limit) override { return base_->ListRuns(limit); }
  Result<RunPage> ListRunsPage(const RunFilter& filter) override {
    return base_->ListRunsPage(filter);
  }
  Result<std::vector<RunRecord>> UnfinishedRuns() override { return base_->UnfinishedRuns(); }
  Result<std::vector<ExecutionRecord>> ExecutionsOfRun(const std::string& run_id) override {
    return base_->ExecutionsOfRun(run_id);
  }
  Result<bool> HasExecutionsOf(const std::string& run_id) override {
    return base_->HasExecutionsOf(run_id);
  }
  Result<std::optional<ExecutionRecord>> GetExecution(const std::string& exec_id) override {
    return base_->GetExecution(exec_id);
  }
  Result<std::vector<ScheduleRecord>> Schedules() override { return base_->Schedules(); }
  Result<std::vector<FireRecord>> Fires(const std::string& pipeline, Micros from,
                                        Micros to) override {
    return base_->Fires(pipeline, from, to);
  }
  Result<std::optional<FireRecord>> LastFire(const std::string& pipeline) override {
    return base_->LastFire(pipeline);
  }
  Result<std::optional<std::string>> GetPipeline(const std::string& hash) override {
    return base_->GetPipeline(hash);
  }
  Result<std::optional<Micros>> DurationP50(const std::string& stats_key) override {
    return base_->DurationP50(stats_key);
  }
  Result<std::vector<PipelineStateRecord>> ListPipelineStates() override {
    return base_->ListPipelineStates();
  }
  Result<std::optional<PipelineStateRecord>> GetPipelineState(const std::string& name) override {
    return base_->GetPipelineState(name);
  }
  Result<std::vector<PipelineVersionRecord>> PipelineVersions(const std::string& name) override {
    return base_->PipelineVersions(name);
  }
  Result<std::optional<std::string>> RunOfTriggerKey(const std::string& name,
                                                     const std::string& key) override {
    return base_->RunOfTriggerKey(name, key);
  }
  using AuditStore::ListAudit;
  Result<std::vector<AuditRecord>> ListAudit(const AuditFilter& filter, bool* complete) override {
    return base_->ListAudit(filter, complete);
  }
  Result<size_t> PruneAudit(Micros before, size_t max_records) override {
    return base_->PruneAudit(before, max_records);
  }
  Result<uint64_t> BumpEpoch() override { return base_->BumpEpoch(); }
  Result<uint64_t> Epoch() override { return base_->Epoch(); }
  Result<uint64_t> BeginTerm(uint64_t epoch) override { return base_->BeginTerm(epoch); }

 private:
  // Whether this commit is refused (counted as such).
  bool Refuses(const RunBatch& batch);

  RunStore* base_;
  Status error_;
  int64_t failures_left_ = 0;  // < 0: fail until Heal()
  int64_t passes_left_ = 0;    // commits let through before the failures start
  uint64_t failed_commits_ = 0;
};

}  // namespace apollo11::storage
