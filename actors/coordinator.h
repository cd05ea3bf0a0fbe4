#pragma once
// The coordinator: scheduler, dispatcher and reconciler actors, each on its
// own thread, linked by inproc PAIR sockets. Workers connect a DEALER to the
// dispatcher's ROUTER at `worker_endpoint` (inproc:// in one process, tcp://
// in a cluster: the same code either way). Clients (the CLI, embedded or
// remote) talk to the scheduler through a ROUTER at `client_endpoint`:
// SubmitRun / CancelRun / Query, answered with SubmitReply / QueryReply, and
// RunProgress / RunFinished pushed to whoever submitted the run.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <zmq.hpp>

#include "actors/actor_loop.h"
#include "actors/actor_supervisor.h"
#include "actors/dispatcher/watchers.h"
#include "actors/reconciler/reconciler_core.h"
#include "actors/scheduler/retention.h"
#include "actors/scheduler/scheduler_core.h"
#include "alerts/sink.h"
#include "common/clock.h"
#include "common/fault_port.h"
#include "ha/role_view.h"
#include "storage/journal.h"
#include "transport/actor.h"
#include "transport/security.h"

namespace apollo11::actors {

struct CoordinatorConfig {
  std::string worker_endpoint;  // where workers connect (bind address)
  std::string client_endpoint;  // where clients connect (bind address)
  std::string instance;         // unique within the process: names the inproc links
  uint64_t epoch = 1;
  SchedulerOptions scheduler;
  ReconcilerOptions reconciler;      // heartbeat interval and liveness, shared with the dispatcher
  Millis reconcile_interval{30000};  // how often workers are PROBEd
  RetentionOptions retention;        // history retention (off by default)
  // When set, both ROUTERs are CURVE servers in ZAP domain kCurveDomain; a
  // ZapHandler (started by the caller in the same context) decides who may
  // connect.
  std::optional<transport::CurveKeyPair> curve;
  // Optional: the scheduler, dispatcher and reconciler publish into it. Must
  // outlive the coordinator.
  observability::CoordinatorMetrics* metrics = nullptr;
  // Alerts from the scheduler (task, run, backlog, journal) and dispatcher
  // (worker lost); null: none. Must outlive the coordinator.
  alerts::Sink* alerts = nullptr;
  // This node's JSON log file (STATE_DIR/coordinator.log): the `trace_log`
  // query returns its lines about one execution. Empty: none kept.
  std::string log_file;
  // How often the scheduler logs a "health" line (workers, heartbeat gaps,
  // backlog, queue and dispatch lag).
  Millis health_interval{60000};
  // Where tests make the scheduler fail on purpose (common/fault_port.h;
  // $APOLLO11_TEST_FAULT on apollo11-node). Null: no faults. Must outlive
  // the coordinator.
  FaultPort* faults = nullptr;
  // The workers that watch this coordinator, kept across its restarts (the
  // node owns it; null: none kept). Must outlive the coordinator.
  Watchers* watchers = nullptr;
  // election: the HA role of an --ha-etcd node (null: no HA, lead as today).
  // Must outlive the coordinator. With `standby` the coordinator recovers
  // and schedules nothing, takes no worker and answers only read-only
  // queries (from the journal); every other client request and every
  // worker HELLO gets "not the leader; the leader is ENDPOINT"
  // (ha/not_leader.h). As leader, frames leave for workers only while
  // ha->MayAct().
  const ha::RoleView* ha = nullptr;
  bool standby = false;
};

class Coordinator {
 public:
  // Starts the three actors. `ctx`, `journal` and `clock` must outlive the
  // coordinator. Returns once all three are serving (or the first failure).
  static Result<std::unique_ptr<Coordinator>> Start(zmq::context_t& ctx, storage::Journal* journal,
                                                    const Clock* clock, CoordinatorConfig config);
  ~Coordinator();
  // Stops the actors (dispatcher, reconciler, scheduler) and joins them.
  void Stop();

  // Why an actor stopped on its own (its loop returned an error or threw)
  // as "actor NAME: REASON", the first such; nullopt while all three serve
  // (stopping them with Stop is no failure). The coordinator then serves nothing useful: its owner
  // should stop it and exit non-zero with this reason. Any thread.
  std::optional<std::string> failure() const { return supervisor_->failure(); }
  // Waits up to `timeout` for failure(); returns it, nullopt if none came.
  // Any thread (a node's main thread polls it).
  std::optional<std::string> WaitFailure(std::chrono::milliseconds timeout) const {
    return supervisor_->WaitFailure(timeout);
  }

  // The endpoints actually bound (tcp port 0 resolved).
  const std::string& worker_endpoint() const { return worker_endpoint_; }
  const std::string& client_endpoint() const { return client_endpoint_; }
  // What the scheduler recovered from the journal before serving.
  const RecoveryReport& recovery() const { return recovery_; }

 private:
  Coordinator() = default;
  // Declared before the actors: their bodies report to it until joined.
  std::unique_ptr<ActorSupervisor> supervisor_ = std::make_unique<ActorSupervisor>();
  std::unique_ptr<transport::Actor> scheduler_, dispatcher_, reconciler_;
  std::string worker_endpoint_, client_endpoint_;
  RecoveryReport recovery_;
};

}  // namespace apollo11::actors
