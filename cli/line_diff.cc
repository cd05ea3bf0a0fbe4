#include "cli/line_diff.h"

#include <algorithm>
#include <cstdint>

namespace apollo11::cli {
namespace {

std::vector<std::string_view> SplitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const size_t end = std::min(text.find('\n'), text.size());
    lines.push_back(text.substr(0, end));
    text.remove_prefix(std::min(end + 1, text.size()));
  }
  return lines;
}

}  // namespace

std::vector<DiffLine> LineDiff(std::string_view before, std::string_view after, size_t max_cells) {
  const std::vector<std::string_view> a = SplitLines(before), b = SplitLines(after);
  // The common prefix and suffix need no table.
  size_t head = 0;
  while (head < a.size() && head < b.size() && a[head] == b[head]) ++head;
  size_t tail = 0;
  while (tail < a.size() - head && tail < b.size() - head &&
         a[a.size() - 1 - tail] == b[b.size() - 1 - tail]) {
    ++tail;
  }
  const size_t n = a.size() - head - tail, m = b.size() - head - tail;
  // lcs[i][j]: the common subsequence of a[head+i..] and b[head+j..], for an
  // exact diff when the table is small enough; empty otherwise.
  std::vector<uint32_t> lcs;
  if ((n + 1) * (m + 1) <= max_cells) {
    lcs.assign((n + 1) * (m + 1), 0);
    for (size_t i = n; i-- > 0;) {
      for (size_t j = m; j-- > 0;) {
        lcs[i * (m + 1) + j] = a[head + i] == b[head + j]
                                   ? lcs[(i + 1) * (m + 1) + j + 1] + 1
                                   : std::max(lcs[(i + 1) * (m + 1) + j], lcs[i * (m + 1) + j + 1]);
      }
    }
  }
  auto at = [&](size_t i, size_t j) { return lcs.empty() ? 0 : lcs[i * (m + 1) + j]; };
  std::vector<DiffLine> out;
  size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && !lcs.empty() && a[head + i] == b[head + j]) {
      ++i, ++j;
    } else if (i < n && (j == m || at(i + 1, j) >= at(i, j + 1))) {
      out.push_back({'-', head + i + 1, std::string(a[head + i])});
      ++i;
    } else {
      out.push_back({'+', head + j + 1, std::string(b[head + j])});
      ++j;
    }
  }
  return out;
}

}  // namespace apollo11::cli
