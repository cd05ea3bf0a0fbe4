#include "alerts/alert_rule.h"

#include <algorithm>

namespace apollo11::alerts {

bool GlobMatch(std::string_view pattern, std::string_view text) {
  // Iterative matcher with one backtrack point: the last `*` seen.
  size_t p = 0, t = 0, star = std::string_view::npos, star_t = 0;
  while (t < text.size()) {
    if (p < pattern.size() && (pattern[p] == '?' || pattern[p] == text[t])) {
      ++p;
      ++t;
    } else if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      star_t = t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++star_t;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

bool AlertRule::Matches(const AlertEvent& event) const {
  if (events.empty() ? event.type == AlertType::kRunSucceeded
                     : std::find(events.begin(), events.end(), event.type) == events.end()) {
    return false;
  }
  if (pipelines.empty()) return true;
  return !event.pipeline.empty() && GlobMatch(pipelines, event.pipeline);
}

}  // namespace apollo11::alerts
