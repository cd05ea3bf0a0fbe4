#include "actors/dispatcher/watchers.h"

#include <algorithm>

namespace apollo11::actors {

void Watchers::Heard(const std::string& worker_id, const std::string& route, Micros now) {
  auto it = by_id_.find(worker_id);
  if (it == by_id_.end() && by_id_.size() >= kMaxWatchers) {
    auto oldest = std::min_element(by_id_.begin(), by_id_.end(), [](const auto& a, const auto& b) {
      return a.second.heard < b.second.heard;
    });
    by_id_.erase(oldest);
  }
  by_id_[worker_id] = Entry{route, now};
}

std::vector<std::string> Watchers::RoutesHeardSince(Micros since) const {
  std::vector<std::string> routes;
  for (const auto& [id, e] : by_id_) {
    if (e.heard >= since) routes.push_back(e.route);
  }
  return routes;
}

}  // namespace apollo11::actors
