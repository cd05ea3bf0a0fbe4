#pragma once
// The one way JSON leaves this process as text. nlohmann::json::dump throws
// on a string that is not UTF-8 (a task's output, a file name, a peer's
// message may hold any byte); this never throws and replaces each invalid
// byte with U+FFFD instead.

#include <cstddef>
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

// The deepest nesting of arrays and objects accepted in JSON that comes from
// outside this process (a task's output, a request body, a peer's answer).
// nlohmann::json parses without recursion, but dump(), comparison and copy
// recurse once per level: a 64 KiB "[[[[..." would take some 32,000 stack
// frames, enough to overflow an actor thread's stack.
inline constexpr size_t kMaxJsonDepth = 128;

// How deeply arrays and objects nest in the JSON text `text` (0 for a
// scalar), counting brackets outside strings; stops counting at `stop_at`.
// Says nothing of whether `text` is valid JSON.
size_t JsonNestingDepth(std::string_view text, size_t stop_at = kMaxJsonDepth + 1) noexcept;

// `text` parsed as nlohmann::json::parse(text, nullptr, false) does: a
// discarded value when it is not JSON, or when it nests deeper than
// kMaxJsonDepth. Never throws.
nlohmann::json ParseJsonBounded(std::string_view text) noexcept;

}  // namespace apollo11
