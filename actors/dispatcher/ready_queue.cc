#include "actors/dispatcher/ready_queue.h"

namespace apollo11::actors {

void ReadyQueue::Push(QueuedExec&& exec) {
  Remove(exec.dispatch.exec_id);
  Key key{-exec.priority, seq_++};
  std::string group = exec.group.empty() ? "default" : exec.group;
  index_[exec.dispatch.exec_id] = {group, key};
  groups_[group].emplace(key, std::move(exec));
  ++size_;
}

bool ReadyQueue::Remove(const std::string& exec_id) {
  auto q = index_.find(exec_id);
  if (q == index_.end()) return false;
  groups_[q->second.first].erase(q->second.second);
  index_.erase(q);
  --size_;
  return true;
}

Micros ReadyQueue::OldestReadyAt() const {
  Micros oldest = 0;
  for (const auto& [group, queue] : groups_) {
    for (const auto& [key, q] : queue) {
      if (q.ready_at > 0 && (oldest == 0 || q.ready_at < oldest)) oldest = q.ready_at;
    }
  }
  return oldest;
}

}  // namespace apollo11::actors
