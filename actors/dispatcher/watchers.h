#pragma once
// The workers connected to a coordinator that follow another one: each
// sends this coordinator a WATCH every heartbeat, and this directory keeps
// its route (the connection's identity) and when it was last heard. When
// the coordinator becomes the leader it announces its term to them at once
// (a HEARTBEAT of the new epoch, which a worker follows), instead of waiting
// until they find it: the claim window of a new leader then closes on
// workers that have rejoined, not on a timer.
//
// The node owns it, so it outlives the coordinator's restarts (a role change
// starts new actors): only one dispatcher uses it at a time, its thread.

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"

namespace apollo11::actors {

class Watchers {
 public:
  // At most this many workers are remembered; the one heard longest ago
  // makes room.
  static constexpr size_t kMaxWatchers = 10000;

  // `worker_id` watches from `route`, heard at Steady() `now`.
  void Heard(const std::string& worker_id, const std::string& route, Micros now);
  // The routes of the workers heard at or after `since` (Steady()).
  std::vector<std::string> RoutesHeardSince(Micros since) const;
  // The worker registered with this coordinator (it said HELLO): it no
  // longer watches.
  void Forget(const std::string& worker_id);
  size_t size() const { return by_id_.size(); }

 private:
  struct Entry {
    std::string route;
    Micros heard = 0;
  };
  std::map<std::string, Entry> by_id_;
  // (heard, worker id) of every entry: the oldest is found in O(log n) when
  // a flood of made-up ids from a peer keeps the directory full.
  std::set<std::pair<Micros, std::string>> by_heard_;
};

}  // namespace apollo11::actors
