#pragma once
// A group commit for a RunStore: transitions, execution and run records,
// pipeline snapshots and durations that land in one atomic commit or not at
// all. Owned and filled by the writer thread; not thread-safe.

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "storage/audit_records.h"
#include "storage/records.h"
#include "storage/schedule_records.h"
#include "storage/snapshot_pack.h"

namespace apollo11::storage {

// An execution record as a batch holds it: its key and its value encoded
// once, when it was put (storage/record_codec.h), for the journal and the
// replication stream alike. ~150 bytes for a new task's record, against the
// 432 of an ExecutionRecord and its strings: a 100k-task submission puts
// every record in one batch.
struct EncodedExecution {
  std::string exec_id;
  std::string value;
};

class RunBatch {
 public:
  // A transition; its seq is assigned at commit.
  void Append(TransitionRecord r) { transitions_.push_back(std::move(r)); }
  // Replaces the current state of r.exec_id (encoded now: later changes to
  // `r` are not in the batch). An empty exec_id stands for
  // MakeExecId(run id, r.task_id), the id of nearly every execution.
  void PutExecution(const ExecutionRecord& r);
  // The same, with the run id and trace id given rather than r's (the
  // scheduler keeps them once per run, and no exec id in its records).
  void PutExecution(const ExecutionRecord& r, std::string_view run_id, std::string_view trace_id);
  // The same for a record encoded already (a replicated batch, whose value
  // the decoder has checked).
  void PutEncodedExecution(std::string exec_id, std::string value) {
    executions_.push_back({std::move(exec_id), std::move(value)});
  }
  // Room for `n` more PutExecution calls without regrowing (a new run puts
  // every task's record at once: doubling would hold up to 3x their size).
  void ReserveExecutions(size_t n) { executions_.reserve(executions_.size() + n); }
  // Replaces the run record of r.run_id.
  void PutRun(const RunRecord& r) { runs_.push_back(r); }
  // Stores the record of a new run. The commit fails as a whole
  // (InvalidInput, nothing applied) when the store holds a run r.run_id
  // already: a run record is never overwritten by another run's. Written
  // before the PutRun records of the same batch.
  void CreateRun(const RunRecord& r) { created_runs_.push_back(r); }
  // Stores a pipeline snapshot; immutable, so ignored if `hash` is present.
  // Held in its stored form (storage/snapshot_pack.h): a large one packed.
  void PutPipeline(const std::string& hash, std::string canonical_json) {
    pipelines_.emplace_back(hash, PackSnapshot(std::move(canonical_json)));
  }
  // The same, for a snapshot PackSnapshot has made already (a submission
  // packs its text before building the run, so the text is gone by then).
  void PutPackedPipeline(const std::string& hash, std::string packed) {
    pipelines_.emplace_back(hash, std::move(packed));
  }
  // Adds one duration to the history of `stats_key` (last 64 kept).
  void RecordDuration(const std::string& stats_key, Micros duration) {
    durations_.emplace_back(stats_key, duration);
  }
  // registry: stores a version of a registered pipeline; immutable, so
  // ignored when (r.name, r.version) is present.
  void PutPipelineVersion(const PipelineVersionRecord& r) { versions_.push_back(r); }
  // registry: replaces the state of pipeline r.name.
  void PutPipelineState(const PipelineStateRecord& r) { states_.push_back(r); }
  // registry: records that key r.key of pipeline r.name started run r.run_id;
  // a key stored already keeps its first run.
  void PutTriggerKey(const TriggerKeyRecord& r) { trigger_keys_.push_back(r); }
  // Registers or replaces the schedule of r.pipeline; a record with an empty
  // snapshot removes it (its fire records stay).
  void PutSchedule(ScheduleRecord r) { schedules_.push_back(std::move(r)); }
  // Stores or replaces the fire (r.pipeline, r.scheduled_at).
  void PutFire(FireRecord r) { fires_.push_back(std::move(r)); }
  // Stores an audit record (its id is assigned at commit, AuditId).
  // Bounded (BoundedAudit) when put. At most kMaxAuditPerBatch per batch:
  // the caller commits before it puts more.
  void PutAudit(AuditRecord r) { audits_.push_back(BoundedAudit(std::move(r))); }
  size_t audits() const { return audits_.size(); }
  bool empty() const {
    return transitions_.empty() && executions_.empty() && runs_.empty() && created_runs_.empty() &&
           pipelines_.empty() && durations_.empty() && versions_.empty() && states_.empty() &&
           trigger_keys_.empty() && schedules_.empty() && fires_.empty() && audits_.empty();
  }
  size_t transitions() const { return transitions_.size(); }
  // Forgets everything appended (a store's Commit does this after success).
  // A buffer grown past kKeptCapacity entries by a burst (a 100k-task
  // submission) is released, so the writer does not hold it for life.
  void Clear() {
    ClearAndTrim(&transitions_);
    ClearAndTrim(&executions_);
    ClearAndTrim(&runs_);
    ClearAndTrim(&created_runs_);
    ClearAndTrim(&pipelines_);
    ClearAndTrim(&durations_);
    ClearAndTrim(&versions_);
    ClearAndTrim(&states_);
    ClearAndTrim(&trigger_keys_);
    ClearAndTrim(&schedules_);
    ClearAndTrim(&fires_);
    ClearAndTrim(&audits_);
  }

  // What was appended, in order, for the stores that write it.
  const std::vector<TransitionRecord>& transition_records() const { return transitions_; }
  const std::vector<EncodedExecution>& execution_records() const { return executions_; }
  const std::vector<RunRecord>& run_records() const { return runs_; }
  const std::vector<RunRecord>& created_run_records() const { return created_runs_; }
  // (hash, stored snapshot) pairs: the canonical JSON, packed when large
  // (UnpackSnapshot gives the text back).
  const std::vector<std::pair<std::string, std::string>>& pipeline_snapshots() const {
    return pipelines_;
  }
  // (stats key, duration) pairs.
  const std::vector<std::pair<std::string, Micros>>& duration_samples() const { return durations_; }
  const std::vector<PipelineVersionRecord>& pipeline_versions() const { return versions_; }
  const std::vector<PipelineStateRecord>& pipeline_states() const { return states_; }
  const std::vector<TriggerKeyRecord>& trigger_keys() const { return trigger_keys_; }
  const std::vector<ScheduleRecord>& schedule_records() const { return schedules_; }
  const std::vector<FireRecord>& fire_records() const { return fires_; }
  const std::vector<AuditRecord>& audit_records() const { return audits_; }

 private:
  static constexpr size_t kKeptCapacity = 4096;
  template <typename T>
  static void ClearAndTrim(std::vector<T>* v) {
    if (v->capacity() > kKeptCapacity) {
      std::vector<T>().swap(*v);
    } else {
      v->clear();
    }
  }

  std::vector<TransitionRecord> transitions_;
  std::vector<EncodedExecution> executions_;
  std::vector<RunRecord> runs_;
  std::vector<RunRecord> created_runs_;
  std::vector<std::pair<std::string, std::string>> pipelines_;
  std::vector<std::pair<std::string, Micros>> durations_;
  std::vector<PipelineVersionRecord> versions_;
  std::vector<PipelineStateRecord> states_;
  std::vector<TriggerKeyRecord> trigger_keys_;
  std::vector<ScheduleRecord> schedules_;
  std::vector<FireRecord> fires_;
  std::vector<AuditRecord> audits_;
};

}  // namespace apollo11::storage
