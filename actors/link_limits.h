#pragma once
// The decode limits of the coordinator's own links, in one socket-free place
// so that senders size their frames by the limits receivers enforce:
// - the client link (CLI and HTTP API <-> the scheduler), both directions:
//   what the scheduler's ROUTER and the CLI's DEALER decode and accept
//   (ZMQ_MAXMSGSIZE), and what ClientSessions checks every reply against;
// - the internal links between this process's actors, which SchedulerTurn
//   splits large Enqueue batches for.
// The worker link's limits are transport::DecodeLimits' defaults
// (common/wire_limits.h).

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

// Links between this process's own actors: trusted peers, but batches can be
// large (a 100k-task snapshot, thousands of results with their output tails
// in one frame).
inline transport::DecodeLimits InternalLimits() {
  transport::DecodeLimits l;
  l.max_frame = size_t{1} << 30;
  l.array = 10'000'000;
  l.map = 1'000'000;
  l.str = size_t{256} << 20;
  l.bin = size_t{256} << 20;
  return l;
}

}  // namespace apollo11::actors
