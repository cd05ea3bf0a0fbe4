#include "actors/dispatcher/watchers.h"

namespace apollo11::actors {

void Watchers::Heard(const std::string& worker_id, const std::string& route, Micros now) {
  auto it = by_id_.find(worker_id);
  if (it != by_id_.end()) {
    by_heard_.erase({it->second.heard, worker_id});
  } else if (by_id_.size() >= kMaxWatchers && !by_heard_.empty()) {
    by_id_.erase(by_heard_.begin()->second);  // the one heard longest ago
    by_heard_.erase(by_heard_.begin());
  }
  by_id_[worker_id] = Entry{route, now};
  by_heard_.emplace(now, worker_id);
}

void Watchers::Forget(const std::string& worker_id) {
  auto it = by_id_.find(worker_id);
  if (it == by_id_.end()) return;
  by_heard_.erase({it->second.heard, worker_id});
  by_id_.erase(it);
}

std::vector<std::string> Watchers::RoutesHeardSince(Micros since) const {
  std::vector<std::string> routes;
  for (const auto& [id, e] : by_id_) {
    if (e.heard >= since) routes.push_back(e.route);
  }
  return routes;
}

}  // namespace apollo11::actors
