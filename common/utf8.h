#pragma once
// UTF-8 validation for text that comes from outside and must later be
// written as JSON (pipeline files, snapshots): nlohmann::json refuses to dump
// a string that is not UTF-8, by throwing.

#include <cstddef>
#include <string_view>

namespace apollo11 {

// The byte offset of the first byte that does not start or continue a
// well-formed UTF-8 sequence (RFC 3629: no overlong forms, no surrogates,
// nothing above U+10FFFF), or std::string_view::npos when `text` is valid.
size_t FirstInvalidUtf8(std::string_view text);

}  // namespace apollo11
