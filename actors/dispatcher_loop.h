#pragma once
// The dispatcher actor's loop: it owns the workers' ROUTER and the links to
// the scheduler and the reconciler, hands worker frames and internal
// messages (through a handler table) to the DispatcherCore, and sends what
// the core returns.

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <zmq.hpp>

#include "actors/dispatcher/dispatcher_core.h"
#include "common/clock.h"
#include "transport/actor.h"
#include "transport/security.h"

namespace apollo11::actors {

struct DispatcherLoopParams {
  zmq::context_t* ctx = nullptr;
  const Clock* clock = nullptr;
  DispatcherOptions options;
  std::chrono::milliseconds heartbeat{10000};
  std::chrono::milliseconds reconcile_interval{30000};   // how often workers are PROBEd
  std::string worker_endpoint;                           // bind address
  std::shared_ptr<zmq::socket_t> scheduler, reconciler;  // this actor's ends of the links
  std::string* bound_workers = nullptr;                  // set before ready: the endpoint bound
  std::optional<transport::CurveKeyPair> curve;
};

// Takes what the scheduler recovered, binds the worker endpoint, signals
// ready and serves until TERM (then Ok); any other end returns why.
Status RunDispatcherLoop(transport::ActorPipe& pipe, DispatcherLoopParams params);

}  // namespace apollo11::actors
