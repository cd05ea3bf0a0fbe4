#pragma once
// Time as the engine sees it. Two clocks, never mixed:
// - Now(): wall-clock microseconds since the Unix epoch, for what is recorded
//   and shown (journal timestamps, run times, log lines, retry due times that
//   must survive a restart).
// - Steady(): monotonic microseconds from an arbitrary origin, for what is
//   measured within one process (timers, liveness, deadlines, waits). A wall
//   clock step (NTP, an operator's `date -s`) never moves it.
// Logic classes take a Clock so tests step time by hand instead of sleeping.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>

namespace apollo11 {

using Micros = int64_t;  // microseconds since the Unix epoch (wall clock)

inline constexpr Micros kMicrosPerMilli = 1000;
inline constexpr Micros kMicrosPerSecond = 1000 * 1000;

class Clock {
 public:
  virtual ~Clock() = default;
  // Wall-clock now. Thread-safe.
  virtual Micros Now() const = 0;
  // Monotonic now: never goes back, unaffected by wall-clock steps. Only
  // differences between two Steady() values mean anything. Thread-safe.
  virtual Micros Steady() const = 0;
};

class SystemClock final : public Clock {
 public:
  Micros Now() const override {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
  Micros Steady() const override {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
};

// A clock that only moves when told to; for tests. Steady() starts at the
// same value as Now() so that tests written against one clock read alike.
class FakeClock final : public Clock {
 public:
  explicit FakeClock(Micros start = 1'700'000'000 * kMicrosPerSecond)
      : now_(start), steady_(start) {}
  Micros Now() const override { return now_.load(); }
  Micros Steady() const override { return steady_.load(); }
  // Moves both clocks forward by `delta` (>= 0).
  void Advance(Micros delta) {
    now_ += delta;
    steady_ += delta;
  }
  // Sets the wall clock to `t`; the steady clock moves by the same amount
  // when that is forward, and stays put otherwise.
  void Set(Micros t) {
    const Micros delta = t - now_.load();
    now_ = t;
    if (delta > 0) steady_ += delta;
  }
  // Steps the wall clock alone (an NTP or operator step); Steady() stays.
  void StepWall(Micros delta) { now_ += delta; }

 private:
  std::atomic<Micros> now_;
  std::atomic<Micros> steady_;
};

// "2026-11-29T09:36:49.123Z" for humans and JSON.
std::string FormatTimestamp(Micros t);

}  // namespace apollo11
