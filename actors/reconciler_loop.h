#pragma once
// The reconciler actor's loop: liveness and coordinator-side deadlines. It
// routes the scheduler's and the dispatcher's messages through a handler
// table to the ReconcilerCore and sends what the core decides.

#include <memory>
#include <zmq.hpp>

#include "actors/reconciler/reconciler_core.h"
#include "common/clock.h"
#include "transport/actor.h"

namespace apollo11::actors {

struct ReconcilerLoopParams {
  const Clock* clock = nullptr;
  ReconcilerOptions options;
  std::shared_ptr<zmq::socket_t> scheduler, dispatcher;  // this actor's ends of the links
};

// Signals ready and serves until TERM (then Ok); any other end returns why.
Status RunReconcilerLoop(transport::ActorPipe& pipe, ReconcilerLoopParams params);

}  // namespace apollo11::actors
