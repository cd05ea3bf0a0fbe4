#pragma once
// The one way JSON leaves this process as text. nlohmann::json::dump throws
// on a string that is not UTF-8 (a task's output, a file name, a peer's
// message may hold any byte); this never throws and replaces each invalid
// byte with U+FFFD instead.

#include <nlohmann/json.hpp>
#include <string>

namespace apollo11 {

// `doc` as JSON text (compact when `indent` < 0, else pretty-printed with
// that many spaces), invalid UTF-8 replaced by U+FFFD. Never throws: should
// serializing fail anyway (out of memory), returns an object with an "error"
// member.
std::string SafeJsonDump(const nlohmann::json& doc, int indent = -1) noexcept;

}  // namespace apollo11
