#pragma once
// A worker actor: one thread with a DEALER to each coordinator's dispatcher
// (it talks to the leader among them: CoordinatorFollower) and
// an Executor running tasks as child processes. Reconnects with a fresh socket
// when the coordinator goes quiet, keeping its tasks running and its results
// until they are acknowledged.

#include <memory>
#include <optional>
#include <string>
#include <zmq.hpp>

#include "actors/actor_supervisor.h"
#include "actors/worker/worker_core.h"
#include "common/clock.h"
#include "executor/executor.h"
#include "transport/actor.h"
#include "transport/security.h"

namespace apollo11::actors {

struct WorkerConfig {
  // The coordinators' worker endpoints, comma-separated (one, or each of an
  // HA set: the worker follows the leader among them).
  std::string coordinator_endpoint;
  WorkerOptions worker;
  executor::ExecutorOptions executor;
  // Where unacknowledged results are kept across a restart of this worker
  // (storage/outbox.h); empty: in memory only.
  std::string outbox_dir;
  // When set, the worker is a CURVE client with this key pair, trusting only
  // a coordinator whose public key is `server_public`.
  std::optional<transport::CurveKeyPair> curve;
  std::string server_public;
};

class WorkerActor {
 public:
  // `ctx` and `clock` must outlive the actor.
  static Result<std::unique_ptr<WorkerActor>> Start(zmq::context_t& ctx, const Clock* clock,
                                                    WorkerConfig config);
  ~WorkerActor();
  // Drains (no new work; finish and deliver what it holds; BYE), waiting at
  // most `timeout`, then stops. Returns false if it had to stop undrained.
  bool Drain(std::chrono::milliseconds timeout);
  void Stop();
  // Why the worker's loop ended other than by Stop or Drain ("actor worker:
  // REASON"), nullopt while it runs or after a clean stop. Any thread.
  std::optional<std::string> failure() const { return supervisor_->failure(); }

 private:
  WorkerActor() = default;
  // Declared first: the actor's body refers to it until the actor is joined.
  std::unique_ptr<ActorSupervisor> supervisor_ = std::make_unique<ActorSupervisor>();
  std::unique_ptr<transport::Actor> actor_;
};

}  // namespace apollo11::actors
