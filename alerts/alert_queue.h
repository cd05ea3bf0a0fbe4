#pragma once
// The bounded hand-over between producers and the delivery thread. Full, it
// drops its oldest event and counts the drop: a producer (the scheduler) is
// never made to wait for a slow webhook. Not thread-safe: the Notifier holds
// its lock around every call.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

#include "alerts/alert_event.h"

namespace apollo11::alerts {

class AlertQueue {
 public:
  explicit AlertQueue(size_t capacity) : capacity_(capacity < 1 ? 1 : capacity) {}

  // Appends; returns false when the oldest event was dropped to make room.
  bool Push(AlertEvent event);
  // Everything queued, oldest first.
  std::vector<AlertEvent> TakeAll();

  size_t size() const { return events_.size(); }
  uint64_t dropped() const { return dropped_; }

 private:
  size_t capacity_;
  std::deque<AlertEvent> events_;
  uint64_t dropped_ = 0;
};

}  // namespace apollo11::alerts
