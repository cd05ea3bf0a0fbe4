#include "observability/coordinator_metrics.h"

namespace apollo11::observability {

const char* ToString(WorkerRefusal reason) {
  switch (reason) {
    case WorkerRefusal::kUnregistered:
      return "unregistered";
    case WorkerRefusal::kNotHolder:
      return "not_holder";
    case WorkerRefusal::kUnexpected:
      return "unexpected";
    case WorkerRefusal::kRole:
      return "role";
    case WorkerRefusal::kDuplicateId:
      return "duplicate_id";
    case WorkerRefusal::kBadHello:
      return "bad_hello";
  }
  return "?";
}

CoordinatorMetrics* CoordinatorMetrics::Inert() {
  // Never destroyed: a core may still write it while static destructors run.
  static Registry* registry = new Registry();
  static CoordinatorMetrics* inert = new CoordinatorMetrics(*registry);
  return inert;
}

CoordinatorMetrics::CoordinatorMetrics(Registry& r)
    : runs_submitted(r.AddCounter("apollo11_runs_submitted_total", "Runs submitted.")),
      runs_active(r.AddGauge("apollo11_runs_active", "Runs not yet finished.")),
      timeouts(r.AddCounter("apollo11_timeouts_total",
                            "Attempts that timed out (killed by the worker or by the "
                            "coordinator's deadline).")),
      task_latency(r.AddHistogram("apollo11_task_latency_seconds",
                                  "End-to-end latency of an attempt: READY until its result is "
                                  "applied by the scheduler.",
                                  SlowLatencyBuckets())),
      backlog(r.AddGauge("apollo11_backlog", "Executions READY or RUNNING across all runs.")),
      backlog_cap(r.AddGauge("apollo11_backlog_cap",
                             "The backlog cap (max_backlog): promotion pauses at it.")),
      backlog_paused(
          r.AddGauge("apollo11_backlog_paused",
                     "1 while promotion is paused because the backlog reached its cap.")),
      backlog_pauses(r.AddCounter("apollo11_backlog_pauses_total",
                                  "Times the backlog reached its cap and promotion paused.")),
      commit_latency(r.AddHistogram("apollo11_journal_commit_seconds",
                                    "Latency of one journal group commit (one LMDB write "
                                    "transaction).",
                                    FastLatencyBuckets())),
      commits(r.AddCounter("apollo11_journal_commits_total",
                           "Journal group commits (write transactions) that succeeded.")),
      commit_failures(
          r.AddCounter("apollo11_journal_commit_failures_total",
                       "Journal commits that failed (e.g. disk full) and are retried.")),
      journaled_transitions(r.AddCounter("apollo11_journal_transitions_total",
                                         "State transitions written to the journal.")),
      stale_results(r.AddCounter("apollo11_stale_results_total",
                                 "Duplicate or stale results acknowledged and ignored.")),
      retrying(r.AddGauge("apollo11_retrying",
                          "Executions RETRYING with their backoff timer running (at most "
                          "--max-retrying).")),
      retries_queued(r.AddGauge("apollo11_retries_queued",
                                "Executions RETRYING whose backoff waits for a slot under "
                                "--max-retrying.")),
      retries_deferred(r.AddCounter("apollo11_retries_deferred_total",
                                    "Retries that had to queue for a slot under --max-retrying.")),
      dispatch_latency(r.AddHistogram("apollo11_dispatch_latency_seconds",
                                      "Latency from an execution becoming READY to its DISPATCH "
                                      "being sent to a worker.",
                                      FastLatencyBuckets())),
      tasks_waiting(r.AddGauge("apollo11_tasks_waiting",
                               "READY executions waiting in the dispatcher for a worker with "
                               "credit.")),
      workers_idle(
          r.AddGauge("apollo11_workers", "Connected workers by state.", {{"state", "idle"}})),
      workers_busy(
          r.AddGauge("apollo11_workers", "Connected workers by state.", {{"state", "busy"}})),
      worker_slots(r.AddGauge("apollo11_cluster_slots", "Slots of all connected workers.")),
      worker_slots_free(
          r.AddGauge("apollo11_cluster_slots_free",
                     "Slots of all connected workers holding no execution (running or queued).")),
      workers_lost(r.AddCounter("apollo11_workers_lost_total",
                                "Workers declared lost (missed heartbeats, or a connection "
                                "that broke), their executions requeued.")),
      client_requests_refused(r.AddCounter(
          "apollo11_client_requests_refused_total",
          "Client requests refused because the caller's key role does not allow them.")),
      schedule_fire_lag(r.AddHistogram("apollo11_schedule_fire_lag_seconds",
                                       "From a scheduled time to its run's start, for fires "
                                       "on time or by catch-up (not backfill).",
                                       SlowLatencyBuckets())),
      schedule_fires_missed(
          r.AddCounter("apollo11_schedule_fires_missed_total",
                       "Scheduled times that passed with no fire decided: later than the "
                       "schedule's catchup allows (the coordinator was down or behind).")),
      heartbeat_losses(r.AddCounter("apollo11_heartbeat_losses_total",
                                    "Workers declared lost after missing their heartbeats.")),
      pipelines_(r) {
  AddStateSeries(r);
  AddRefusalCounters(r);
  AddRetryRatio(r);
  AddRunOutcomes(r);
  AddScheduleFires(r);
}

const char* ToString(ScheduleFireOutcome outcome) {
  switch (outcome) {
    case ScheduleFireOutcome::kStarted:
      return "started";
    case ScheduleFireOutcome::kQueued:
      return "queued";
    case ScheduleFireOutcome::kSkipped:
      return "skipped";
    case ScheduleFireOutcome::kNotStarted:
      return "not_started";
  }
  return "?";
}

void CoordinatorMetrics::AddScheduleFires(Registry& r) {
  for (int i = 0; i < kScheduleFireOutcomes; ++i) {
    schedule_fires_[i] = &r.AddCounter(
        "apollo11_schedule_fires_total",
        "Schedule fires decided, by outcome: started a run, queued behind active runs, skipped "
        "(overlap: skip, a cap, a catch-up policy), not_started (the run was refused, e.g. a "
        "paused pipeline).",
        {{"outcome", ToString(static_cast<ScheduleFireOutcome>(i))}});
  }
}

void CoordinatorMetrics::AddStateSeries(Registry& r) {
  for (int s = 0; s < kTaskStateCount; ++s) {
    const auto state = static_cast<TaskState>(s);
    if (IsFinal(state)) continue;
    executions_[s] = &r.AddGauge("apollo11_executions",
                                 "Executions of active runs by current (non-final) state.",
                                 {{"state", StateLabel(state)}});
  }
  for (int s = 0; s < kTaskStateCount; ++s) {
    const auto state = static_cast<TaskState>(s);
    if (!IsFinal(state)) continue;
    executions_finished_[s] =
        &r.AddCounter("apollo11_executions_finished_total",
                      "Executions that reached a final state in this process, by state.",
                      {{"state", StateLabel(state)}});
  }
  for (int s = 0; s < kTaskStateCount; ++s) {
    transitions_[s] =
        &r.AddCounter("apollo11_transitions_total", "Journaled state transitions by target state.",
                      {{"to", StateLabel(static_cast<TaskState>(s))}});
  }
}

void CoordinatorMetrics::AddRefusalCounters(Registry& r) {
  for (int i = 0; i < kWorkerRefusals; ++i) {
    refused_frames_[i] = &r.AddCounter(
        "apollo11_worker_frames_refused_total",
        "Frames from the worker port refused (not from the registered worker holding the "
        "execution, wrong key role, duplicate worker id, ...), by reason.",
        {{"reason", ToString(static_cast<WorkerRefusal>(i))}});
  }
}

void CoordinatorMetrics::AddRetryRatio(Registry& r) {
  executions_created_ =
      &r.AddCounter("apollo11_executions_created_total", "Executions (tasks of runs) created.");
  Counter* retries = transitions_[static_cast<int>(TaskState::kRetrying)];
  Counter* created = executions_created_;
  r.AddComputedGauge("apollo11_retry_ratio",
                     "Retries scheduled per execution created (transitions to RETRYING / "
                     "executions created); 0 before any execution.",
                     [retries, created] {
                       const double c = static_cast<double>(created->value());
                       return c > 0 ? static_cast<double>(retries->value()) / c : 0.0;
                     });
}

void CoordinatorMetrics::AddRunOutcomes(Registry& r) {
  for (RunStatus s : {RunStatus::kSuccess, RunStatus::kFailed, RunStatus::kCanceled}) {
    runs_[static_cast<int>(s)] = &r.AddCounter(
        "apollo11_runs_finished_total", "Runs finished, by outcome.", {{"outcome", StateLabel(s)}});
  }
  runs_failures_handled_ = &r.AddCounter(
      "apollo11_runs_failures_handled_total",
      "Runs that finished SUCCESS with failed or timed-out tasks, each handled by a dependent's "
      "on: failure, timeout or done branch (also counted as outcome success).");
}

void CoordinatorMetrics::RunSubmitted(size_t tasks) {
  runs_submitted.Inc();
  runs_active.Add(1);
  executions_[static_cast<int>(TaskState::kPending)]->Add(static_cast<int64_t>(tasks));
  executions_created_->Inc(tasks);
}

void CoordinatorMetrics::RunRecovered(const std::array<size_t, kTaskStateCount>& by_state) {
  runs_active.Add(1);
  for (int s = 0; s < kTaskStateCount; ++s) {
    if (executions_[s] != nullptr) executions_[s]->Add(static_cast<int64_t>(by_state[s]));
  }
}

void CoordinatorMetrics::RunFinished(RunStatus outcome, PipelineMetrics* pipeline, Micros took,
                                     bool failures_handled) {
  if (Counter* c = runs_[static_cast<int>(outcome)]) c->Inc();
  if (failures_handled) runs_failures_handled_->Inc();
  pipeline->RunFinished(outcome, took);
  runs_active.Add(-1);
}

}  // namespace apollo11::observability
