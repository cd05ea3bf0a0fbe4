#include "replication/in_sync_set.h"

#include <algorithm>
#include <utility>

namespace apollo11::replication {

InSyncSet::InSyncSet(std::string self, Micros timeout, uint64_t handed_over)
    : self_(std::move(self)), timeout_(timeout), handed_over_(handed_over) {}

uint64_t InSyncSet::AckedBy(const std::string& name) const {
  auto it = acked_.find(name);
  return it == acked_.end() ? 0 : it->second;
}

std::vector<std::string> InSyncSet::Observe(const std::map<std::string, StandbyView>& standbys,
                                            Micros now) {
  std::vector<std::string> joined;
  for (const auto& [name, s] : standbys) {
    acked_[name] = std::max(acked_[name], s.acked_batch);
    auto waited = waited_.find(name);
    if (waited == waited_.end()) {
      // Streaming and heard lately (not a standby gone quiet after its last
      // ack): from now on every batch waits for it, so it catches up under
      // back-pressure. One dropped this term joins again only close behind.
      const bool close = s.acked_batch + kJoinLag >= handed_over_;
      if (s.copying || now - s.last_heard > timeout_ || (dropped_.count(name) > 0 && !close)) {
        continue;
      }
      dropped_.erase(name);
      waited = waited_.emplace(name, handed_over_).first;
    }
    // Holding every batch handed over before it joined, and acknowledging
    // each one since: it holds every batch released.
    if (in_sync_.count(name) == 0 && AckedBy(name) >= waited->second) {
      in_sync_.insert(name);
      ++version_;
      joined.push_back(name);
    }
  }
  return joined;
}

bool InSyncSet::Acknowledged(uint64_t batch_no) const {
  return std::all_of(waited_.begin(), waited_.end(),
                     [&](const auto& w) { return AckedBy(w.first) >= batch_no; });
}

std::vector<std::string> InSyncSet::DropLate(uint64_t batch_no) {
  std::vector<std::string> late;
  for (auto it = waited_.begin(); it != waited_.end();) {
    if (AckedBy(it->first) >= batch_no) {
      ++it;
      continue;
    }
    late.push_back(it->first);
    dropped_.insert(it->first);
    if (in_sync_.erase(it->first) > 0) ++version_;
    it = waited_.erase(it);
  }
  return late;
}

std::set<std::string> InSyncSet::RecordedMembers() const {
  std::set<std::string> members = in_sync_;
  members.insert(self_);
  return members;
}

}  // namespace apollo11::replication
