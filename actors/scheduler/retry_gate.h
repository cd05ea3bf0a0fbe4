#pragma once
// RetryGate: the coordinator-wide cap on retries waiting with a timer
// (--max-retrying, brief 5.3). A failed task whose retry policy applies goes
// RETRYING as always; the gate decides whether its backoff timer starts now
// or after a slot frees, oldest first. Plain logic: no clock, no journal, no
// sockets; the scheduler journals what it decides. Not thread-safe: one owner
// (the scheduler actor).

#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"

namespace apollo11::actors {

class RetryGate {
 public:
  // A retry waiting for a slot, with the backoff delay its timer will run.
  struct Entry {
    std::string run_id;
    int task = 0;
    Micros delay = 0;
  };

  // `max_retrying` 0: no cap (every retry's timer starts at once).
  explicit RetryGate(size_t max_retrying) : max_(max_retrying) {}

  // A task went RETRYING with a timer of `delay`. True: it holds a slot and
  // its timer starts now. False: it is queued behind the others (counted in
  // deferred_total) until Leave frees a slot for it.
  bool Admit(const std::string& run_id, int task, Micros delay);

  // The task left RETRYING (its retry came due, or it was canceled): frees its
  // slot or drops it from the queue, then appends to `start` the queued
  // entries, oldest first, that now hold a slot and must start their timers.
  // A task the gate does not know is ignored.
  void Leave(const std::string& run_id, int task, std::vector<Entry>* start);

  // 1-based place of a queued task in the queue; nullopt when it holds a slot
  // or is unknown.
  std::optional<size_t> QueuePosition(const std::string& run_id, int task) const;

  size_t max_retrying() const { return max_; }
  // Retries holding a slot (their timer runs): apollo11_retrying.
  size_t waiting() const { return holding_.size(); }
  size_t queued() const { return queue_.size(); }
  // Retries that had to queue since start: apollo11_retries_deferred_total.
  uint64_t deferred_total() const { return deferred_total_; }

 private:
  using Key = std::pair<std::string, int>;

  size_t max_;
  std::map<Key, bool> holding_;  // value unused: a set with the map's lookup
  std::list<Entry> queue_;       // oldest first
  std::map<Key, std::list<Entry>::iterator> queued_;
  uint64_t deferred_total_ = 0;
};

}  // namespace apollo11::actors
