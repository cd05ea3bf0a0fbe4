#pragma once
// The dotted paths that name a value inside a task's JSON output, as in
// `${tasks.ID.output.PATH}` and `foreach: {items: output.PATH}`: object keys,
// and numbers that index arrays ("rows.0.id").

#include <nlohmann/json.hpp>
#include <string_view>

namespace apollo11::dsl {

// The value at `path` in `value` (`value` itself for an empty path), or
// nullptr when a key is missing, an index is out of range or not a number
// of at most 9 digits, or a segment goes into a scalar. Never throws.
const nlohmann::json* JsonAtPath(const nlohmann::json& value, std::string_view path);

}  // namespace apollo11::dsl
