#pragma once
// Every metric the coordinator's actors publish, registered once in a
// Registry. Actors always hold a CoordinatorMetrics* (Inert() when none is
// configured, as in the unit tests of the cores) and bump it with one-line
// calls; each metric has exactly one writing actor, named below, and any
// thread may scrape.

#include <array>

#include "common/clock.h"
#include "engine/task_state.h"
#include "observability/metrics_registry.h"
#include "observability/pipeline_metrics.h"

namespace apollo11::observability {

// Why the dispatcher refused a frame from a worker-port peer (the `reason`
// label of apollo11_worker_frames_refused_total).
enum class WorkerRefusal : uint8_t {
  kUnregistered,  // from a peer that has not said HELLO
  kNotHolder,     // a RESULT, STARTED or LOG_REPLY about what another worker holds
  kUnexpected,    // a message a worker never sends (DISPATCH, ACK, unknown)
  kRole,          // from a key whose role is not `worker`
  kDuplicateId,   // HELLO claiming the id of a live worker on another connection
  kBadHello,      // HELLO with absurd slots or an unusable worker id
};
inline constexpr int kWorkerRefusals = 6;
// "unregistered", "not_holder", ...
const char* ToString(WorkerRefusal reason);

// How a schedule fire was decided (the `outcome` label of
// apollo11_schedule_fires_total).
enum class ScheduleFireOutcome : uint8_t { kStarted, kQueued, kSkipped, kNotStarted };
inline constexpr int kScheduleFireOutcomes = 4;
// "started", "queued", "skipped", "not_started".
const char* ToString(ScheduleFireOutcome outcome);

class CoordinatorMetrics {
 public:
  explicit CoordinatorMetrics(Registry& registry);

  // The metrics of a node that publishes none: a shared instance over a
  // registry nobody scrapes. Updates are relaxed atomics, so the cores of
  // several coordinators (tests) may write it at once; never read it.
  static CoordinatorMetrics* Inert();

  // ---- scheduler ----
  // The series of pipeline `name` (see PipelineMetricsTable): fetch once per
  // run and pass it to Transition and RunFinished. Never null.
  PipelineMetrics* Pipeline(const std::string& name) { return pipelines_.For(name); }
  // A run was submitted with `tasks` executions, all PENDING.
  void RunSubmitted(size_t tasks);
  // One journaled state transition of an execution of `pipeline`. Current
  // (non-final) states are a gauge; reaching a final state is counted.
  void Transition(TaskState from, TaskState to, PipelineMetrics* pipeline) {
    if (Gauge* g = executions_[static_cast<int>(from)]) g->Add(-1);
    if (Gauge* g = executions_[static_cast<int>(to)]) g->Add(1);
    if (Counter* c = executions_finished_[static_cast<int>(to)]) {
      c->Inc();
      pipeline->ExecutionFinished(to);
    }
    transitions_[static_cast<int>(to)]->Inc();
  }
  // A run that was in flight when the coordinator restarted was taken back
  // (recovery): `by_state` counts its executions by current state. Keeps the
  // executions gauge consistent with the transitions that follow; executions
  // already final were counted by the process that finished them.
  void RunRecovered(const std::array<size_t, kTaskStateCount>& by_state);
  // A run of `pipeline` reached its final status `took` after it started;
  // `failures_handled`: a SUCCESS run with failed tasks that on: branches
  // handled (also counted as a success).
  void RunFinished(RunStatus outcome, PipelineMetrics* pipeline, Micros took,
                   bool failures_handled = false);
  // An attempt's result was applied, `since_ready` after it became READY.
  void AttemptEnded(bool timed_out, Micros since_ready) {
    if (timed_out) timeouts.Inc();
    task_latency.Observe(static_cast<double>(since_ready) / kMicrosPerSecond);
  }
  // Once per scheduler loop turn.
  void Backlog(size_t in_flight, bool paused) {
    backlog.Set(static_cast<int64_t>(in_flight));
    backlog_paused.Set(paused ? 1 : 0);
  }
  // One group commit of `transitions` transitions took `took`.
  void Committed(bool ok, size_t transitions, Micros took) {
    if (!ok) {
      commit_failures.Inc();
      return;
    }
    commits.Inc();
    journaled_transitions.Inc(transitions);
    commit_latency.Observe(static_cast<double>(took > 0 ? took : 0) / kMicrosPerSecond);
  }
  Counter& runs_submitted;
  Gauge& runs_active;
  Counter& timeouts;          // attempts that timed out (worker kill or coordinator deadline)
  Histogram& task_latency;    // READY -> final result journaled, seconds
  Gauge& backlog;             // READY + RUNNING executions
  Gauge& backlog_cap;         // max_backlog
  Gauge& backlog_paused;      // 1 while promotion is paused at the cap
  Counter& backlog_pauses;    // times the cap was reached
  Histogram& commit_latency;  // one group commit, seconds
  Counter& commits;
  Counter& commit_failures;
  Counter& journaled_transitions;
  Counter& stale_results;
  // Retry-storm control (scheduler): retries whose backoff timer runs, those
  // queued for a slot under --max-retrying, and how many ever had to queue.
  Gauge& retrying;
  Gauge& retries_queued;
  Counter& retries_deferred;
  void Retries(size_t waiting, size_t queued) {
    retrying.Set(static_cast<int64_t>(waiting));
    retries_queued.Set(static_cast<int64_t>(queued));
  }

  // ---- dispatcher ----
  Histogram& dispatch_latency;  // READY -> DISPATCH sent, seconds
  Gauge& tasks_waiting;         // READY executions queued for a worker with credit
  Gauge& workers_idle;          // connected, running nothing
  Gauge& workers_busy;          // connected, running at least one execution
  Gauge& worker_slots;          // slots of all connected workers
  Gauge& worker_slots_free;     // their unused credit
  Counter& workers_lost;        // declared lost: missed heartbeats or a broken connection

  // A worker-port frame refused for `reason` (dispatcher).
  void WorkerFrameRefused(WorkerRefusal reason) {
    refused_frames_[static_cast<int>(reason)]->Inc();
  }
  // A client request refused because the key's role does not allow it
  // (scheduler).
  Counter& client_requests_refused;

  // ---- schedules ----
  // A fire decided (journaled) with `outcome`; `lag` from its due time to
  // the decision for a fire that started a run on time or by catch-up (-1:
  // not timed: backfill, queued, skipped).
  void ScheduleFire(ScheduleFireOutcome outcome, Micros lag) {
    schedule_fires_[static_cast<int>(outcome)]->Inc();
    if (lag >= 0) schedule_fire_lag.Observe(static_cast<double>(lag) / kMicrosPerSecond);
  }
  Histogram& schedule_fire_lag;    // due time -> run started, seconds
  Counter& schedule_fires_missed;  // due times passed without a fire decided

  // ---- reconciler ----
  Counter& heartbeat_losses;  // workers declared lost for missed heartbeats

 private:
  // The constructor's labelled series, registered in this order: executions
  // by state (current, finished) and transitions by target state; refused
  // worker frames by reason; executions created and the retry ratio over
  // them; finished runs by outcome.
  void AddStateSeries(Registry& r);
  void AddRefusalCounters(Registry& r);
  void AddRetryRatio(Registry& r);
  void AddRunOutcomes(Registry& r);
  void AddScheduleFires(Registry& r);

  std::array<Gauge*, kTaskStateCount> executions_{};             // non-final states only
  std::array<Counter*, kTaskStateCount> executions_finished_{};  // final states only
  std::array<Counter*, kTaskStateCount> transitions_{};
  std::array<Counter*, 5> runs_{};  // by RunStatus; only final ones are registered
  Counter* runs_failures_handled_ = nullptr;
  std::array<Counter*, kScheduleFireOutcomes> schedule_fires_{};
  Counter* executions_created_ = nullptr;
  std::array<Counter*, kWorkerRefusals> refused_frames_{};
  PipelineMetricsTable pipelines_;
};

}  // namespace apollo11::observability
