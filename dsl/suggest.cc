#include "dsl/suggest.h"

#include <algorithm>

namespace apollo11::dsl {

size_t EditDistance(std::string_view a, std::string_view b) {
  // Optimal string alignment: Levenshtein plus adjacent transpositions, three rows.
  std::vector<size_t> before(b.size() + 1), previous(b.size() + 1), row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) previous[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      row[j] = std::min({previous[j] + 1, row[j - 1] + 1, previous[j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        row[j] = std::min(row[j], before[j - 2] + 1);
      }
    }
    std::swap(before, previous);
    std::swap(previous, row);
  }
  return previous[b.size()];
}

std::string DidYouMean(std::string_view word, const std::vector<std::string>& candidates) {
  // Words far longer than any key are not typos of one; skip the quadratic work.
  if (word.empty() || word.size() > 64) return "";
  const std::string* best = nullptr;
  size_t best_distance = 3;
  for (const std::string& candidate : candidates) {
    size_t length_gap = candidate.size() > word.size() ? candidate.size() - word.size()
                                                       : word.size() - candidate.size();
    if (length_gap >= best_distance) continue;
    size_t d = EditDistance(word, candidate);
    if (d < best_distance && d * 2 < std::max(word.size(), candidate.size())) {
      best = &candidate;
      best_distance = d;
    }
  }
  return best ? " (did you mean '" + *best + "'?)" : "";
}

}  // namespace apollo11::dsl
