#pragma once
// The coordinator's low-rate "health" log line: workers, the gaps seen
// between their frames (heartbeats included), backlog against its cap, what
// waits for placement and how long the oldest READY execution has waited
// (dispatch lag). Fed by the dispatcher's snapshots on the scheduler thread;
// logs at most once per interval.

#include <cstddef>

#include "actors/internal_messages.h"
#include "common/clock.h"
#include "common/duration.h"

namespace apollo11::actors {

class CoordinatorHealth {
 public:
  CoordinatorHealth(size_t max_backlog, Millis interval);
  // One dispatcher snapshot at `now` (Steady()), with the scheduler's backlog; logs the
  // line when the interval has passed since the previous one.
  void OnSnapshot(const WorkersSnapshot& snapshot, size_t backlog, bool paused, Micros now);

 private:
  size_t max_backlog_;
  Micros interval_us_;
  Micros next_line_ = 0;  // 0: the first snapshot only starts the clock
  Micros min_gap_ = 0, max_gap_ = 0;
};

}  // namespace apollo11::actors
