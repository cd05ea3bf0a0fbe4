#include "storage/memory_run_store.h"

#include <algorithm>
#include <set>
#include <string>

#include "common/ids.h"
#include "storage/record_codec.h"
#include "storage/snapshot_pack.h"

namespace apollo11::storage {
namespace {

constexpr size_t kDurationsKept = 64;

}  // namespace

Status MemoryRunStore::Commit(RunBatch& batch) { return Apply(batch, /*observe=*/true); }

Status MemoryRunStore::Apply(RunBatch& batch, bool observe) {
  if (batch.empty()) return Status::Ok();
  if (batch.audits() > kMaxAuditPerBatch) {
    return Status::InvalidInput("a batch with more than 65535 audit records");
  }
  const uint64_t first_seq = last_seq_ + 1;
  for (const TransitionRecord& t : batch.transition_records()) {
    if (t.run_id.empty()) return Status::InvalidInput("a transition without a run id");
  }
  std::vector<ExecutionRecord> executions;
  executions.reserve(batch.execution_records().size());
  for (const EncodedExecution& x : batch.execution_records()) {
    if (x.exec_id.empty()) return Status::InvalidInput("an execution record without an id");
    auto decoded = codec::DecodeExecution(x.exec_id, x.value);
    if (!decoded.ok()) return decoded.status();
    executions.push_back(std::move(*decoded));
  }
  for (const RunRecord& r : batch.run_records()) {
    if (r.run_id.empty()) return Status::InvalidInput("a run record without an id");
  }
  std::set<std::string> created;
  for (const RunRecord& r : batch.created_run_records()) {
    if (r.run_id.empty()) return Status::InvalidInput("a run record without an id");
    if (runs_.count(r.run_id) || !created.insert(r.run_id).second) {
      return Status::InvalidInput("run " + r.run_id +
                                  " exists already: refused to overwrite its record");
    }
  }
  for (const TransitionRecord& t : batch.transition_records()) {
    transitions_.push_back(t);
    TransitionRecord& stored = transitions_.back();
    stored.seq = ++last_seq_;
    if (stored.exec_id.empty()) stored.exec_id = MakeExecId(t.run_id, t.task_id);
  }
  for (ExecutionRecord& x : executions) executions_[x.exec_id] = std::move(x);
  for (const RunRecord& r : batch.created_run_records()) {
    runs_[r.run_id] = r;
    last_created_ = r.run_id;
  }
  for (const RunRecord& r : batch.run_records()) runs_[r.run_id] = r;
  for (const ScheduleRecord& r : batch.schedule_records()) {
    if (r.snapshot.empty()) {
      schedules_.erase(r.pipeline);
    } else {
      schedules_[r.pipeline] = r;
    }
  }
  for (const FireRecord& r : batch.fire_records()) fires_[FireKey(r.pipeline, r.scheduled_at)] = r;
  for (const auto& [hash, json] : batch.pipeline_snapshots()) pipelines_.emplace(hash, json);
  for (const auto& [key, duration] : batch.duration_samples()) {
    std::vector<Micros>& kept = durations_[key];
    kept.push_back(duration);
    if (kept.size() > kDurationsKept) kept.erase(kept.begin());
  }
  for (const PipelineVersionRecord& r : batch.pipeline_versions()) {
    versions_.emplace(std::make_pair(r.name, r.version), r);
  }
  for (const PipelineStateRecord& r : batch.pipeline_states()) states_[r.name] = r;
  for (const TriggerKeyRecord& r : batch.trigger_keys()) {
    trigger_keys_.emplace(std::make_pair(r.name, r.key), r.run_id);
  }
  ++commits_;
  for (size_t i = 0; i < batch.audit_records().size(); ++i) {
    AuditRecord r = batch.audit_records()[i];
    r.id = AuditId(commits_, i);
    audit_[r.id] = std::move(r);
  }
  batch_epoch_ = epoch_;
  if (observe && observer_ != nullptr) observer_->OnCommitted(commits_, first_seq, batch);
  batch.Clear();
  return Status::Ok();
}

Status MemoryRunStore::ApplyReplicated(uint64_t batch_no, uint64_t first_seq, uint64_t epoch,
                                       RunBatch& batch) {
  if (batch.empty()) return Status::InvalidInput("an empty replicated batch");
  if (batch_no != commits_ + 1 || first_seq != last_seq_ + 1) {
    return Status::InvalidInput("replicated batch " + std::to_string(batch_no) + " at seq " +
                                std::to_string(first_seq) + " does not follow batch " +
                                std::to_string(commits_) + " at seq " + std::to_string(last_seq_));
  }
  APOLLO11_RETURN_IF_ERROR(Apply(batch, /*observe=*/false));
  batch_epoch_ = epoch;
  return Status::Ok();
}

Result<std::vector<TransitionRecord>> MemoryRunStore::HistoryOfRun(const std::string& run_id) {
  std::vector<TransitionRecord> out;
  for (const TransitionRecord& t : transitions_) {
    if (t.run_id == run_id) out.push_back(t);
  }
  return out;
}

Result<std::vector<TransitionRecord>> MemoryRunStore::HistoryOfExecution(
    const std::string& exec_id) {
  std::vector<TransitionRecord> out;
  for (const TransitionRecord& t : transitions_) {
    if (t.exec_id == exec_id) out.push_back(t);
  }
  return out;
}

Result<std::optional<RunRecord>> MemoryRunStore::GetRun(const std::string& run_id) {
  auto it = runs_.find(run_id);
  if (it == runs_.end()) return std::optional<RunRecord>();
  return std::optional<RunRecord>(it->second);
}

Result<std::vector<RunRecord>> MemoryRunStore::ListRuns(size_t limit) {
  std::vector<RunRecord> out;
  for (const auto& [id, run] : runs_) out.push_back(run);
  // Newest first; ties newest run id first, as the journal's time index reads.
  std::sort(out.begin(), out.end(), [](const RunRecord& a, const RunRecord& b) {
    return a.created_at != b.created_at ? a.created_at > b.created_at : a.run_id > b.run_id;
  });
  if (out.size() > limit) out.resize(limit);
  return out;
}

Result<std::vector<RunRecord>> MemoryRunStore::UnfinishedRuns() {
  std::vector<RunRecord> out;
  for (const auto& [id, run] : runs_) {
    if (!IsFinal(run.status)) out.push_back(run);
  }
  return out;
}

Result<std::vector<ExecutionRecord>> MemoryRunStore::ExecutionsOfRun(const std::string& run_id) {
  std::vector<ExecutionRecord> out;
  const std::string prefix = run_id + ".";
  for (auto it = executions_.lower_bound(prefix);
       it != executions_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
    out.push_back(it->second);
  }
  return out;
}

Result<bool> MemoryRunStore::HasExecutionsOf(const std::string& run_id) {
  const std::string prefix = run_id + ".";
  auto it = executions_.lower_bound(prefix);
  return it != executions_.end() && it->first.compare(0, prefix.size(), prefix) == 0;
}

Result<std::optional<ExecutionRecord>> MemoryRunStore::GetExecution(const std::string& exec_id) {
  auto it = executions_.find(exec_id);
  if (it == executions_.end()) return std::optional<ExecutionRecord>();
  return std::optional<ExecutionRecord>(it->second);
}

Result<std::optional<std::string>> MemoryRunStore::GetPipeline(const std::string& hash) {
  auto it = pipelines_.find(hash);
  if (it == pipelines_.end()) return std::optional<std::string>();
  auto text = UnpackSnapshot(it->second);
  if (!text.ok()) return text.status();
  return std::optional<std::string>(std::move(text).value());
}

Result<std::optional<Micros>> MemoryRunStore::DurationP50(const std::string& stats_key) {
  auto it = durations_.find(stats_key);
  if (it == durations_.end() || it->second.empty()) return std::optional<Micros>();
  std::vector<Micros> d = it->second;
  std::sort(d.begin(), d.end());
  const size_t n = d.size();
  Micros p50 = n % 2 == 1 ? d[n / 2] : d[n / 2 - 1] + (d[n / 2] - d[n / 2 - 1]) / 2;
  return std::optional<Micros>(p50);
}

Result<std::vector<PipelineStateRecord>> MemoryRunStore::ListPipelineStates() {
  std::vector<PipelineStateRecord> out;
  for (const auto& [name, state] : states_) out.push_back(state);
  return out;
}

Result<std::optional<PipelineStateRecord>> MemoryRunStore::GetPipelineState(
    const std::string& name) {
  auto it = states_.find(name);
  if (it == states_.end()) return std::optional<PipelineStateRecord>();
  return std::optional<PipelineStateRecord>(it->second);
}

Result<std::vector<PipelineVersionRecord>> MemoryRunStore::PipelineVersions(
    const std::string& name) {
  std::vector<PipelineVersionRecord> out;
  for (auto it = versions_.lower_bound({name, 0}); it != versions_.end() && it->first.first == name;
       ++it) {
    out.push_back(it->second);
  }
  return out;
}

Result<std::optional<std::string>> MemoryRunStore::RunOfTriggerKey(const std::string& name,
                                                                   const std::string& key) {
  auto it = trigger_keys_.find({name, key});
  if (it == trigger_keys_.end()) return std::optional<std::string>();
  return std::optional<std::string>(it->second);
}

Result<std::vector<ScheduleRecord>> MemoryRunStore::Schedules() {
  std::vector<ScheduleRecord> out;
  for (const auto& [name, r] : schedules_) out.push_back(r);
  return out;
}

Result<std::vector<FireRecord>> MemoryRunStore::Fires(const std::string& pipeline, Micros from,
                                                      Micros to) {
  std::vector<FireRecord> out;
  for (auto it = fires_.lower_bound(FireKey(pipeline, from));
       it != fires_.end() && it->second.pipeline == pipeline && it->second.scheduled_at <= to;
       ++it) {
    out.push_back(it->second);
  }
  return out;
}

Result<std::optional<FireRecord>> MemoryRunStore::LastFire(const std::string& pipeline) {
  auto it = fires_.upper_bound(FireKey(pipeline, INT64_MAX));
  if (it == fires_.begin()) return std::optional<FireRecord>();
  --it;
  if (it->second.pipeline != pipeline) return std::optional<FireRecord>();
  return std::optional<FireRecord>(it->second);
}

Result<std::vector<AuditRecord>> MemoryRunStore::ListAudit(const AuditFilter& filter,
                                                           bool* complete) {
  std::vector<AuditRecord> out;
  if (complete != nullptr) *complete = true;
  size_t scanned = 0;
  for (auto it = audit_.rbegin(); it != audit_.rend() && out.size() < filter.limit; ++it) {
    if (scanned++ == filter.max_scan) {
      if (complete != nullptr) *complete = false;
      break;
    }
    if (it->second.at < filter.since) break;
    if (Matches(filter, it->second)) out.push_back(it->second);
  }
  return out;
}

Result<size_t> MemoryRunStore::PruneAudit(Micros before, size_t max_records) {
  size_t removed = 0;
  while (removed < max_records && !audit_.empty() && audit_.begin()->second.at < before) {
    audit_.erase(audit_.begin());
    ++removed;
  }
  return removed;
}

}  // namespace apollo11::storage
