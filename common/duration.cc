#include "common/duration.h"

#include <cctype>
#include <cstdint>
#include <limits>

namespace apollo11 {
namespace {

struct Unit {
  std::string_view name;
  int64_t millis;
};
// Ordered largest first; a duration must use them in this order.
constexpr Unit kUnits[] = {{"h", 3'600'000}, {"m", 60'000}, {"s", 1'000}, {"ms", 1}};

}  // namespace

Result<Millis> ParseDuration(std::string_view text) {
  const std::string quoted = "'" + std::string(text) + "'";
  if (text.empty()) {
    return Status::InvalidInput("empty duration (write e.g. 250ms, 5s, 2m, 1h30m)");
  }
  int64_t total = 0;
  size_t pos = 0;
  int last_unit = -1;
  while (pos < text.size()) {
    if (!std::isdigit(static_cast<unsigned char>(text[pos]))) {
      return Status::InvalidInput("bad duration " + quoted +
                                  ": expected a number (write e.g. 250ms, 5s, 2m, 1h30m)");
    }
    int64_t number = 0;
    while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
      number = number * 10 + (text[pos] - '0');
      if (number > 1'000'000'000)
        return Status::InvalidInput("duration " + quoted + " is too large");
      ++pos;
    }
    size_t unit_start = pos;
    while (pos < text.size() && std::isalpha(static_cast<unsigned char>(text[pos]))) ++pos;
    std::string_view unit = text.substr(unit_start, pos - unit_start);
    if (unit.empty()) {
      return Status::InvalidInput("bad duration " + quoted +
                                  ": number without a unit (use ms, s, m or h)");
    }
    int index = -1;
    for (int i = 0; i < 4; ++i) {
      if (kUnits[i].name == unit) index = i;
    }
    if (index < 0) {
      return Status::InvalidInput("bad duration " + quoted + ": unknown unit '" +
                                  std::string(unit) + "' (use ms, s, m or h)");
    }
    if (index <= last_unit) {
      return Status::InvalidInput("bad duration " + quoted +
                                  ": units must go from largest to smallest, each once");
    }
    last_unit = index;
    total += number * kUnits[index].millis;
    if (total > std::numeric_limits<int32_t>::max() * int64_t{1000}) {
      return Status::InvalidInput("duration " + quoted + " is too large");
    }
  }
  return Millis(total);
}

std::string FormatDuration(Millis d) {
  int64_t ms = d.count();
  if (ms == 0) return "0s";
  std::string out;
  if (ms < 0) {
    out = "-";
    ms = -ms;
  }
  for (const Unit& unit : kUnits) {
    if (ms >= unit.millis) {
      out += std::to_string(ms / unit.millis) + std::string(unit.name);
      ms %= unit.millis;
    }
  }
  return out;
}

Result<Millis> ParseAge(std::string_view text) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  if (digits == 0 || digits > 6 || digits >= text.size() || text[digits] != 'd') {
    return ParseDuration(text);  // no days: an ordinary duration (or its error)
  }
  int64_t days = 0;
  for (size_t i = 0; i < digits; ++i) days = days * 10 + (text[i] - '0');
  Millis total(days * 86'400'000);
  std::string_view rest = text.substr(digits + 1);
  if (!rest.empty()) {
    auto more = ParseDuration(rest);
    if (!more.ok()) {
      return Status::InvalidInput("bad age '" + std::string(text) +
                                  "': write e.g. 30d, 1d12h or 36h");
    }
    total += *more;
  }
  return total;
}

}  // namespace apollo11
