#include "actors/scheduler/change_feed.h"

#include <charconv>
#include <optional>

namespace apollo11::actors {

ChangeFeed::ChangeFeed(std::string token) : token_(std::move(token)) {}

void ChangeFeed::Append(std::vector<RunChange> changes) {
  for (RunChange& c : changes) {
    ring_.push_back(Entry{next_seq_++, std::move(c)});
    if (ring_.size() > kCapacity) ring_.pop_front();
  }
}

std::optional<uint64_t> ChangeFeed::Position(const std::string& since) const {
  const size_t colon = since.find(':');
  if (colon == std::string::npos || since.compare(0, colon, token_) != 0) return std::nullopt;
  uint64_t seq = 0;
  const char* first = since.data() + colon + 1;
  const char* last = since.data() + since.size();
  auto [end, ec] = std::from_chars(first, last, seq);
  if (ec != std::errc() || end != last || first == last) return std::nullopt;
  if (seq >= next_seq_) return std::nullopt;  // ahead of this feed: not ours
  // The next change the client needs must still be held (or not made yet).
  const uint64_t oldest = ring_.empty() ? next_seq_ : ring_.front().seq;
  if (seq + 1 < oldest) return std::nullopt;
  return seq;
}

bool ChangeFeed::Ready(const std::string& since) const {
  if (since.empty()) return true;
  std::optional<uint64_t> at = Position(since);
  return !at || *at < seq();
}

nlohmann::json ChangeFeed::Answer(const std::string& since) const {
  nlohmann::json out{{"feed", token_}, {"seq", seq()}, {"reset", false}};
  nlohmann::json changes = nlohmann::json::array();
  std::optional<uint64_t> at = since.empty() ? std::optional<uint64_t>(seq()) : Position(since);
  if (!at) {
    out["reset"] = true;
  } else if (*at < seq()) {
    const uint64_t oldest = ring_.front().seq;  // non-empty: a change after `at` exists
    uint64_t last = *at;
    for (size_t i = *at + 1 - oldest; i < ring_.size() && changes.size() < kMaxPerAnswer; ++i) {
      const Entry& e = ring_[i];
      nlohmann::json tasks = nlohmann::json::object();
      for (int s = 0; s < kTaskStateCount; ++s) {
        if (e.change.tasks[s] != 0) tasks[ToString(static_cast<TaskState>(s))] = e.change.tasks[s];
      }
      changes.push_back({{"seq", e.seq},
                         {"run_id", e.change.run_id},
                         {"pipeline", e.change.pipeline},
                         {"state", ToString(e.change.status)},
                         {"tasks", std::move(tasks)}});
      last = e.seq;
    }
    out["seq"] = last;
  }
  out["changes"] = std::move(changes);
  return out;
}

}  // namespace apollo11::actors
