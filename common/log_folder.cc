#include "common/log_folder.h"

#include <algorithm>
#include <cstdio>

namespace apollo11 {

LogFolder::LogFolder(Micros interval, size_t max_keys)
    : interval_(interval), max_keys_(std::max<size_t>(max_keys, 1)) {}

bool LogFolder::Allow(const std::string& key, Micros now, uint64_t* folded) {
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    if (entries_.size() >= max_keys_) {
      auto oldest = std::min_element(entries_.begin(), entries_.end(), [](auto& a, auto& b) {
        return a.second.let_through < b.second.let_through;
      });
      entries_.erase(oldest);
    }
    entries_.emplace(key, Entry{now, 0});
    *folded = 0;
    return true;
  }
  Entry& e = it->second;
  if (now - e.let_through < interval_) {
    ++e.held;
    return false;
  }
  *folded = e.held;
  e.held = 0;
  e.let_through = now;
  return true;
}

std::vector<std::pair<std::string, uint64_t>> LogFolder::TakeStale(Micros now) {
  std::vector<std::pair<std::string, uint64_t>> out;
  for (auto& [key, e] : entries_) {
    if (e.held == 0 || now - e.let_through < interval_) continue;
    out.emplace_back(key, e.held);
    e.held = 0;
    e.let_through = now;  // the count is logged now: the next repeat waits an interval
  }
  return out;
}

std::string LogFolder::Suffix(uint64_t folded) const {
  if (folded == 0) return "";
  char text[96];
  std::snprintf(text, sizeof(text), " (%llu more like it in the last %.0f s)",
                static_cast<unsigned long long>(folded),
                static_cast<double>(interval_) / kMicrosPerSecond);
  return text;
}

std::string LogFolder::NumbersFolded(std::string_view line) {
  std::string key;
  key.reserve(line.size());
  for (char c : line) {
    if (c < '0' || c > '9') {
      key += c;
    } else if (key.empty() || key.back() != '#') {
      key += '#';
    }
  }
  return key;
}

}  // namespace apollo11
