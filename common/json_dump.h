#pragma once
// The one way JSON leaves this process as text. nlohmann::json::dump throws
// on a string that is not UTF-8 (a task's output, a file name, a peer's
// message may hold any byte); this never throws and replaces each invalid
// byte with U+FFFD instead.

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace apollo11 {

// `doc` as JSON text (compact when `indent` < 0, else pretty-printed with
// that many spaces), invalid UTF-8 replaced by U+FFFD. Never throws: should
// serializing fail anyway (out of memory), returns an object with an "error"
// member.
std::string SafeJsonDump(const nlohmann::json& doc, int indent = -1) noexcept;

// Whether `s` is printed by SafeJsonDump as it is between its quotes:
// printable ASCII without a quote or a backslash. The writers that skip the
// JSON tree for speed (canonical snapshots, task summaries) take only such
// text, and leave the rest to the tree.
inline bool IsPlainJsonText(std::string_view s) {
  for (unsigned char c : s) {
    if (c < 0x20 || c > 0x7e || c == '"' || c == '\\') return false;
  }
  return true;
}

}  // namespace apollo11
