#include "actors/scheduler_core.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <nlohmann/json.hpp>
#include <random>

#include "common/ids.h"
#include "common/log_event.h"
#include "dsl/pipeline_json.h"
#include "dsl/task_fields.h"
#include "engine/placement.h"

namespace apollo11::actors {

namespace {

bool InFlight(TaskState s) { return s == TaskState::kReady || s == TaskState::kRunning; }

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// Expands ${run_id}, ${task_id} and ${params.NAME} in an idempotency key
// template (the parser has already rejected unknown placeholders).
std::string ExpandKey(const std::string& tmpl, const std::string& run_id,
                      const std::string& task_id,
                      const std::map<std::string, std::string>& params) {
  if (tmpl.empty()) return run_id + "." + task_id;
  std::string out;
  size_t pos = 0;
  while (pos < tmpl.size()) {
    size_t open = tmpl.find("${", pos);
    if (open == std::string::npos) {
      out.append(tmpl, pos, std::string::npos);
      break;
    }
    out.append(tmpl, pos, open - pos);
    size_t close = tmpl.find('}', open);
    if (close == std::string::npos) {
      out.append(tmpl, open, std::string::npos);
      break;
    }
    std::string name = tmpl.substr(open + 2, close - open - 2);
    if (name == "run_id") {
      out += run_id;
    } else if (name == "task_id") {
      out += task_id;
    } else if (name.rfind("params.", 0) == 0) {
      auto it = params.find(name.substr(7));
      if (it != params.end()) out += it->second;
    }
    pos = close + 1;
  }
  return out;
}

// The pipeline model of a journaled snapshot, decoded task by task: the DOM
// of the whole document (several times the size of the model) never exists.
Result<dsl::PipelineSpec> SpecFromSnapshot(const std::string& snapshot, const char* what) {
  auto spec = dsl::PipelineFromJsonText(snapshot);
  if (!spec.ok() && spec.status().code() == StatusCode::kInvalidInput) {
    return Status::InvalidInput(std::string(what) + " is not valid JSON");
  }
  return spec;
}

double Uniform01() {
  thread_local std::mt19937_64 engine{std::random_device{}()};
  return std::uniform_real_distribution<double>(0.0, 1.0)(engine);
}

}  // namespace

struct SchedulerCore::RunCtx {
  std::string run_id;
  std::string trace_id;
  // The pipeline snapshot lives in the graph only: a 100k-task spec is tens
  // of MB, and a second copy here doubled it.
  std::shared_ptr<const engine::RunGraph> graph;
  const dsl::PipelineSpec& spec() const { return graph->spec(); }
  std::unique_ptr<engine::DagRun> dag;
  storage::RunRecord record;
  std::vector<storage::ExecutionRecord> execs;  // by task index
  std::vector<uint8_t> exec_dirty;
  std::vector<int> dirty_list;
  std::vector<std::string> outputs;  // by task index; kept only for tasks with dependents
  std::vector<int64_t> expected_ms;  // by task index: P50 of past durations, for placement
  std::vector<Micros> p50;           // by task index: 0 = no history, never flagged slow
  std::vector<Micros> placed_at;     // by task index: when the current attempt was placed
  std::vector<uint8_t> has_dependents;
  std::vector<std::string> stderr_tails;  // by task index: of the last failed attempt, for alerts
  bool progress_dirty = true;
  bool finished = false;
};

void SchedulerOutbox::Clear() {
  enqueue.execs.clear();
  acks.acks.clear();
  cancels.execs.clear();
  cancels.reason.clear();
  watch.deadlines.clear();
  unwatch.execs.clear();
  adopt.execs.clear();
  adopt.claim_until = 0;
  release.execs.clear();
  progress.clear();
  finished.clear();
}

bool SchedulerOutbox::Empty() const {
  return enqueue.execs.empty() && acks.acks.empty() && cancels.execs.empty() &&
         watch.deadlines.empty() && unwatch.execs.empty() && adopt.execs.empty() &&
         release.execs.empty() && progress.empty() && finished.empty();
}

SchedulerCore::SchedulerCore(storage::Journal* journal, const Clock* clock,
                             SchedulerOptions options)
    : journal_(journal), clock_(clock), options_(options) {
  if (options_.metrics)
    options_.metrics->backlog_cap.Set(static_cast<int64_t>(options_.max_backlog));
}

SchedulerCore::~SchedulerCore() = default;

Result<std::unique_ptr<SchedulerCore::RunCtx>> SchedulerCore::MakeRun(const std::string& run_id,
                                                                      dsl::PipelineSpec spec) {
  for (const dsl::TaskSpec& task : spec.tasks) {
    if (task.type == dsl::TaskType::kDb) {
      return Status::Unsupported("task '" + task.id +
                                 "' is a db task: db tasks validate but cannot run yet in this "
                                 "version of Apollo-11");
    }
    if (!task.foreach.empty()) {
      return Status::Unsupported("task '" + task.id +
                                 "' uses foreach: dynamic fan-out validates but cannot run yet in "
                                 "this version of Apollo-11");
    }
  }
  auto graph = engine::RunGraph::Compile(std::move(spec));
  if (!graph.ok()) return graph.status();

  auto run = std::make_unique<RunCtx>();
  run->run_id = run_id;
  run->graph = std::make_shared<const engine::RunGraph>(std::move(*graph));
  engine::DagRunOptions dag_options;
  dag_options.max_requeues = static_cast<int>(options_.max_requeues);
  run->dag = std::make_unique<engine::DagRun>(run->graph, dag_options);

  const size_t n = run->spec().tasks.size();
  run->execs.resize(n);
  run->exec_dirty.assign(n, 0);
  run->outputs.resize(n);
  run->has_dependents.assign(n, 0);
  run->stderr_tails.resize(n);
  // Placement weighs a worker's load by how long its tasks usually take: the
  // P50 of each task's past successful durations, read once per run here
  // rather than on every dispatch. Without history: the engine's default.
  run->expected_ms.assign(n, engine::kDefaultP50 / kMicrosPerMilli);
  run->p50.assign(n, 0);
  run->placed_at.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    auto p50 = journal_->DurationP50(run->spec().name + "/" + run->spec().tasks[i].id);
    if (p50.ok() && p50->has_value()) {
      run->expected_ms[i] = std::max<int64_t>(1, **p50 / kMicrosPerMilli);
      run->p50[i] = std::max<Micros>(1, **p50);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const dsl::TaskSpec& task = run->spec().tasks[i];
    storage::ExecutionRecord& rec = run->execs[i];
    rec.exec_id = MakeExecId(run->run_id, task.id);
    rec.run_id = run->run_id;
    rec.task_id = task.id;
    rec.state = TaskState::kPending;
    for (const dsl::Dependency& dep : task.depends_on) {
      if (const auto idx = run->graph->Find(dep.task); idx >= 0) run->has_dependents[idx] = 1;
    }
  }
  return run;
}

Result<std::string> SchedulerCore::Submit(SubmitRun submit) {
  auto spec = SpecFromSnapshot(submit.pipeline_json, "submitted pipeline");
  if (!spec.ok()) return spec.status();

  const Micros now = clock_->Now();
  const std::string run_id =
      submit.requested_run_id.empty() ? NewRunId(now) : submit.requested_run_id;
  if (runs_.count(run_id)) return Status::InvalidInput("run " + run_id + " exists");
  auto made = MakeRun(run_id, std::move(*spec));
  if (!made.ok()) return made.status();
  std::unique_ptr<RunCtx> run = std::move(*made);
  run->trace_id = NewTraceId();
  const size_t n = run->spec().tasks.size();
  run->record.run_id = run->run_id;
  run->record.pipeline_name = run->spec().name;
  run->record.pipeline_hash = submit.pipeline_hash;
  run->record.status = RunStatus::kRunning;
  run->record.created_at = now;
  run->record.started_at = now;
  run->record.task_count = static_cast<uint32_t>(n);
  run->record.params = submit.params;
  for (size_t i = 0; i < n; ++i) {
    run->execs[i].trace_id = run->trace_id;
    run->exec_dirty[i] = 1;
    run->dirty_list.push_back(static_cast<int>(i));
  }
  batch_.PutPipeline(submit.pipeline_hash, std::move(submit.pipeline_json));
  batch_.PutRun(run->record);

  if (auto* m = options_.metrics) m->RunSubmitted(n);
  RunCtx& ref = *run;
  runs_.emplace(run_id, std::move(run));
  LogEvent(spdlog::level::info, "run_started",
           {{"run_id", run_id}, {"pipeline", ref.spec().name}, {"tasks", n}},
           "run {} of {} started: {} tasks", run_id, ref.spec().name, n);
  effects_.clear();
  ref.dag->Start(now, &effects_);
  Apply(ref, effects_, "scheduler");
  FinishIfDone(ref);  // an empty pipeline finishes at once
  return run_id;
}

RecoveryReport SchedulerCore::Recover() {
  const auto wall_start = std::chrono::steady_clock::now();
  RecoveryReport report;
  const Micros now = clock_->Now();
  if (options_.recover == SchedulerOptions::RecoverMode::kNone) return report;
  auto unfinished = journal_->UnfinishedRuns();
  if (!unfinished.ok()) {
    spdlog::error("recovery: cannot list unfinished runs: {}", unfinished.status().ToString());
  } else {
    for (const storage::RunRecord& record : *unfinished) {
      if (runs_.count(record.run_id)) continue;
      if (options_.recover == SchedulerOptions::RecoverMode::kNone) break;
      if (options_.recover == SchedulerOptions::RecoverMode::kOne &&
          record.run_id != options_.recover_run) {
        continue;
      }
      Status s = RecoverRun(record, now, &report);
      if (s.ok()) continue;
      // A run we cannot rebuild must not stay "running" forever, nor stop
      // the coordinator from serving the others: it ends FAILED, saying why.
      ++report.failed_runs;
      storage::RunRecord failed = record;
      failed.status = RunStatus::kFailed;
      failed.finished_at = now;
      failed.reason = "could not be recovered after a coordinator restart: " + s.message();
      batch_.PutRun(failed);
      spdlog::error("recovery: run {} {}", record.run_id, failed.reason);
    }
  }
  report.elapsed_us = std::chrono::duration_cast<std::chrono::microseconds>(
                          std::chrono::steady_clock::now() - wall_start)
                          .count();
  return report;
}

Status SchedulerCore::RecoverRun(const storage::RunRecord& record, Micros now,
                                 RecoveryReport* report) {
  auto snapshot = journal_->GetPipeline(record.pipeline_hash);
  if (!snapshot.ok()) return snapshot.status();
  if (!snapshot->has_value()) {
    return Status::NotFound("pipeline snapshot " + record.pipeline_hash + " is missing");
  }
  auto spec = SpecFromSnapshot(**snapshot, "pipeline snapshot");
  if (!spec.ok()) return spec.status();
  auto made = MakeRun(record.run_id, std::move(*spec));
  if (!made.ok()) return made.status();
  std::unique_ptr<RunCtx> run = std::move(*made);
  run->record = record;
  run->record.status = RunStatus::kRunning;

  auto records = journal_->ExecutionsOfRun(record.run_id);
  if (!records.ok()) return records.status();
  for (storage::ExecutionRecord& rec : *records) {
    const int task = run->graph->Find(rec.task_id);
    if (task < 0) continue;  // not in the snapshot: ignore rather than guess
    APOLLO11_RETURN_IF_ERROR(run->dag->Restore(task, rec.state, rec.attempt,
                                               static_cast<int>(rec.retries_used),
                                               static_cast<int>(rec.requeues), rec.next_retry_at));
    if (run->trace_id.empty()) run->trace_id = rec.trace_id;
    // Upstream outputs feed dependents' environments; after a restart only
    // the journaled tail (journal_output_cap) is left of them.
    if (run->has_dependents[task]) run->outputs[task] = rec.output;
    run->execs[task] = std::move(rec);
  }
  if (run->trace_id.empty()) run->trace_id = NewTraceId();

  effects_.clear();
  APOLLO11_RETURN_IF_ERROR(run->dag->Resume(now, &effects_));
  RunCtx& ref = *run;
  runs_.emplace(record.run_id, std::move(run));
  if (auto* m = options_.metrics) {
    // The executions gauge takes them in the states the journal left them in;
    // the transitions below then move them on.
    std::array<size_t, kTaskStateCount> by_state{};
    for (const storage::ExecutionRecord& e : ref.execs) ++by_state[static_cast<int>(e.state)];
    m->RunRecovered(by_state);
  }
  // Counted before Apply: Resume only settles PENDING tasks, so the READY
  // and RUNNING ones it reports were in flight already.
  in_flight_ +=
      static_cast<size_t>(ref.dag->count(TaskState::kReady) + ref.dag->count(TaskState::kRunning));
  const size_t queued_before = staged_.enqueue.execs.size();
  // READY executions go straight back to the dispatcher: none of them was
  // sent before the crash, since a DISPATCH leaves only after its READY ->
  // RUNNING is committed. RUNNING ones wait for their workers to claim them.
  Apply(ref, effects_, "recovery");
  staged_.adopt.claim_until = now + options_.claim_window.count() * kMicrosPerMilli;
  for (int task = 0; task < ref.dag->size(); ++task) {
    if (ref.dag->state(task) != TaskState::kRunning) continue;
    const storage::ExecutionRecord& rec = ref.execs[task];
    staged_.adopt.execs.push_back(
        {rec.exec_id, ref.dag->attempt(task), rec.worker_id, ref.expected_ms[task]});
    StageDeadline(ref, task, rec.started_at ? rec.started_at : now);
    // A slow flag came back with the record; an unflagged attempt is watched again.
    WatchSlow(ref, task, ref.dag->attempt(task), rec.started_at ? rec.started_at : now);
    ++report->running;
  }
  ++report->runs;
  report->tasks += static_cast<size_t>(ref.dag->size());
  report->ready += staged_.enqueue.execs.size() - queued_before;
  report->retrying += static_cast<size_t>(ref.dag->count(TaskState::kRetrying));
  ref.progress_dirty = true;
  FinishIfDone(ref);
  return Status::Ok();
}

void SchedulerCore::StageDeadline(RunCtx& run, int task, Micros started_at) {
  const dsl::TaskSpec& spec = run.spec().tasks[task];
  if (!spec.timeout) return;
  Deadline d;
  d.exec_id = run.execs[task].exec_id;
  d.attempt = run.dag->attempt(task);
  d.timeout_ms = spec.timeout->count();
  d.deadline = started_at + (spec.timeout->count() + options_.kill_grace.count() +
                             options_.deadline_slack.count()) *
                                kMicrosPerMilli;
  staged_.watch.deadlines.push_back(std::move(d));
}

Status SchedulerCore::Cancel(const std::string& run_id, const std::string& reason,
                             const std::string& actor) {
  auto it = runs_.find(run_id);
  if (it == runs_.end()) return Status::NotFound("no active run " + run_id);
  RunCtx& run = *it->second;
  effects_.clear();
  run.dag->Cancel(reason, &effects_);
  Apply(run, effects_, actor);
  run.record.reason = reason;
  FinishIfDone(run);
  return Status::Ok();
}

SchedulerCore::RunCtx* SchedulerCore::FindRunOfExec(const std::string& exec_id, int* task) {
  auto dot = exec_id.find('.');
  if (dot == std::string::npos) return nullptr;
  auto it = runs_.find(exec_id.substr(0, dot));
  if (it == runs_.end()) return nullptr;
  int index = it->second->graph->Find(exec_id.substr(dot + 1));
  if (index < 0) return nullptr;
  *task = index;
  return it->second.get();
}

void SchedulerCore::OnPlaced(const Placed& placed) {
  for (const WorkerExecRef& ref : placed.placed) {
    int task = -1;
    RunCtx* run = FindRunOfExec(ref.exec_id, &task);
    if (run == nullptr) {  // the run ended meanwhile: free the reserved slot
      staged_.cancels.execs.push_back({ref.exec_id, ref.attempt});
      continue;
    }
    effects_.clear();
    Status s = run->dag->OnDispatched(task, ref.attempt, ref.worker_id, placed.at, &effects_);
    if (!s.ok()) {
      // Canceled or superseded meanwhile: the dispatcher frees the slot it
      // reserved (the DISPATCH was never sent).
      spdlog::warn("placement of {} attempt {} refused: {}", ref.exec_id, ref.attempt, s.message());
      staged_.cancels.execs.push_back({ref.exec_id, ref.attempt});
      continue;
    }
    staged_.release.execs.push_back({ref.exec_id, ref.attempt});
    storage::ExecutionRecord& rec = run->execs[task];
    rec.worker_id = ref.worker_id;
    rec.started_at = placed.at;
    Apply(*run, effects_, "dispatcher", ref.worker_id, task);
    StageDeadline(*run, task, placed.at);
    WatchSlow(*run, task, ref.attempt, placed.at);
  }
}

void SchedulerCore::OnStarted(const StartedBatch& batch) {
  for (const StartedFrom& item : batch.items) {
    int task = -1;
    RunCtx* run = FindRunOfExec(item.started.exec_id, &task);
    if (run == nullptr || run->dag->attempt(task) != item.started.attempt) continue;
    storage::ExecutionRecord& rec = run->execs[task];
    rec.started_at = item.started.started_at;
    if (!run->exec_dirty[task]) {
      run->exec_dirty[task] = 1;
      run->dirty_list.push_back(task);
    }
  }
}

void SchedulerCore::OnResults(const ResultBatch& batch) {
  const Micros now = clock_->Now();
  for (const ResultFrom& item : batch.items) {
    const transport::ResultMsg& r = item.result;
    // Whatever happens below, the worker stops resending once we answer.
    staged_.acks.acks.push_back({item.worker_id, r.exec_id, r.attempt});
    int task = -1;
    RunCtx* run = FindRunOfExec(r.exec_id, &task);
    if (run == nullptr) {
      ++stale_results_;
      if (options_.metrics) options_.metrics->stale_results.Inc();
      LogEvent(spdlog::level::warn, "result_dropped",
               {{"exec_id", r.exec_id}, {"attempt", r.attempt}, {"worker_id", item.worker_id}},
               "result for unknown or finished execution {} attempt {} from {} dropped", r.exec_id,
               r.attempt, item.worker_id);
      continue;
    }
    AttemptOutcome outcome;
    switch (static_cast<transport::Outcome>(r.outcome)) {
      case transport::Outcome::kSuccess:
        outcome = AttemptOutcome::kSuccess;
        break;
      case transport::Outcome::kAlreadyDone:
        outcome = AttemptOutcome::kAlreadyDone;
        break;
      case transport::Outcome::kTimeout:
        outcome = AttemptOutcome::kTimeout;
        break;
      case transport::Outcome::kCanceled:
        // A kill we asked for: the task already left RUNNING on our side.
        continue;
      default:
        outcome = AttemptOutcome::kFailed;
        break;
    }
    effects_.clear();
    Status s = run->dag->OnResult(task, r.attempt, outcome, r.exit_code, r.retryable, r.error, now,
                                  Uniform01(), &effects_);
    if (!s.ok()) {
      ++stale_results_;
      if (options_.metrics) options_.metrics->stale_results.Inc();
      // A resend of the current attempt's result is routine (its ACK was lost,
      // or is held while the journal cannot be written): not worth a warning.
      const bool resent = r.attempt == run->dag->attempt(task);
      LogEvent(resent ? spdlog::level::debug : spdlog::level::warn, "stale_result",
               {{"exec_id", r.exec_id},
                {"attempt", r.attempt},
                {"worker_id", item.worker_id},
                {"reason", s.message()}},
               "stale result for {} attempt {} from worker {} recorded and ignored: {}", r.exec_id,
               r.attempt, item.worker_id, s.message());
      continue;
    }
    if (outcome != AttemptOutcome::kSuccess && outcome != AttemptOutcome::kAlreadyDone) {
      // Only failures: a success is in the journal and keeps the hot path quiet.
      LogEvent(spdlog::level::info, "attempt_failed",
               {{"run_id", run->run_id},
                {"task_id", run->spec().tasks[task].id},
                {"exec_id", r.exec_id},
                {"attempt", r.attempt},
                {"worker_id", item.worker_id},
                {"exit_code", r.exit_code},
                {"reason", r.error}},
               "{} attempt {} failed on worker {} (exit {}): {}", r.exec_id, r.attempt,
               item.worker_id, r.exit_code, r.error);
    }
    storage::ExecutionRecord& rec = run->execs[task];
    if (options_.metrics)
      options_.metrics->AttemptEnded(outcome == AttemptOutcome::kTimeout, now - rec.ready_at);
    rec.exit_code = r.exit_code;
    rec.error = r.error;
    rec.output = r.output.size() > options_.journal_output_cap
                     ? r.output.substr(r.output.size() - options_.journal_output_cap)
                     : r.output;
    if (r.started_at) rec.started_at = r.started_at;
    if (run->has_dependents[task]) run->outputs[task] = r.output;
    run->stderr_tails[task] = outcome == AttemptOutcome::kSuccess ? "" : r.stderr_tail;
    if (outcome == AttemptOutcome::kSuccess && r.finished_at > r.started_at) {
      batch_.RecordDuration(run->spec().name + "/" + run->spec().tasks[task].id,
                            r.finished_at - r.started_at);
    }
    if (run->spec().tasks[task].timeout) staged_.unwatch.execs.push_back({r.exec_id, r.attempt});
    Apply(*run, effects_, "worker " + item.worker_id, item.worker_id, task);
    FinishIfDone(*run);
  }
}

void SchedulerCore::OnWorkerGone(const WorkerGone& gone) {
  for (const transport::ExecRef& ref : gone.execs) {
    int task = -1;
    RunCtx* run = FindRunOfExec(ref.exec_id, &task);
    if (run == nullptr) continue;
    if (run->dag->attempt(task) != ref.attempt || run->dag->state(task) != TaskState::kRunning) {
      continue;
    }
    effects_.clear();
    Status s = run->dag->OnRequeue(task, ref.attempt, gone.reason, &effects_);
    if (!s.ok()) {
      spdlog::warn("requeue of {} refused: {}", ref.exec_id, s.message());
      continue;
    }
    LogEvent(spdlog::level::warn, "requeued",
             {{"exec_id", ref.exec_id},
              {"attempt", ref.attempt},
              {"worker_id", gone.worker_id},
              {"reason", gone.reason}},
             "{} attempt {} requeued: {}", ref.exec_id, ref.attempt, gone.reason);
    Apply(*run, effects_, "reconciler", "", task);
    FinishIfDone(*run);
  }
}

void SchedulerCore::OnDeadlineExceeded(const DeadlineExceeded& exceeded) {
  const Micros now = clock_->Now();
  for (const Deadline& d : exceeded.exceeded) {
    int task = -1;
    RunCtx* run = FindRunOfExec(d.exec_id, &task);
    if (run == nullptr || run->dag->attempt(task) != d.attempt ||
        run->dag->state(task) != TaskState::kRunning) {
      continue;
    }
    effects_.clear();
    std::string error = "no result within the " + FormatDuration(Millis(d.timeout_ms)) +
                        " timeout plus grace: timed out by the coordinator";
    Status s = run->dag->OnResult(task, d.attempt, AttemptOutcome::kTimeout, -1, true, error, now,
                                  Uniform01(), &effects_);
    if (!s.ok()) continue;
    if (options_.metrics) options_.metrics->AttemptEnded(true, now - run->execs[task].ready_at);
    run->execs[task].error = error;
    staged_.cancels.execs.push_back({d.exec_id, d.attempt});
    Apply(*run, effects_, "reconciler", "", task);
    FinishIfDone(*run);
  }
}

void SchedulerCore::OnTimers() {
  const Micros now = clock_->Now();
  while (!retry_timers_.empty() && retry_timers_.top().due <= now) {
    RetryTimer timer = retry_timers_.top();
    retry_timers_.pop();
    auto it = runs_.find(timer.run_id);
    if (it == runs_.end()) continue;
    RunCtx& run = *it->second;
    if (run.dag->state(timer.task) != TaskState::kRetrying) continue;
    effects_.clear();
    Status s = run.dag->OnRetryDue(timer.task, now, &effects_);
    if (!s.ok()) {
      spdlog::warn("retry of {} refused: {}", run.execs[timer.task].exec_id, s.message());
      continue;
    }
    Apply(run, effects_, "scheduler");
  }
  FireSlowTimers(now);
}

Result<std::string> SchedulerCore::Explain(const std::string& run_id, const std::string& task_id,
                                           const WorkersSnapshot& workers) const {
  auto it = runs_.find(run_id);
  if (it == runs_.end()) return Status::NotFound("run " + run_id + " is not active");
  const RunCtx& run = *it->second;
  const int task = run.graph->Find(task_id);
  if (task < 0) return Status::InvalidInput("run " + run_id + " has no task " + task_id);
  const dsl::TaskSpec& spec = run.spec().tasks[task];
  std::string text = std::string(ToString(run.dag->state(task))) + ": " + run.dag->Explain(task);
  switch (run.dag->state(task)) {
    case TaskState::kPending:
      if (run.dag->IsEligible(task) && paused_) {
        text += "; held because the backlog is at its cap (" + std::to_string(in_flight_) +
                " executions READY or RUNNING, cap " + std::to_string(options_.max_backlog) +
                "); promotion resumes below " +
                std::to_string(static_cast<int>(options_.resume_fraction * 100)) + "%";
      }
      break;
    case TaskState::kReady: {
      int in_group = 0, with_credit = 0, labeled = 0;
      for (const WorkerInfo& w : workers.workers) {
        if (w.group != spec.group) continue;
        ++in_group;
        // Snapshot labels are sorted by the dispatcher.
        if (!engine::HasLabels(w.labels, spec.labels)) continue;
        ++labeled;
        with_credit += w.credits > 0 ? 1 : 0;
      }
      std::string labels;
      for (const std::string& l : spec.labels) labels += (labels.empty() ? "" : ", ") + l;
      if (in_group == 0) {
        text += "; no worker of group '" + spec.group + "' is connected: it waits until one joins";
      } else if (labeled == 0) {
        text += "; no connected worker of group '" + spec.group + "' has all the labels [" +
                labels + "] (" + std::to_string(in_group) +
                " connected): it waits until one with them joins";
      } else if (with_credit == 0) {
        text += "; all " + std::to_string(labeled) + " workers of group '" + spec.group + "'" +
                (labels.empty() ? "" : " with labels [" + labels + "]") + " are busy";
      } else {
        text += "; being placed on a worker of group '" + spec.group + "'";
      }
      break;
    }
    case TaskState::kRetrying:
      text += "; next attempt at " + FormatTimestamp(run.execs[task].next_retry_at);
      break;
    case TaskState::kRunning:
      text += "; on worker " + run.execs[task].worker_id + " since " +
              FormatTimestamp(run.execs[task].started_at);
      if (run.execs[task].slow == storage::SlowFlag::kFlagged) {
        text += "; flagged slow and waiting for confirmation (" + run.execs[task].slow_reason +
                "): apollo11 confirm " + run.execs[task].exec_id + " --kill|--keep";
      } else if (run.execs[task].slow == storage::SlowFlag::kKept) {
        text += "; flagged slow, then kept by the operator";
      }
      break;
    default:
      break;
  }
  return text;
}

Micros SchedulerCore::NextTimer() const {
  Micros next = retry_timers_.empty() ? 0 : retry_timers_.top().due;
  if (!slow_timers_.empty() && (next == 0 || slow_timers_.top().due < next)) {
    next = slow_timers_.top().due;
  }
  return next;
}

void SchedulerCore::Apply(RunCtx& run, engine::Effects& effects, const std::string& actor,
                          const std::string& worker_id, int cause_task) {
  const Micros now = clock_->Now();
  for (engine::TaskTransition& t : effects.transitions) {
    storage::ExecutionRecord& rec = run.execs[t.task];
    storage::TransitionRecord tr;
    tr.ts = now;
    tr.run_id = run.run_id;
    tr.task_id = rec.task_id;
    tr.exec_id = rec.exec_id;
    tr.attempt = t.attempt;
    tr.from = t.from;
    tr.to = t.to;
    if (options_.alerts && (t.to == TaskState::kFailed || t.to == TaskState::kTimeout)) {
      StageAlert(t.to == TaskState::kFailed ? alerts::AlertType::kRetriesExhausted
                                            : alerts::AlertType::kTimeout,
                 run, t.task, t.attempt, t.reason);
    }
    if (t.to == TaskState::kRunning) tr.worker_id = worker_id;
    tr.reason = std::move(t.reason);
    tr.actor = (cause_task < 0 || t.task == cause_task) ? actor : "scheduler";
    batch_.Append(std::move(tr));
    if (options_.metrics) options_.metrics->Transition(t.from, t.to);

    if (InFlight(t.from)) --in_flight_;
    if (InFlight(t.to)) ++in_flight_;
    if (t.from == TaskState::kRunning) {
      // A slow flag concerns one attempt; it ends with it (history keeps it).
      rec.slow = storage::SlowFlag::kNone;
      rec.slow_reason.clear();
      rec.flagged_at = 0;
    }
    rec.state = t.to;
    rec.attempt = t.attempt;
    rec.retries_used = run.dag->retries_used(t.task);
    rec.requeues = run.dag->requeues(t.task);
    switch (t.to) {
      case TaskState::kReady:
        rec.ready_at = now;
        rec.next_retry_at = 0;
        break;
      case TaskState::kRunning:
        if (!worker_id.empty()) rec.worker_id = worker_id;
        break;
      default:
        if (IsFinal(t.to)) rec.finished_at = now;
        break;
    }
    if (!run.exec_dirty[t.task]) {
      run.exec_dirty[t.task] = 1;
      run.dirty_list.push_back(t.task);
    }
    run.progress_dirty = true;
  }
  for (int task : effects.dispatch) StageDispatch(run, task);
  for (const auto& [task, due] : effects.retry_timers) {
    retry_timers_.push({due, run.run_id, task});
    run.execs[task].next_retry_at = due;
  }
  for (int task : effects.kill) {
    staged_.cancels.execs.push_back({run.execs[task].exec_id, run.dag->attempt(task)});
    if (run.spec().tasks[task].timeout) {
      staged_.unwatch.execs.push_back({run.execs[task].exec_id, run.dag->attempt(task)});
    }
  }
}

void SchedulerCore::StageDispatch(RunCtx& run, int task) {
  const dsl::TaskSpec& spec = run.spec().tasks[task];
  const storage::ExecutionRecord& rec = run.execs[task];
  QueuedExec q;
  q.group = spec.group;
  q.priority = spec.priority;
  q.ready_at = clock_->Now();
  q.expected_ms = run.expected_ms[task];
  q.labels = spec.labels;
  transport::Dispatch& d = q.dispatch;
  d.exec_id = rec.exec_id;
  d.attempt = run.dag->attempt(task);
  d.trace_id = run.trace_id;
  const std::string idempotency_key =
      ExpandKey(spec.idempotency_key, run.run_id, spec.id, run.record.params);
  transport::TaskPayload& p = d.task;
  dsl::CopyWireFields(spec, &p);
  p.type = static_cast<uint8_t>(spec.type);
  p.timeout_ms = spec.timeout ? spec.timeout->count() : 0;
  p.kill_grace_ms = options_.kill_grace.count();
  p.run_precheck = !spec.precheck.empty() && run.dag->requeues(task) > 0;
  if (spec.type == dsl::TaskType::kNoop) {
    p.env.clear();
  } else {
    p.env["APOLLO11_RUN_ID"] = run.run_id;
    p.env["APOLLO11_TASK_ID"] = spec.id;
    p.env["APOLLO11_EXECUTION_ID"] = rec.exec_id;
    p.env["APOLLO11_ATTEMPT"] = std::to_string(d.attempt);
    p.env["APOLLO11_TRACE_ID"] = d.trace_id;
    p.env["APOLLO11_IDEMPOTENCY_KEY"] = idempotency_key;
    p.env["APOLLO11_PIPELINE"] = run.spec().name;
    for (const auto& [name, value] : run.record.params) {
      p.env["APOLLO11_PARAM_" + Upper(name)] = value;
    }
    for (const dsl::Dependency& dep : spec.depends_on) {
      int up = run.graph->Find(dep.task);
      if (up < 0) continue;
      const std::string& out = run.outputs[up];
      p.env["APOLLO11_OUTPUT_" + Upper(dep.task)] =
          out.size() > options_.output_env_cap ? out.substr(out.size() - options_.output_env_cap)
                                               : out;
    }
  }
  staged_.enqueue.execs.push_back(std::move(q));
}

void SchedulerCore::FinishIfDone(RunCtx& run) {
  if (run.finished || !run.dag->Finished()) return;
  run.finished = true;
  const Micros now = clock_->Now();
  run.record.status = run.dag->Outcome();
  run.record.finished_at = now;
  if (run.record.reason.empty()) {
    auto count = [&](TaskState s) { return run.dag->count(s); };
    run.record.reason = std::to_string(count(TaskState::kSuccess)) + " succeeded, " +
                        std::to_string(count(TaskState::kFailed)) + " failed, " +
                        std::to_string(count(TaskState::kTimeout)) + " timed out, " +
                        std::to_string(count(TaskState::kSkipped)) + " skipped, " +
                        std::to_string(count(TaskState::kCanceled)) + " canceled";
  }
  batch_.PutRun(run.record);
  if (options_.metrics) options_.metrics->RunFinished(run.record.status);
  RunFinished f;
  f.run_id = run.run_id;
  f.status = static_cast<uint8_t>(run.record.status);
  f.reason = run.record.reason;
  staged_.finished.push_back(std::move(f));
  run.progress_dirty = true;
  if (options_.alerts &&
      (run.record.status == RunStatus::kFailed || run.record.status == RunStatus::kCanceled)) {
    StageAlert(run.record.status == RunStatus::kFailed ? alerts::AlertType::kRunFailed
                                                       : alerts::AlertType::kRunCanceled,
               run, -1, 0, run.record.reason);
  }
  LogEvent(spdlog::level::info, "run_finished",
           {{"run_id", run.run_id},
            {"state", ToString(run.record.status)},
            {"reason", run.record.reason}},
           "run {} finished {}: {}", run.run_id, ToString(run.record.status), run.record.reason);
}

void SchedulerCore::Promote() {
  if (!paused_ && in_flight_ >= options_.max_backlog) {
    paused_ = true;
    ++backlog_events_;
    if (options_.metrics) options_.metrics->backlog_pauses.Inc();
    LogEvent(spdlog::level::warn, "backlog_paused",
             {{"backlog", in_flight_}, {"cap", options_.max_backlog}},
             "backlog at its cap ({} executions READY or RUNNING): promotion paused", in_flight_);
    if (options_.alerts) {
      alerts::AlertEvent a;
      a.type = alerts::AlertType::kBacklogAtCap;
      a.ts = clock_->Now();
      a.reason = "backlog at its cap (" + std::to_string(in_flight_) + " executions READY or " +
                 "RUNNING, cap " + std::to_string(options_.max_backlog) +
                 "): promotion paused until it falls below " +
                 std::to_string(static_cast<int>(options_.resume_fraction * 100)) + "%";
      staged_alerts_.push_back(std::move(a));
    }
  } else if (paused_ &&
             in_flight_ < static_cast<size_t>(options_.resume_fraction * options_.max_backlog)) {
    paused_ = false;
    LogEvent(spdlog::level::info, "backlog_resumed", {{"backlog", in_flight_}},
             "backlog down to {}: promotion resumed", in_flight_);
  }
  if (paused_) return;
  for (auto& [id, run] : runs_) {
    if (run->finished) continue;
    if (in_flight_ >= options_.max_backlog) break;
    int budget = static_cast<int>(options_.max_backlog - in_flight_);
    effects_.clear();
    if (run->dag->PromoteEligible(budget, &effects_) > 0) Apply(*run, effects_, "scheduler");
  }
}

void SchedulerCore::StageProgress(bool force) {
  const Micros now = clock_->Now();
  if (!force && now - last_progress_ < options_.progress_interval.count() * kMicrosPerMilli) return;
  last_progress_ = now;
  for (auto& [id, run] : runs_) {
    if (!run->progress_dirty) continue;
    run->progress_dirty = false;
    RunProgress p;
    p.run_id = id;
    for (int s = 0; s < kTaskStateCount; ++s) {
      p.counts.push_back(static_cast<uint32_t>(run->dag->count(static_cast<TaskState>(s))));
    }
    staged_.progress.push_back(std::move(p));
  }
}

void SchedulerCore::StageAlert(alerts::AlertType type, const RunCtx& run, int task,
                               uint32_t attempt, const std::string& reason) {
  alerts::AlertEvent a;
  a.type = type;
  a.pipeline = run.spec().name;
  a.run_id = run.run_id;
  a.ts = clock_->Now();
  a.reason = reason;
  if (task >= 0) {
    const storage::ExecutionRecord& rec = run.execs[task];
    a.task_id = rec.task_id;
    a.exec_id = rec.exec_id;
    a.attempt = attempt;
    a.worker_id = rec.worker_id;
    a.stderr_tail = run.stderr_tails[task];
  }
  staged_alerts_.push_back(std::move(a));
}

void SchedulerCore::TakeEnqueue(Enqueue* out) {
  out->execs.clear();
  if (commit_failing_) return;
  Promote();
  std::swap(out->execs, staged_.enqueue.execs);
}

Status SchedulerCore::Flush(SchedulerOutbox* out) {
  // While commits fail (disk full) nothing new is promoted: what is staged
  // waits, and memory does not fill with work that cannot be journaled.
  if (!commit_failing_) Promote();
  for (auto& [id, run] : runs_) {
    for (int task : run->dirty_list) {
      batch_.PutExecution(run->execs[task]);
      run->exec_dirty[task] = 0;
    }
    run->dirty_list.clear();
  }
  StageProgress(!staged_.finished.empty());
  if (options_.metrics) options_.metrics->Backlog(in_flight_, paused_);
  if (!batch_.empty()) {
    const Micros begin = clock_->Now();
    const size_t transitions = batch_.transitions();
    Status s = journal_->Commit(batch_);
    commit_failing_ = !s.ok();
    if (options_.metrics) options_.metrics->Committed(s.ok(), transitions, clock_->Now() - begin);
    if (!s.ok()) return s;  // staged messages stay staged; the batch is retried
  }
  std::swap(*out, staged_);
  staged_.Clear();
  for (alerts::AlertEvent& a : staged_alerts_) options_.alerts->Emit(std::move(a));
  staged_alerts_.clear();
  // Finished runs leave memory once their end is durable.
  for (const RunFinished& f : out->finished) runs_.erase(f.run_id);
  return Status::Ok();
}

// ---- slow tasks -------------------------------------------------------------

namespace {

// The per-task slow-check inputs tolerate a RunCtx built without them (a run
// restored after a restart before its history is loaded): no P50, no check.
Micros P50Of(const std::vector<Micros>& p50, int task) {
  return static_cast<size_t>(task) < p50.size() ? p50[task] : 0;
}

}  // namespace

Micros SchedulerCore::SlowThreshold(const RunCtx& run, int task) const {
  return std::max<Micros>(P50Of(run.p50, task) * options_.slow_factor,
                          options_.slow_min.count() * kMicrosPerMilli);
}

Micros SchedulerCore::PlacedAt(const RunCtx& run, int task) const {
  if (static_cast<size_t>(task) < run.placed_at.size() && run.placed_at[task] > 0) {
    return run.placed_at[task];
  }
  return run.execs[task].started_at;
}

void SchedulerCore::WatchSlow(RunCtx& run, int task, uint32_t attempt, Micros placed_at) {
  if (run.placed_at.size() < run.execs.size()) run.placed_at.resize(run.execs.size(), 0);
  run.placed_at[task] = placed_at;
  // Without history there is no "usual" duration to compare with.
  if (P50Of(run.p50, task) <= 0) return;
  slow_timers_.push({placed_at + SlowThreshold(run, task), run.run_id, task, attempt});
}

void SchedulerCore::FireSlowTimers(Micros now) {
  while (!slow_timers_.empty() && slow_timers_.top().due <= now) {
    SlowTimer timer = slow_timers_.top();
    slow_timers_.pop();
    auto it = runs_.find(timer.run_id);
    if (it == runs_.end()) continue;
    RunCtx& run = *it->second;
    storage::ExecutionRecord& rec = run.execs[timer.task];
    // Stale when the attempt already ended or was requeued.
    if (run.dag->state(timer.task) != TaskState::kRunning ||
        run.dag->attempt(timer.task) != timer.attempt || rec.slow != storage::SlowFlag::kNone) {
      continue;
    }
    const Micros ran = now - PlacedAt(run, timer.task);
    rec.slow = storage::SlowFlag::kFlagged;
    rec.slow_reason = "running " + FormatDuration(Millis(ran / kMicrosPerMilli)) + ", more than " +
                      std::to_string(options_.slow_factor) + "x its P50 of " +
                      FormatDuration(Millis(P50Of(run.p50, timer.task) / kMicrosPerMilli)) +
                      " and at least " + FormatDuration(options_.slow_min);
    rec.flagged_at = now;
    ++slow_flags_;
    std::string reason = "flagged slow: " + rec.slow_reason +
                         "; it keeps running until an operator confirms --kill or --keep";
    LogEvent(spdlog::level::warn, "slow_task",
             {{"run_id", run.run_id},
              {"task_id", rec.task_id},
              {"exec_id", rec.exec_id},
              {"attempt", timer.attempt},
              {"worker_id", rec.worker_id},
              {"reason", reason}},
             "{} attempt {} on worker {} {}", rec.exec_id, timer.attempt, rec.worker_id, reason);
    if (options_.alerts) {
      StageAlert(alerts::AlertType::kSlowTask, run, timer.task, timer.attempt, reason);
    }
    StageNote(run, timer.task, std::move(reason), "scheduler");
  }
}

void SchedulerCore::StageNote(RunCtx& run, int task, std::string reason, const std::string& actor) {
  const storage::ExecutionRecord& rec = run.execs[task];
  storage::TransitionRecord tr;
  tr.ts = clock_->Now();
  tr.run_id = run.run_id;
  tr.task_id = rec.task_id;
  tr.exec_id = rec.exec_id;
  tr.attempt = run.dag->attempt(task);
  tr.from = tr.to = run.dag->state(task);
  tr.reason = std::move(reason);
  tr.actor = actor;
  tr.note = true;
  batch_.Append(std::move(tr));
  if (!run.exec_dirty[task]) {
    run.exec_dirty[task] = 1;
    run.dirty_list.push_back(task);
  }
  run.progress_dirty = true;
}

Result<std::string> SchedulerCore::Confirm(const std::string& exec_id, bool kill,
                                           const std::string& actor) {
  int task = -1;
  RunCtx* run = FindRunOfExec(exec_id, &task);
  if (run == nullptr) {
    // Not in an active run: say whether it exists at all.
    auto stored = journal_->GetExecution(exec_id);
    if (!stored.ok()) return stored.status();
    if (!stored->has_value()) return Status::NotFound("no execution " + exec_id);
    return Status::InvalidInput("execution " + exec_id + " is " + ToString((*stored)->state) +
                                ", not running: only a running execution flagged slow can be "
                                "confirmed");
  }
  storage::ExecutionRecord& rec = run->execs[task];
  const TaskState state = run->dag->state(task);
  if (state != TaskState::kRunning) {
    return Status::InvalidInput("execution " + exec_id + " is " + ToString(state) +
                                ", not running: only a running execution flagged slow can be "
                                "confirmed");
  }
  if (rec.slow == storage::SlowFlag::kKept) {
    return Status::InvalidInput("execution " + exec_id +
                                " was already kept by the operator; it is not flagged again "
                                "during this attempt");
  }
  if (rec.slow != storage::SlowFlag::kFlagged) {
    std::string when = P50Of(run->p50, task) > 0
                           ? "it would be flagged after " +
                                 FormatDuration(Millis(SlowThreshold(*run, task) / kMicrosPerMilli))
                           : "its task has no duration history yet, so it is never flagged";
    return Status::InvalidInput("execution " + exec_id + " is running but not flagged slow (" +
                                when + ")");
  }
  const Micros now = clock_->Now();
  const std::string figures =
      "ran " + FormatDuration(Millis((now - PlacedAt(*run, task)) / kMicrosPerMilli)) + ", P50 " +
      FormatDuration(Millis(P50Of(run->p50, task) / kMicrosPerMilli));
  const uint32_t attempt = run->dag->attempt(task);
  if (!kill) {
    rec.slow = storage::SlowFlag::kKept;
    std::string reason =
        "operator kept it after slow flag (" + figures + "); not flagged again during this attempt";
    spdlog::info("exec_id={} attempt={}: {}", exec_id, attempt, reason);
    StageNote(*run, task, reason, actor);
    return "kept " + exec_id + " (" + figures + ")";
  }
  const std::string error = "killed by operator after slow flag (" + figures + ")";
  effects_.clear();
  Status s = run->dag->OnResult(task, attempt, AttemptOutcome::kFailed, -1, /*retryable=*/true,
                                error, now, Uniform01(), &effects_);
  if (!s.ok()) return Status::Internal("kill of " + exec_id + " refused: " + s.message());
  rec.error = error;
  rec.exit_code = -1;
  staged_.cancels.execs.push_back({exec_id, attempt});
  if (run->spec().tasks[task].timeout) staged_.unwatch.execs.push_back({exec_id, attempt});
  Apply(*run, effects_, actor, "", task);
  const TaskState after = run->dag->state(task);
  spdlog::info("exec_id={} attempt={}: {}; now {}", exec_id, attempt, error, ToString(after));
  FinishIfDone(*run);
  return "killed " + exec_id + " (" + figures + "); the task is now " + ToString(after);
}

}  // namespace apollo11::actors
