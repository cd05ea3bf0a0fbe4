#include "actors/scheduler/retry_gate.h"

namespace apollo11::actors {

bool RetryGate::Admit(const std::string& run_id, int task, Micros delay) {
  Key key(run_id, task);
  if (holding_.count(key) > 0) return true;  // re-armed (recovery): keeps its slot
  if (auto it = queued_.find(key); it != queued_.end()) {
    it->second->delay = delay;
    return false;
  }
  if (max_ == 0 || (holding_.size() < max_ && queue_.empty())) {
    holding_.emplace(std::move(key), true);
    return true;
  }
  queue_.push_back(Entry{run_id, task, delay});
  queued_.emplace(std::move(key), std::prev(queue_.end()));
  ++deferred_total_;
  return false;
}

void RetryGate::Leave(const std::string& run_id, int task, std::vector<Entry>* start) {
  const Key key(run_id, task);
  if (auto it = queued_.find(key); it != queued_.end()) {
    queue_.erase(it->second);
    queued_.erase(it);
    return;
  }
  if (holding_.erase(key) == 0) return;
  while (!queue_.empty() && (max_ == 0 || holding_.size() < max_)) {
    Entry e = std::move(queue_.front());
    queue_.pop_front();
    Key started(e.run_id, e.task);
    queued_.erase(started);
    holding_.emplace(std::move(started), true);
    start->push_back(std::move(e));
  }
}

std::optional<size_t> RetryGate::QueuePosition(const std::string& run_id, int task) const {
  auto it = queued_.find(Key(run_id, task));
  if (it == queued_.end()) return std::nullopt;
  size_t pos = 1;
  for (auto q = queue_.begin(); q != it->second; ++q) ++pos;
  return pos;
}

}  // namespace apollo11::actors
