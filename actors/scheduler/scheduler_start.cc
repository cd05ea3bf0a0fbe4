// SchedulerCore: starting runs. A submission (its snapshot checked against
// its hash, or a model handed over in-process), a registered pipeline's run
// (RegistryHost::StartRun) and a rerun all end in StartRun and Register:
// a new run id, the run's DAG, its records staged for the turn's commit.
// Split from scheduler_core.cc by concern.

#include <malloc.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <optional>

#include "actors/scheduler/scheduler_core.h"
#include "common/ids.h"
#include "common/log_event.h"
#include "dsl/pipeline_json.h"
#include "dsl/task_limits.h"
#include "storage/snapshot_pack.h"

namespace apollo11::actors {

namespace {

// At most 32 bytes of a client's text for a message, unprintable bytes as '?'.
std::string Shown(const std::string& text) {
  std::string out = text.substr(0, 32);
  for (char& c : out) {
    if (c < 0x20 || c > 0x7e) c = '?';
  }
  return text.size() > 32 ? out + "..." : out;
}

}  // namespace

Result<std::string> SchedulerCore::Submit(SubmitRun submit, std::string packed) {
  // Snapshots are journaled under their hash, first come first kept: one
  // named by another's hash would replace that pipeline for every later
  // run's recovery and rerun.
  const std::string actual = dsl::HashCanonicalJson(submit.pipeline_json);
  if (actual != submit.pipeline_hash) {
    return Status::InvalidInput("the submission names its pipeline snapshot '" +
                                Shown(submit.pipeline_hash) + "' but the snapshot's hash is " +
                                actual + ": refused (a snapshot is journaled under its own hash)");
  }
  // Checked before the decode, so the stored text and the submitted one are
  // compared before the model takes its memory.
  APOLLO11_RETURN_IF_ERROR(CheckSnapshotUnclaimed(submit.pipeline_hash, submit.pipeline_json));
  auto spec = SpecFromSnapshot(submit.pipeline_json, "submitted pipeline");
  if (!spec.ok()) return spec.status();
  // The text goes before the run is built; StartRun keeps a packed form.
  if (storage::IsPackedSnapshot(packed)) submit.pipeline_json = std::move(packed);
  return StartParsed(std::move(submit), std::move(*spec));
}

Result<std::string> SchedulerCore::SubmitParsed(SubmitRun submit, dsl::PipelineSpec spec) {
  APOLLO11_RETURN_IF_ERROR(CheckSnapshotUnclaimed(submit.pipeline_hash, submit.pipeline_json));
  return StartParsed(std::move(submit), std::move(spec));
}

Status SchedulerCore::CheckSnapshotUnclaimed(const std::string& hash,
                                             const std::string& submitted) {
  // The same hash over different text (FNV-1a is no cryptographic hash: such
  // a pair can be made on purpose) must not run with the journaled one.
  auto stored = store_->GetPipeline(hash);
  if (!stored.ok()) return stored.status();
  if (!stored->has_value()) return Status::Ok();
  bool same = false;
  if (storage::IsPackedSnapshot(submitted)) {
    auto text = storage::UnpackSnapshot(submitted);
    if (!text.ok()) return text.status();
    same = **stored == *text;
  } else {
    same = **stored == submitted;
  }
  if (!same) {
    return Status::InvalidInput("a different pipeline snapshot is already journaled under hash " +
                                Shown(hash) + ": refused (two snapshots cannot share a hash)");
  }
  return Status::Ok();
}

Result<std::string> SchedulerCore::StartParsed(SubmitRun submit, dsl::PipelineSpec spec) {
  // A submitted file whose snapshot is a registered version runs pinned to it.
  uint32_t version = 0;
  PipelineRegistry& registry = registry_.pipelines();
  if (auto state = registry.State(spec.name); state.ok() && state->has_value()) {
    auto v = registry.Resolve(spec.name, submit.pipeline_hash);
    if (v.ok()) version = v->version;
  }
  return StartRun(std::move(submit), std::move(spec), version);
}

Status SchedulerCore::CheckRunCap() {
  if (runs_.size() < options_.max_active_runs) return Status::Ok();
  const std::string why = std::to_string(runs_.size()) +
                          " runs are active, the coordinator's cap (--max-active-runs " +
                          std::to_string(options_.max_active_runs) + ")";
  StageRunCapAlert(why);
  return Status::Full(why + ": no run starts until one ends");
}

void SchedulerCore::StageFire(storage::FireRecord fire) {
  using storage::FireState;
  observability::ScheduleFireOutcome outcome = observability::ScheduleFireOutcome::kStarted;
  if (fire.state == FireState::kQueued) {
    outcome = observability::ScheduleFireOutcome::kQueued;
  } else if (fire.state == FireState::kSkipped) {
    // A run that could not start (a paused pipeline, most often) is told
    // apart from a fire a policy or cap skipped.
    outcome = fire.reason.starts_with(kFireNotStarted)
                  ? observability::ScheduleFireOutcome::kNotStarted
                  : observability::ScheduleFireOutcome::kSkipped;
  }
  const bool timed = fire.state == FireState::kStarted && fire.origin != "backfill";
  options_.metrics->ScheduleFire(outcome, timed ? fire.decided_at - fire.scheduled_at : -1);
  batch_.PutFire(std::move(fire));
}

void SchedulerCore::StageRunCapAlert(const std::string& why) {
  alerts::AlertEvent a;
  a.type = alerts::AlertType::kRunCapReached;
  a.ts = clock_->Now();
  a.reason = why;
  staged_alerts_.push_back(std::move(a));
}

Result<std::string> SchedulerCore::StartRun(SubmitRun submit, dsl::PipelineSpec spec,
                                            uint32_t version) {
  APOLLO11_RETURN_IF_ERROR(CheckRunCap());
  Status params = dsl::CheckParamLimits(submit.params);
  if (!params.ok()) return params;
  if (options_.require_domain_prefix) APOLLO11_RETURN_IF_ERROR(CheckDomainPrefix(spec.name));

  const Micros now = clock_->Now();
  auto new_id = NewRunId(now);
  if (!new_id.ok()) return new_id.status();
  // Packed before the run is built: a large snapshot's text (17 MB at 100k
  // tasks) is gone before the graph, the records and the first commit's
  // pages take their memory. One packed already (SubmitParsed) is kept: JSON
  // text never begins with the packed form's tag.
  std::string snapshot = storage::IsPackedSnapshot(submit.pipeline_json)
                             ? std::move(submit.pipeline_json)
                             : storage::PackSnapshot(std::move(submit.pipeline_json));
  // The snapshot's decode, and then the graph's build (it frees the declared
  // dependencies), leave freed small blocks that glibc keeps resident. They
  // go back to the system before the run's records are allocated and again
  // before its first commit: a 1M-task run peaked 250 MB above what it held.
  constexpr size_t kTrimFromTasks = 8192;
  const bool large = spec.tasks.size() >= kTrimFromTasks;
  if (large) malloc_trim(0);
  auto made = MakeRun(*new_id, std::move(spec));
  if (!made.ok()) return made.status();
  if (large) malloc_trim(0);
  storage::RunRecord record;
  record.pipeline_hash = submit.pipeline_hash;
  record.params = std::move(submit.params);
  record.pipeline_version = version;
  batch_.PutPackedPipeline(submit.pipeline_hash, std::move(snapshot));
  SchedulerRun& ref = Register(std::move(*made), std::move(record), now);
  effects_.clear();
  ref.dag->Start(now, &effects_);
  Apply(ref, effects_, "scheduler");
  FinishIfDone(ref);  // an empty pipeline finishes at once
  return ref.run_id;
}

SchedulerRun& SchedulerCore::Register(std::unique_ptr<SchedulerRun> run, storage::RunRecord record,
                                      Micros now) {
  run->trace_id = NewTraceId();
  const size_t n = run->spec().tasks.size();
  run->record = std::move(record);
  run->record.run_id = run->run_id;
  run->record.pipeline_name = run->spec().name;
  run->record.status = RunStatus::kRunning;
  run->record.created_at = now;
  run->record.started_at = now;
  run->record.task_count = static_cast<uint32_t>(n);
  for (size_t i = 0; i < n; ++i) {
    run->exec_dirty[i] = 1;
    run->dirty_list.push_back(static_cast<int>(i));
  }
  batch_.CreateRun(run->record);
  run->creation_unjournaled = true;
  options_.metrics->RunSubmitted(n);
  SchedulerRun& ref = *run;
  const std::string run_id = run->run_id;
  runs_.emplace(run_id, std::move(run));
  LogEvent(spdlog::level::info, "run_started",
           {{"run_id", run_id}, {"pipeline", ref.spec().name}, {"tasks", n}},
           "run {} of {} started: {} tasks", run_id, ref.spec().name, n);
  return ref;
}

std::optional<uint32_t> SchedulerCore::ActiveRunVersion(const std::string& run_id) const {
  auto it = runs_.find(run_id);
  if (it == runs_.end()) return std::nullopt;
  return it->second->record.pipeline_version;
}

}  // namespace apollo11::actors
