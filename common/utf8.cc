#include "common/utf8.h"

#include <cstdint>

namespace apollo11 {

size_t FirstInvalidUtf8(std::string_view text) {
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const auto c = static_cast<uint8_t>(text[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    // Length of the sequence and the allowed range of its second byte, which
    // is where overlong forms, surrogates and values past U+10FFFF show.
    size_t len = 0;
    uint8_t lo = 0x80, hi = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) {
      len = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
      len = 3;
      if (c == 0xe0) lo = 0xa0;  // overlong
      if (c == 0xed) hi = 0x9f;  // UTF-16 surrogates
    } else if (c >= 0xf0 && c <= 0xf4) {
      len = 4;
      if (c == 0xf0) lo = 0x90;  // overlong
      if (c == 0xf4) hi = 0x8f;  // past U+10FFFF
    } else {
      return i;  // a continuation byte, an overlong lead (0xc0, 0xc1) or 0xf5..0xff
    }
    if (i + len > n) return i;
    const auto second = static_cast<uint8_t>(text[i + 1]);
    if (second < lo || second > hi) return i;
    for (size_t k = 2; k < len; ++k) {
      const auto next = static_cast<uint8_t>(text[i + k]);
      if (next < 0x80 || next > 0xbf) return i;
    }
    i += len;
  }
  return std::string_view::npos;
}

}  // namespace apollo11
