#pragma once
// The limits of the client link (CLI and HTTP API <-> the scheduler), in
// both directions: what the scheduler's ROUTER and the CLI's DEALER decode
// and accept (ZMQ_MAXMSGSIZE), and what ClientSessions checks every reply
// against before sending it.

#include <cstddef>

#include "transport/codec.h"

namespace apollo11::actors {

// A pipeline snapshot or an answer (a run's status, logs) is one string and
// may be tens of megabytes for very large DAGs.
inline transport::DecodeLimits ClientLimits() {
  transport::DecodeLimits l;
  l.max_frame = size_t{64} << 20;
  l.str = size_t{64} << 20;
  return l;
}

}  // namespace apollo11::actors
