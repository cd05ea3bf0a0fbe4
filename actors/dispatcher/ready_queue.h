#pragma once
// The dispatcher's queue of READY executions waiting for a slot, one queue
// per worker group, each in placement order: higher priority first, then
// arrival. An execution is in it at most once (its newest attempt).
//
// Single-threaded: the dispatcher actor's thread calls everything.

#include <map>
#include <string>
#include <unordered_map>
#include <utility>

#include "actors/internal_messages.h"
#include "common/clock.h"

namespace apollo11::actors {

class ReadyQueue {
 public:
  // What Visit's `offer` did with an execution.
  enum class Offer {
    kTake,  // placed: remove it from the queue
    kSkip,  // leave it; offer the next one of the group
    kStop,  // leave it and the rest of the group
  };

  // Queues `exec` in its group (empty: "default"), replacing an older
  // attempt of the same execution still waiting.
  void Push(QueuedExec&& exec);
  // Removes `exec_id`; false when it was not queued.
  bool Remove(const std::string& exec_id);
  bool Contains(const std::string& exec_id) const { return index_.count(exec_id) > 0; }
  size_t size() const { return size_; }
  // The earliest ready_at of the executions waiting; 0 when none has one.
  Micros OldestReadyAt() const;

  // For each group with executions waiting: when `start(group)` returns
  // true, offers them in placement order to `offer(QueuedExec&)`, which
  // returns an Offer. `offer` may modify the execution it is given, and must
  // not call other members of the queue.
  template <class Start, class OfferFn>
  void Visit(Start&& start, OfferFn&& offer);

 private:
  using Key = std::pair<int32_t, uint64_t>;  // (-priority, seq)
  std::unordered_map<std::string, std::map<Key, QueuedExec>> groups_;
  std::unordered_map<std::string, std::pair<std::string, Key>> index_;  // exec id -> where
  size_t size_ = 0;
  uint64_t seq_ = 0;
};

template <class Start, class OfferFn>
void ReadyQueue::Visit(Start&& start, OfferFn&& offer) {
  for (auto& [group, queue] : groups_) {
    if (queue.empty() || !start(group)) continue;
    for (auto q = queue.begin(); q != queue.end();) {
      const Offer o = offer(q->second);
      if (o == Offer::kStop) break;
      if (o == Offer::kSkip) {
        ++q;
        continue;
      }
      index_.erase(q->second.dispatch.exec_id);
      q = queue.erase(q);
      --size_;
    }
  }
}

}  // namespace apollo11::actors
