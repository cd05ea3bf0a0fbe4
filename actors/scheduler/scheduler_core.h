#pragma once
// The scheduler's logic, apart from its actor loop: it owns every active run's
// DAG state, turns events (placements, results, lost workers, deadlines,
// cancels, retry timers) into journaled transitions, and decides what to send.
//
// Durability contract: events only *stage* journal records and outbound
// messages. Flush() commits everything staged as one RunStore batch (one LMDB
// write transaction for the journal: a group commit) and only then releases
// the staged messages. Nothing leaves the scheduler before the transition
// that allows it is durable; a result is ACKed only once it is in the store.
//
// Time: timers (retries, slow checks), the progress interval and what the
// core measures use Clock::Steady(); what is journaled or shown is wall time
// (Clock::Now()). A retry's due time is journaled as wall time and converted
// to a steady one when armed, also after a restart.
//
// The definitions are spread by concern: scheduler_core.cc (events, staging,
// Flush), scheduler_recovery.cc (building runs, Recover), scheduler_timers.cc
// (the timer queue, slow flags, Confirm), scheduler_backlog.cc (promotion
// within the backlog cap, Explain). The rules themselves live in
// DispatchBuilder, SlowWatch, TimerQueue, ExplainTask and engine::DagRun.
//
// Single-threaded: the scheduler actor's thread calls everything.

#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "actors/client_protocol.h"
#include "actors/internal_messages.h"
#include "actors/registry/registry_service.h"
#include "actors/scheduler/change_feed.h"
#include "actors/scheduler/dispatch_builder.h"
#include "actors/scheduler/foreach_expansion.h"
#include "actors/scheduler/retry_gate.h"
#include "actors/scheduler/scheduler_run.h"
#include "actors/scheduler/slow_watch.h"
#include "actors/scheduler/timer_queue.h"
#include "alerts/sink.h"
#include "common/clock.h"
#include "common/run_id_generator.h"
#include "common/status.h"
#include "dsl/pipeline.h"
#include "engine/dag_run.h"
#include "engine/random_source.h"
#include "engine/run_graph.h"
#include "observability/coordinator_metrics.h"
#include "storage/run_store.h"

namespace apollo11::actors {

struct SchedulerOptions {
  size_t max_backlog = 1000;     // READY + RUNNING executions across runs
  double resume_fraction = 0.8;  // promotion resumes below this share of the cap
  Millis kill_grace{2000};       // SIGTERM -> SIGKILL on the worker
  Millis deadline_slack{2000};   // coordinator-side deadline = timeout + grace + slack
  uint32_t max_requeues = 3;     // requeues after worker loss before FAILED
  // Items one foreach task may fan out into; more fails the task
  // (--max-foreach-items).
  int max_foreach_items = 10000;
  // Runs active at once in this coordinator, however they start (submit,
  // trigger, schedule, rerun, backfill); a start beyond it is refused
  // (kFull) and raises run_cap_reached (--max-active-runs). Each run holds
  // memory for each of its tasks until it ends.
  size_t max_active_runs = 10000;
  // Runs of one schedule with `overlap: allow` active at once; a fire beyond
  // it is skipped, journaled with the reason (--max-schedule-overlap).
  size_t max_schedule_overlap = 100;
  // The tail of an upstream's output passed to a task, per upstream (its
  // $APOLLO11_INPUTS_DIR file): the whole tail a worker reports.
  size_t output_env_cap = 64 * 1024;
  size_t journal_output_cap = 4 * 1024;  // stdout tail kept in the execution record
  Millis progress_interval{100};         // at most one RunProgress per run per interval
  // After a restart, how long workers have to claim the executions the
  // journal says were RUNNING before those are requeued: the liveness window
  // (heartbeat x liveness) plus one heartbeat.
  Millis claim_window{40000};
  // Which unfinished runs Recover takes up: all of them (a node), one (an
  // embedded `run --resume ID`), or none (an embedded run of a new file,
  // which must not start running someone's interrupted run behind their back).
  enum class RecoverMode { kAll, kOne, kNone } recover = RecoverMode::kAll;
  std::string recover_run;  // for kOne
  // Null: none published (an inert instance is used). Must outlive the core.
  observability::CoordinatorMetrics* metrics = nullptr;
  // Slow tasks: an execution whose task has duration history is flagged once
  // it has run max(slow_factor x P50, slow_min). Flagging journals a note and
  // waits for the operator (Confirm); it never kills by itself.
  Millis slow_min{10000};
  int slow_factor = 5;
  // Where task, run and backlog alerts go once the transition behind them is
  // durable (after Flush's commit); null: no alerts (a NullSink is used).
  // Must outlive the core.
  alerts::Sink* alerts = nullptr;
  // Retry jitter and run ids draw from it; null: an entropy-seeded source of
  // the core's own. Must outlive the core; only the core's thread draws.
  engine::RandomSource* random = nullptr;
  // Retry-storm control (brief 5.3): at most this many executions, across
  // runs, wait RETRYING with their backoff timer running; a retry beyond it
  // is queued (journaled with that reason) and its timer starts when a slot
  // frees, oldest first (RetryGate). 0 = no cap.
  size_t max_retrying = 100;
  // Each retry's delay gets a deterministic per-domain offset of up to this
  // fraction of it (engine::StaggerOffset); 0 = none. Nodes and `apollo11
  // run` pass kDefaultRetryStagger; unit tests keep exact delays.
  double retry_stagger = 0.0;
  // registry: refuse pipelines (registered or submitted) whose name has no
  // domain prefix (--require-domain-prefix).
  bool require_domain_prefix = false;
};

inline constexpr double kDefaultRetryStagger = 0.5;

// What Recover found and did, for the log line and the API.
struct RecoveryReport {
  size_t runs = 0;         // unfinished runs taken up again
  size_t tasks = 0;        // their tasks
  size_t running = 0;      // RUNNING executions left for workers to claim
  size_t ready = 0;        // READY executions queued again
  size_t retrying = 0;     // retry timers re-armed (past-due ones fire at once)
  size_t failed_runs = 0;  // runs that could not be rebuilt (ended FAILED)
  Micros elapsed_us = 0;   // how long Recover took (Steady() clock)
};

// What one loop turn releases, after its commit.
struct SchedulerOutbox {
  Enqueue enqueue;
  AckResults acks;
  CancelExecs cancels;
  WatchDeadlines watch;
  Unwatch unwatch;
  AdoptRunning adopt;
  ReleaseDispatch release;
  std::vector<RunProgress> progress;
  std::vector<RunFinished> finished;
  // Every run the commit changed, as it stands after it (change_feed.h).
  std::vector<RunChange> changes;
  void Clear();
  bool Empty() const;
};

class SchedulerCore final : public RegistryHost {
 public:
  // `store` and `clock` must outlive the core.
  SchedulerCore(storage::RunStore* store, const Clock* clock, SchedulerOptions options);
  ~SchedulerCore() override;

  // Crash recovery, once, before anything else: rebuilds every unfinished
  // run from the journal's current state (runs, executions, pipeline
  // snapshots; no replay of the transition log), re-arms retry timers (a
  // retry due while the coordinator was down fires at the next OnTimers),
  // stages READY executions for dispatch (never sent before the crash: a
  // DISPATCH leaves only after its RUNNING transition is committed) and
  // RUNNING ones for adoption by their workers (claim_window), and re-watches
  // their deadlines. The
  // caller then Flushes as usual. A run whose snapshot cannot be read ends
  // FAILED with the reason, instead of blocking the start.
  RecoveryReport Recover();

  // Starts a run of the given pipeline snapshot. Returns the run id. Takes
  // the submission by value: its snapshot (megabytes for a large pipeline)
  // moves on into the journal batch instead of being copied. InvalidInput
  // when the snapshot's hash is not the one the submission names, or names
  // another journaled snapshot (snapshots are stored under their hash, the
  // first one kept). `packed`, when not empty, is the form the snapshot
  // arrived in (storage::PackSnapshot; the caller unpacked it into
  // submit.pipeline_json): it is journaled as it is, not packed again.
  Result<std::string> Submit(SubmitRun submit, std::string packed = {});
  // Submit of a snapshot already decoded into `spec` (SpecHandoff): equal to
  // what Submit would decode from submit.pipeline_json, which may be the
  // snapshot's stored (packed) form and is then journaled as it is. Its
  // hash is trusted (the caller computed it); a hash that names another
  // journaled snapshot is refused as by Submit.
  Result<std::string> SubmitParsed(SubmitRun submit, dsl::PipelineSpec spec);
  // The pipeline registry and the runs registered pipelines start
  // (triggers, schedule fires, backfill); what it changes is staged for the
  // next Flush.
  RegistryService& registry() { return registry_; }
  // RegistryHost: the turn's batch; a run of a validated snapshot pinned to
  // registered `version` (0 = none); the version an active run is pinned to.
  storage::RunBatch* batch() override { return &batch_; }
  Result<std::string> StartRun(SubmitRun submit, dsl::PipelineSpec spec, uint32_t version) override;
  std::optional<uint32_t> ActiveRunVersion(const std::string& run_id) const override;
  // RegistryHost: raises `pipeline_rejected` for `name` after the next commit.
  void StagePipelineRejected(const std::string& name, const std::string& errors) override;
  // `apollo11 rerun`: starts a new run of finished run `rerun.run_id`'s
  // snapshot and params (record field rerun_of names it) in which every task
  // engine::SelectReused does not select keeps its SUCCESS and outputs,
  // journaled PENDING -> SUCCESS "reused from RUN_ID"; the rest run. Returns
  // the new run's id. NotFound: no such run, snapshot or task; InvalidInput:
  // the run has not ended, or nothing to rerun (scheduler_rerun.cc).
  Result<std::string> Rerun(const RerunRun& rerun);
  // Stages a schedule's fire or schedule record in this turn's batch, so it
  // is committed with the run it starts (sched; CoreFireStarter).
  // Stages a fire record and counts its decision (apollo11_schedule_fires_total,
  // apollo11_schedule_fire_lag_seconds).
  void StageFire(storage::FireRecord fire);
  // The start of a skipped fire's reason when its run could not start
  // (ScheduleCore::Start).
  static constexpr std::string_view kFireNotStarted = "the run could not start: ";
  observability::CoordinatorMetrics& metrics() { return *options_.metrics; }
  // Stages the run_cap_reached alert (released after the commit).
  void StageRunCapAlert(const std::string& why);
  void StageSchedule(storage::ScheduleRecord s) { batch_.PutSchedule(std::move(s)); }
  // Stages an audit record (client_gate.cc), committed with what it records.
  // False (nothing staged) when the batch holds kMaxAuditPerBatch already:
  // only while commits fail, as every turn commits.
  bool StageAudit(storage::AuditRecord r) {
    if (batch_.audits() >= storage::kMaxAuditPerBatch) return false;
    batch_.PutAudit(std::move(r));
    return true;
  }
  // Cancels a run: every task not yet final becomes CANCELED; running ones
  // are killed on their workers.
  Status Cancel(const std::string& run_id, const std::string& reason, const std::string& actor);

  void OnPlaced(const Placed& placed);
  void OnStarted(const StartedBatch& batch);
  void OnResults(const ResultBatch& batch);
  void OnWorkerGone(const WorkerGone& gone);
  void OnDeadlineExceeded(const DeadlineExceeded& exceeded);
  // Fires retries whose delay has elapsed and flags executions that have
  // become slow. Timers run on the Steady() clock: a step of the wall clock
  // neither fires them early nor delays them.
  void OnTimers();
  // When OnTimers next has work, as a wall-clock time (Now() plus the steady
  // delay, so the loop can compare it with its other wall-clock deadlines),
  // or 0 when no timer is pending.
  Micros NextTimer() const;

  // The operator's answer to a slow flag (`apollo11 confirm EXEC_ID`).
  // kill: the attempt ends FAILED with "killed by operator after slow flag
  // (ran T, P50 P)", its process is canceled on the worker, and the task's
  // retry policy applies as for any failure. keep: the flag is cleared and
  // the attempt is not flagged again. Staged like every event (Flush commits).
  // Returns what was done, in a sentence. NotFound: no such execution;
  // InvalidInput: not running, or running but not flagged.
  Result<std::string> Confirm(const std::string& exec_id, bool kill, const std::string& actor);

  // Before the turn's commit: promotes what is eligible and hands over every
  // READY execution staged so far, for the caller to have placed before the
  // commit (Enqueue::ticket). Their READY is not durable yet, but nothing
  // leaves for a worker before the commit that holds their READY -> RUNNING
  // (two-phase placement). Hands over nothing while commits fail.
  void TakeEnqueue(Enqueue* out);

  // Ends a loop turn: promotes eligible tasks within the backlog budget,
  // commits everything staged in one transaction and moves the staged
  // messages into `out`. When the commit fails (e.g. disk full) nothing is
  // released, the staged work is kept, and the error is returned; calling
  // Flush again retries.
  Status Flush(SchedulerOutbox* out);

  // Why a task of an active run is where it is, in a sentence or two
  // (dependencies waited on, no worker in its group, backlog at cap, retry
  // time). NotFound when the run is not active: the caller then answers from
  // the journal.
  Result<std::string> Explain(const std::string& run_id, const std::string& task_id,
                              const WorkersSnapshot& workers) const;

  size_t active_runs() const { return runs_.size(); }
  // The ids of the active runs, sorted.
  std::vector<std::string> ActiveRunIds() const;
  // The pipeline name of active run `run_id`; "" when it is not active.
  std::string PipelineOf(const std::string& run_id) const;
  // Transitions staged and not yet durable (waiting for a commit).
  size_t staged_transitions() const { return batch_.transitions(); }
  size_t in_flight() const { return in_flight_; }
  bool backlog_paused() const { return paused_; }
  uint64_t backlog_events() const { return backlog_events_; }
  uint64_t stale_results() const { return stale_results_; }
  uint64_t slow_flags() const { return slow_flags_; }
  const RetryGate& retry_gate() const { return retry_gate_; }

 private:
  // One entry of the scheduler's timer queue.
  struct Timer {
    enum class Kind : uint8_t { kRetry, kSlow } kind;
    std::string run_id;
    int task;
    uint32_t attempt;  // kSlow: the attempt being watched
  };

  SchedulerRun* FindRunOfExec(const std::string& exec_id, int* task);
  // A run id no run in memory or in the store has, for a run created at wall
  // time `now`; the generator is seeded from the store on first use.
  Result<std::string> NewRunId(Micros now);
  // The in-memory context of a run over a validated pipeline, every task
  // PENDING (Submit) or about to be restored (Recover).
  Result<std::unique_ptr<SchedulerRun>> MakeRun(const std::string& run_id, dsl::PipelineSpec spec);
  // SubmitParsed past its checks: pins a registered version, then StartRun.
  Result<std::string> StartParsed(SubmitRun submit, dsl::PipelineSpec spec);
  // InvalidInput when the journal holds a snapshot under `hash` other than
  // `submitted` (JSON text, or its packed form).
  Status CheckSnapshotUnclaimed(const std::string& hash, const std::string& submitted);
  // Full, with the run_cap_reached alert staged, when max_active_runs runs
  // are active.
  Status CheckRunCap();
  // Takes a new run in: fills `record` (the caller sets its hash, params and
  // rerun_of), stages it and every execution record, and keeps the run.
  SchedulerRun& Register(std::unique_ptr<SchedulerRun> run, storage::RunRecord record, Micros now);
  // Rerun: takes the original run's SUCCESS and outputs of `task` (its
  // execution record `from`) into the new run `run`, before its Start.
  Status ReuseTask(SchedulerRun& run, int task, const storage::ExecutionRecord& from);
  // Whether `rec`'s journaled stdout is all the task printed: shorter than
  // journal_output_cap, so neither the journal nor the worker's tail (64
  // KiB) cut it. A foreach over its lines can then expand after a restart
  // or in a rerun.
  bool JournaledOutputWhole(const storage::ExecutionRecord& rec) const {
    return rec.output.size() < options_.journal_output_cap;
  }
  // Reads each task's duration P50 (placement weight, slow threshold).
  void LoadHistory(SchedulerRun& run);
  Status RecoverRun(const storage::RunRecord& record, Micros now, RecoveryReport* report);
  // Restores the journaled executions of `run` into its DAG.
  Status RestoreExecutions(SchedulerRun& run);
  // A foreach task went READY: expands it (ForeachExpansion; its instances'
  // records are staged with the task's READY -> RUNNING, so the expansion is
  // journaled in one commit) and applies what follows.
  void ExpandForeach(SchedulerRun& run, int task);
  // Hands a recovered run's RUNNING executions to their workers to claim.
  void StageAdoption(SchedulerRun& run, Micros now, RecoveryReport* report);
  // Stages the coordinator's deadline of `task`'s current attempt (when it
  // has a timeout), counted from `started_steady` on the Steady() clock.
  void StageDeadline(SchedulerRun& run, int task, Micros started_steady);
  // Stages the effects' transitions and messages. Transitions of `cause_task`
  // are attributed to `actor`; the ones they set off (dependents promoted,
  // skipped, canceled) to the scheduler.
  void Apply(SchedulerRun& run, engine::Effects& effects, const std::string& actor,
             const std::string& worker_id = "", int cause_task = -1);
  // Journals one transition of `effects` and updates the execution record.
  void ApplyTransition(SchedulerRun& run, engine::TaskTransition& t, const std::string& actor,
                       const std::string& worker_id, int cause_task, Micros now);
  // Ok unless the current attempt of `task` is held by a worker other than
  // the one `item` came from (the dispatcher checks this too; this closes the
  // turn in which it dropped the holder): NotFound, recorded as stale.
  Status CheckHolder(const SchedulerRun& run, int task, const ResultFrom& item) const;
  Status ApplyResult(SchedulerRun& run, int task, const ResultFrom& item, AttemptOutcome outcome,
                     Micros now);
  void FinishIfDone(SchedulerRun& run);
  // Commits the PENDING records of large runs whose creation is not yet
  // journaled in parts, ahead of the turn's commit; returns how many.
  size_t CommitNewRecordsAhead();
  void Promote();
  // Pauses or resumes promotion at the backlog cap.
  void UpdateBacklogPause();
  void StageProgress(bool force);
  // The change feed's view of `run` (clears its feed_dirty).
  static RunChange ChangeOf(SchedulerRun& run);
  // Arms the slow check of a just-started attempt (only with a P50);
  // `placed_steady` is on the Steady() clock.
  void WatchSlow(SchedulerRun& run, int task, uint32_t attempt, Micros placed_steady);
  void FireRetry(const Timer& timer, Micros wall_now);
  // A task went RETRYING with its timer due at `due` (wall): arms it when the
  // retry gate has a slot, else journals that the retry is queued.
  void GateRetry(SchedulerRun& run, int task, Micros due, Micros now);
  // Arms the retry timer of `task` for wall time `due` and records it.
  void ArmRetry(SchedulerRun& run, int task, Micros due);
  // Starts the timers of the queued retries that got a slot (retry_starts_).
  void StartQueuedRetries(Micros now);
  void FireSlow(const Timer& timer, Micros steady_now, Micros wall_now);
  // The Steady() reading that corresponds to the wall time `wall` now.
  Micros SteadyOf(Micros wall) const;
  // Journals an event about a running execution that is not a transition.
  void StageNote(SchedulerRun& run, int task, std::string reason, const std::string& actor);
  // Holds an alert until the turn's commit; `task` < 0 for a run-wide one.
  // (Slow-task flagging raises alerts::AlertType::kSlowTask through here.)
  void StageAlert(alerts::AlertType type, const SchedulerRun& run, int task, uint32_t attempt,
                  const std::string& reason);

  storage::RunStore* store_;
  const Clock* clock_;
  SchedulerOptions options_;
  RegistryService registry_;
  std::unique_ptr<engine::RandomSource> own_random_;  // when options.random is null

  DispatchBuilder dispatch_;
  ForeachExpansion foreach_;
  SlowWatch slow_;
  RetryGate retry_gate_;
  std::vector<RetryGate::Entry> retry_starts_;  // scratch: slots freed this Apply

  std::unordered_map<std::string, std::unique_ptr<SchedulerRun>> runs_;
  RunIdGenerator run_ids_;
  bool run_ids_seeded_ = false;
  TimerQueue<Timer> timers_;  // retries and slow checks, on the Steady() clock
  size_t in_flight_ = 0;      // READY + RUNNING
  bool paused_ = false;
  uint64_t backlog_events_ = 0;
  // The backlog log lines (UpdateBacklogPause): when a pause was last
  // logged (Steady()), whether the current pause was, and the pauses since
  // that were only counted.
  Micros backlog_logged_at_ = 0;
  bool pause_logged_ = false;
  uint64_t unlogged_pauses_ = 0;
  uint64_t stale_results_ = 0;
  bool commit_failing_ = false;  // the last commit failed: promote nothing more
  uint64_t slow_flags_ = 0;

  storage::RunBatch batch_;
  SchedulerOutbox staged_;
  // The acks in staged_: a result resent while commits fail is acked once.
  std::set<std::tuple<std::string, std::string, uint32_t>> staged_acks_;
  engine::Effects effects_;                        // reused scratch
  Micros last_progress_ = 0;                       // Steady()
  std::vector<alerts::AlertEvent> staged_alerts_;  // released after the commit
};

}  // namespace apollo11::actors
