#pragma once
// Timers keyed by a due time on one clock, popped in due order (ties in the
// order they were armed). The scheduler keeps its retry and slow-check timers
// in one of these, on the Steady() clock. Not thread-safe.

#include <cstdint>
#include <queue>
#include <utility>
#include <vector>

#include "common/clock.h"

namespace apollo11::actors {

template <class T>
class TimerQueue {
 public:
  // Fires `payload` once `due` is reached. A timer that became moot is not
  // cancelled: whoever fires it checks that it still applies.
  void Arm(Micros due, T payload) { heap_.push({due, next_seq_++, std::move(payload)}); }

  // The earliest due time, or 0 when no timer is armed.
  Micros NextDue() const { return heap_.empty() ? 0 : heap_.top().due; }
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }

  // Calls fire(payload) for every timer due at `now`, earliest first. A timer
  // armed by `fire` at or before `now` fires in the same call.
  template <class Fire>
  void PopDue(Micros now, Fire&& fire) {
    while (!heap_.empty() && heap_.top().due <= now) {
      T payload = std::move(const_cast<Entry&>(heap_.top()).payload);
      heap_.pop();
      fire(payload);
    }
  }

 private:
  struct Entry {
    Micros due;
    uint64_t seq;
    T payload;
    bool operator>(const Entry& o) const { return due != o.due ? due > o.due : seq > o.seq; }
  };
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap_;
  uint64_t next_seq_ = 0;
};

}  // namespace apollo11::actors
