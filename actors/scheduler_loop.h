#pragma once
// The scheduler actor's loop: it owns the client ROUTER and the links to the
// dispatcher and the reconciler, decodes what arrives, routes it through a
// handler table to the socket-free classes (SchedulerCore, ClientSessions,
// QueryService, SchedulerTurn) and sends what they return.

#include <memory>
#include <optional>
#include <string>
#include <zmq.hpp>

#include "actors/scheduler/retention.h"
#include "actors/scheduler/scheduler_core.h"
#include "common/clock.h"
#include "common/fault_port.h"
#include "ha/role_view.h"
#include "storage/journal.h"
#include "transport/actor.h"
#include "transport/security.h"

namespace apollo11::actors {

struct SchedulerLoopParams {
  zmq::context_t* ctx = nullptr;
  storage::Journal* journal = nullptr;
  const Clock* clock = nullptr;
  SchedulerOptions options;
  std::string client_endpoint;                            // bind address
  std::shared_ptr<zmq::socket_t> dispatcher, reconciler;  // this actor's ends of the links
  std::string* bound_client = nullptr;                    // set before ready: the endpoint bound
  std::optional<transport::CurveKeyPair> curve;
  RecoveryReport* recovery = nullptr;  // set before ready
  RetentionOptions retention;
  std::string log_file;  // for the trace_log query; empty: none
  Millis health_interval{60000};
  FaultPort* faults = nullptr;       // CoordinatorConfig::faults
  const ha::RoleView* ha = nullptr;  // CoordinatorConfig::ha
  bool standby = false;              // CoordinatorConfig::standby
};

// Binds the client endpoint, recovers from the journal, signals ready and
// serves until TERM (then Ok). Any other end (a bind or poll failure, the
// context terminated) returns why.
Status RunSchedulerLoop(transport::ActorPipe& pipe, SchedulerLoopParams params);

}  // namespace apollo11::actors
