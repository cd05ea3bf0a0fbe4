#pragma once
// How many executions a worker queues beyond its slots (its prefetch), and
// the credit that follows from it. Pure logic, owned by WorkerCore.
//
// Fixed (--prefetch N): the depth is N. Adaptive (the default): the depth
// follows how long the worker's tasks take. It starts at a floor (2 x slots,
// at least 4) and moves towards slots x kQueueHorizon / the recent mean
// duration, never below the floor nor above the ceiling (32 x slots, at
// least 32, at most 256). So a worker running millisecond tasks keeps enough
// queued that one group commit covers many of them, while a worker running
// long tasks holds no more than before, and at the end of a run an idle
// worker waits for at most about one horizon of work queued on another
// (plus the floor's tasks), not thirty-two of its tasks.
//
// Credit accounting (the worker's side of docs/architecture.md "Flow
// control"): after a HELLO the coordinator holds `capacity - held` credits
// (none when the worker holds more), and credits + held == capacity + debt
// from then on. A deeper queue sends the difference as new credit at once; a
// shallower one (or holding more than the capacity at a HELLO) is a debt,
// paid by not returning the credit of the next executions that finish.

#include <cstdint>

#include "common/clock.h"

namespace apollo11::actors {

// The adaptive depth's bounds for a worker of `slots` slots.
uint32_t PrefetchFloor(uint32_t slots);
uint32_t PrefetchCeiling(uint32_t slots);

// Queued work per slot the adaptive depth aims at (by the mean duration).
inline constexpr Micros kQueueHorizon = 50 * kMicrosPerMilli;

class QueueDepth {
 public:
  // Fixed at `prefetch`, or (adaptive) between `floor` and `prefetch`.
  static QueueDepth Fixed(uint32_t slots, uint32_t prefetch);
  static QueueDepth Adaptive(uint32_t slots, uint32_t floor, uint32_t ceiling);

  // The most it may queue: HELLO's prefetch (the coordinator's cap).
  uint32_t advertised() const { return ceiling_; }
  // The depth credit is granted for now.
  uint32_t depth() const { return depth_; }
  uint32_t capacity() const { return slots_ + depth_; }

  // One execution ran for `duration` (started -> finished; a negative one,
  // from a clock step, counts as 0). Moves an adaptive depth.
  void Observe(Micros duration);
  // No more work: slots and depth 0 (draining).
  void Stop();

  // A HELLO: the coordinator forgets our credit. Returns the credit to
  // grant with it, given `held` executions (running or queued).
  uint32_t OnHello(uint32_t held);
  // `freed` executions finished or were given back: the credit to grant now,
  // after any change of depth since the last call and any debt.
  uint32_t OnFreed(uint32_t freed);

 private:
  QueueDepth(uint32_t slots, uint32_t floor, uint32_t ceiling);

  uint32_t slots_ = 0;
  uint32_t floor_ = 0, ceiling_ = 0, depth_ = 0;
  Micros mean_ = -1;               // recent mean duration (EWMA, 1/8); -1: none yet
  uint32_t granted_capacity_ = 0;  // capacity the coordinator's credit reflects
  uint32_t debt_ = 0;              // credit still to withhold after a shallower depth
};

}  // namespace apollo11::actors
