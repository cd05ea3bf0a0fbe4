#include "alerts/alert_queue.h"

namespace apollo11::alerts {

bool AlertQueue::Push(AlertEvent event) {
  bool kept_all = true;
  if (events_.size() >= capacity_) {
    events_.pop_front();
    ++dropped_;
    kept_all = false;
  }
  events_.push_back(std::move(event));
  return kept_all;
}

std::vector<AlertEvent> AlertQueue::TakeAll() {
  std::vector<AlertEvent> out(std::make_move_iterator(events_.begin()),
                              std::make_move_iterator(events_.end()));
  events_.clear();
  return out;
}

}  // namespace apollo11::alerts
