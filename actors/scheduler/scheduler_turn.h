#pragma once
// One turn of the scheduler actor, socket-free: what the scheduler loop
// (actors/scheduler_loop.cc) and the simulator (tests/sim) both run. It owns
// the scheduler's state and collaborators and takes, in the loop's order:
//   1. the clients' frames (ClientGate), the dispatcher's and the
//      reconciler's messages (one handler table each);
//   2. Tick: retry and slow timers, due schedule fires, expired log fetches;
//   3. when CommitDue: the commit protocol of TurnCommit, place before
//      commit (BeginEarlyPlacement, then the Placed answers through
//      FromDispatcher until AwaitingPlacement is false or the caller's short
//      wait ran out), then Commit, which releases what the commit made true;
//      then Retain, one bounded chunk of retention;
//   4. the output: frames() for the dispatcher and the reconciler,
//      TakeClientFrames() for the clients.
// Only the waiting in step 3 needs a socket, so it stays in the loop.
//
// Single-threaded: the scheduler actor's thread calls everything.

#include <memory>
#include <string>
#include <vector>

#include "actors/queries/query_service.h"
#include "actors/scheduler/client_gate.h"
#include "actors/scheduler/client_sessions.h"
#include "actors/scheduler/coordinator_health.h"
#include "actors/scheduler/journal_health.h"
#include "actors/scheduler/retention.h"
#include "actors/scheduler/scheduler_core.h"
#include "actors/scheduler/turn_commit.h"
#include "actors/schedules/core_fire_starter.h"
#include "actors/schedules/schedule_core.h"
#include "common/clock.h"
#include "common/duration.h"
#include "common/fault_port.h"
#include "storage/run_store.h"

namespace apollo11::actors {

struct SchedulerTurnConfig {
  storage::RunStore* store = nullptr;  // the journal; must outlive the turn
  const Clock* clock = nullptr;        // must outlive the turn
  SchedulerOptions options;
  std::string journal_dir;  // named in the journal's health messages
  JournalHealthOptions journal_health;
  // Runs retention after commits; null: none (the simulator, a standby's
  // copy). Must outlive the turn.
  Retention* retention = nullptr;
  std::string log_file;  // the trace_log query reads it; empty: none
  Millis health_interval{60000};
  FaultPort* faults = nullptr;  // null: NoFaults()
  // Roles, standby and the leader's endpoint, for the client gate. A standby
  // recovers nothing, fires nothing, retains nothing: its journal is its
  // leader's copy until it leads (the node then starts a new turn).
  ClientGatePolicy clients;
};

class SchedulerTurn {
 public:
  static constexpr const char* kName = "scheduler";

  explicit SchedulerTurn(SchedulerTurnConfig config);

  // Once, before serving: recovery from the journal (not on a standby) and
  // the schedules. The caller then commits without early placement.
  RecoveryReport Start();

  void FromClient(const std::string& identity, const transport::PeerAuth& peer, const void* data,
                  size_t size);
  void FromDispatcher(const transport::Envelope& env);
  void FromReconciler(const transport::Envelope& env);
  // Timers, due schedule fires and expired log fetches, at the clock's now.
  void Tick();
  // Whether a commit may be tried now (not while a failed one backs off).
  bool CommitDue() const { return health_.RetryDue(config_.clock->Steady()); }

  // Place before commit: see TurnCommit. BeginEarlyPlacement appends the
  // Enqueue to frames() and returns true when the caller should deliver it
  // and wait for its Placed.
  bool BeginEarlyPlacement() { return commit_.BeginEarlyPlacement(&frames_); }
  bool AwaitingPlacement() const { return commit_.AwaitingPlacement(); }
  // Commits what the turn staged; on success releases its effects into
  // frames() and the client frames, and tells the schedules which runs
  // ended. False when the commit failed (retried once CommitDue).
  bool Commit();
  // After a successful commit: one bounded chunk of retention when due.
  void Retain();

  // When the turn next has timer work, on the Steady() clock; 0 when none.
  Micros NextWake() const;

  // The frames for the dispatcher and the reconciler, in order; the caller
  // sends and clears them.
  InternalFrames& frames() { return frames_; }
  std::vector<ClientFrame> TakeClientFrames() { return sessions_.TakeFrames(); }

  SchedulerCore& core() { return core_; }
  const JournalHealth& health() const { return health_; }
  const ClientSessions& sessions() const { return sessions_; }
  const ScheduleCore& schedules() const { return schedule_; }
  const WorkersSnapshot& workers() const { return workers_; }

  // The handlers of the internal messages (the routing tables' targets).
  void OnPlaced(Placed m) { commit_.OnPlaced(m); }
  void OnStarted(StartedBatch m) { core_.OnStarted(m); }
  void OnResults(ResultBatch m) { core_.OnResults(m); }
  void OnWorkerGone(WorkerGone m) { core_.OnWorkerGone(m); }
  void OnWorkersSnapshot(WorkersSnapshot m);
  void OnLogFetched(LogFetched m) { sessions_.OnLogFetched(std::move(m)); }
  void OnDeadlineExceeded(DeadlineExceeded m) { core_.OnDeadlineExceeded(m); }

 private:
  bool standby() const { return config_.clients.standby; }

  SchedulerTurnConfig config_;
  SchedulerCore core_;
  JournalHealth health_;
  ClientSessions sessions_;
  QueryService queries_;
  TurnCommit commit_;
  CoreFireStarter starter_;
  ScheduleCore schedule_;
  CoordinatorHealth queue_health_;
  WorkersSnapshot workers_;  // refreshed by the dispatcher every heartbeat
  ClientGate gate_;
  InternalFrames frames_;
};

}  // namespace apollo11::actors
