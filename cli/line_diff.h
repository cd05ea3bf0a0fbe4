#pragma once
// A line diff of two texts, for `pipelines diff` of a task's code, SQL or
// command: the longest common subsequence of their lines, and what is not in
// it as removed and added lines.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace apollo11::cli {

struct DiffLine {
  char mark;         // '-': only in the old text, '+': only in the new one
  size_t line;       // 1-based, in the text it comes from
  std::string text;  // without its newline
};

// The lines that differ between `before` and `after`, in order (for each
// change, the removed lines first). When the two texts together have more
// than `max_cells` line pairs to compare, the common prefix and suffix are
// kept and everything between them is reported as changed: the table an
// exact diff needs would be too large.
std::vector<DiffLine> LineDiff(std::string_view before, std::string_view after,
                               size_t max_cells = size_t{4} << 20);

}  // namespace apollo11::cli
