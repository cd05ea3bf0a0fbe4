#include "common/json_dump.h"

#include <algorithm>

namespace apollo11 {

std::string SafeJsonDump(const nlohmann::json& doc, int indent) noexcept {
  try {
    return doc.dump(indent, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
  } catch (...) {
    try {
      return std::string("{\"error\":\"cannot serialize the answer\"}");
    } catch (...) {
      return {};
    }
  }
}

size_t JsonNestingDepth(std::string_view text, size_t stop_at) noexcept {
  size_t depth = 0, deepest = 0;
  bool in_string = false, escaped = false;
  for (char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
      if (deepest >= stop_at) break;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

nlohmann::json ParseJsonBounded(std::string_view text) noexcept {
  if (JsonNestingDepth(text) > kMaxJsonDepth)
    return nlohmann::json(nlohmann::json::value_t::discarded);
  try {
    return nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  } catch (...) {  // out of memory
    return nlohmann::json(nlohmann::json::value_t::discarded);
  }
}

}  // namespace apollo11
