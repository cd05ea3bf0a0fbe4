// cli::LineDiff: what `pipelines diff` prints for a task's code.
#include "cli/line_diff.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace apollo11::cli {
namespace {

std::vector<std::string> Shown(const std::vector<DiffLine>& lines) {
  std::vector<std::string> out;
  for (const DiffLine& d : lines) out.push_back(d.mark + std::to_string(d.line) + " " + d.text);
  return out;
}

}  // namespace

TEST_CASE("a line diff names the changed lines and their numbers, and nothing else",
          "[cli][diff]") {
  const std::string v1 = "import os\nprint('v1')\nx = 1\ny = 2\n";
  const std::string v2 = "import os\nprint('v2')\nx = 1\nz = 3\ny = 2\n";
  CHECK(Shown(LineDiff(v1, v2)) ==
        std::vector<std::string>{"-2 print('v1')", "+2 print('v2')", "+4 z = 3"});
  CHECK(LineDiff(v1, v1).empty());
  CHECK(Shown(LineDiff("", "a\nb")) == std::vector<std::string>{"+1 a", "+2 b"});
  CHECK(Shown(LineDiff("a\nb\n", "")) == std::vector<std::string>{"-1 a", "-2 b"});
  // A trailing newline alone is no line of its own.
  CHECK(LineDiff("a\n", "a").empty());
}

TEST_CASE("a line diff too large for its table reports the middle as changed, ends kept",
          "[cli][diff]") {
  std::string a = "head\n", b = "head\n";
  for (int i = 0; i < 50; ++i) {
    a += "a" + std::to_string(i) + "\n";
    b += (i == 10 ? "changed\n" : "a" + std::to_string(i) + "\n");
  }
  a += "tail\n";
  b += "tail\n";
  // Exact: one line changed.
  CHECK(Shown(LineDiff(a, b)) == std::vector<std::string>{"-12 a10", "+12 changed"});
  // A table of 10 cells cannot hold the 41 x 41 between the first and last
  // change: every line in between is reported, the common ends are not.
  const std::vector<DiffLine> rough = LineDiff(a, b, 10);
  CHECK(rough.size() == 2);  // the prefix and suffix alone narrow it to the one line
  std::string c = a, d = b;
  c.replace(c.find("a40"), 3, "x40");
  const std::vector<DiffLine> wide = LineDiff(c, d, 10);
  CHECK(wide.size() == 2 * 31);  // lines 12..42 of each, removed then added
  CHECK(wide.front().mark == '-');
  CHECK(wide.front().line == 12);
  CHECK(wide.back().mark == '+');
  CHECK(wide.back().line == 42);
}

}  // namespace apollo11::cli
