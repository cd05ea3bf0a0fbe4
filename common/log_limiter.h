#pragma once
// Rate-limits a log line that a peer can provoke at will (a refused frame, a
// refused request): at most `burst` lines per `period` of the steady clock,
// and the next line let through says how many were held back meanwhile.
// Single-threaded: one owner calls it.

#include <cstdint>

#include "common/clock.h"

namespace apollo11 {

class LogLimiter {
 public:
  LogLimiter(int burst, Micros period) : burst_(burst), period_(period) {}

  // True when a line may be logged at `now` (Clock::Steady()); then
  // *suppressed is the number of lines held back since the last one let
  // through (and the count starts again).
  bool Allow(Micros now, uint64_t* suppressed);

 private:
  int burst_;
  Micros period_;
  Micros window_start_ = 0;
  int in_window_ = 0;
  uint64_t suppressed_ = 0;
};

}  // namespace apollo11
