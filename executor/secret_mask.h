#pragma once
// Masking a task's secret values in what it prints and returns. The worker
// knows the values it resolved for an attempt (secret_resolver.h); every
// byte of the attempt's stdout and stderr (log files and the tails sent to
// the coordinator), its error sentence and its output JSON passes through
// the attempt's SecretMask first, so a task that echoes a secret shows
// "***" wherever the cluster shows its output.
//
// A value shorter than kMinMaskedSecretBytes is not masked (masking "1" or
// "on" would blank ordinary text and tell which characters the secret
// holds); a value is masked as written and as it appears inside a JSON
// string (its escaped form), each line of a multi-line value on its own.
// What a task transforms (base64, reversed, split across writes with other
// text in between) is not recognized: masking is a seat belt, not a wall.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace apollo11::executor {

inline constexpr size_t kMinMaskedSecretBytes = 4;
inline constexpr std::string_view kSecretMaskText = "***";

class SecretMask {
 public:
  // Adds a value to mask.
  void Add(std::string_view value);
  bool empty() const { return patterns_.empty(); }

  // `text` with every occurrence of a value replaced by "***" (left to right,
  // the longest value where several start at one place).
  std::string Mask(std::string_view text) const;
  // `json`, a JSON document, with the values masked inside its strings and
  // keys (numbers and the like are left alone); Mask(json) when it does
  // not parse.
  std::string MaskJson(std::string_view json) const;

  // Masking a stream that arrives in pieces: Feed returns the masked text
  // that can be released now and holds back what might be the start of a
  // value split across pieces (at most the longest value's size less one,
  // and nothing past the last newline when no value holds one); Flush
  // releases the rest at the end of the stream. No value holds a newline
  // (each line is masked on its own), so a line is released whole once it
  // ends.
  class Stream {
   public:
    explicit Stream(const SecretMask* mask) : mask_(mask) {}
    std::string Feed(std::string_view piece);
    std::string Flush();

   private:
    const SecretMask* mask_;
    std::string pending_;
  };

 private:
  // The earliest, then longest, value at or after `from` in `text`:
  // {position, length}; {npos, 0} when none.
  std::pair<size_t, size_t> Find(std::string_view text, size_t from) const;
  // Masks text[0, end) of `text` where a match may run past `end` but not
  // past text's size; returns where masking stopped (>= end).
  size_t MaskPrefix(std::string_view text, size_t end, std::string* out) const;

  std::vector<std::string> patterns_;  // no '\n' in any
  size_t longest_ = 0;
};

}  // namespace apollo11::executor
