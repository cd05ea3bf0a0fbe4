#include "common/timestamp_parse.h"

#include <cctype>
#include <chrono>
#include <string>

#include "common/duration.h"

namespace apollo11 {
namespace {

// Reads exactly `digits` decimal digits at `*pos`.
bool ReadNumber(std::string_view s, size_t* pos, size_t digits, int* out) {
  if (*pos + digits > s.size()) return false;
  int v = 0;
  for (size_t i = 0; i < digits; ++i) {
    const char c = s[*pos + i];
    if (!std::isdigit(static_cast<unsigned char>(c))) return false;
    v = v * 10 + (c - '0');
  }
  *pos += digits;
  *out = v;
  return true;
}

bool Take(std::string_view s, size_t* pos, char c) {
  if (*pos < s.size() && s[*pos] == c) {
    ++*pos;
    return true;
  }
  return false;
}

// The offset east of UTC in seconds: "Z", "+HH:MM", "-HH:MM", "+HHMM", or
// nothing (UTC).
bool ReadOffset(std::string_view s, size_t* pos, int* offset) {
  *offset = 0;
  if (*pos == s.size() || Take(s, pos, 'Z') || Take(s, pos, 'z')) return true;
  const char sign = s[*pos];
  if (sign != '+' && sign != '-') return false;
  ++*pos;
  int hours = 0, minutes = 0;
  if (!ReadNumber(s, pos, 2, &hours)) return false;
  Take(s, pos, ':');
  if (!ReadNumber(s, pos, 2, &minutes)) return false;
  if (hours > 23 || minutes > 59) return false;
  *offset = (sign == '-' ? -1 : 1) * (hours * 3600 + minutes * 60);
  return true;
}

// Up to six digits after a '.', as microseconds.
bool ReadFraction(std::string_view s, size_t* pos, Micros* micros) {
  *micros = 0;
  if (!Take(s, pos, '.')) return true;
  size_t digits = 0;
  Micros scale = 100000;
  while (*pos < s.size() && std::isdigit(static_cast<unsigned char>(s[*pos]))) {
    if (digits < 6) *micros += (s[*pos] - '0') * scale;
    scale /= 10;
    ++digits;
    ++*pos;
  }
  return digits > 0;
}

}  // namespace

Result<Micros> ParseTimestamp(std::string_view text) {
  const std::string shown(text.substr(0, 64));
  auto bad = [&](const std::string& why) -> Status {
    return Status::InvalidInput("'" + shown + "' is not a timestamp (" + why +
                                "); write 2026-11-01, 2026-11-01T03:00:00Z or "
                                "2026-11-01T03:00:00+08:00");
  };
  size_t pos = 0;
  int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0, offset = 0;
  Micros fraction = 0;
  if (!ReadNumber(text, &pos, 4, &year) || !Take(text, &pos, '-') ||
      !ReadNumber(text, &pos, 2, &month) || !Take(text, &pos, '-') ||
      !ReadNumber(text, &pos, 2, &day)) {
    return bad("expected YYYY-MM-DD first");
  }
  if (pos < text.size() && (text[pos] == 'T' || text[pos] == 't' || text[pos] == ' ')) {
    ++pos;
    if (!ReadNumber(text, &pos, 2, &hour) || !Take(text, &pos, ':') ||
        !ReadNumber(text, &pos, 2, &minute)) {
      return bad("expected HH:MM after the date");
    }
    if (Take(text, &pos, ':') && !ReadNumber(text, &pos, 2, &second)) {
      return bad("expected two digits of seconds");
    }
    if (!ReadFraction(text, &pos, &fraction)) return bad("expected digits after '.'");
  }
  if (!ReadOffset(text, &pos, &offset)) return bad("expected Z or an offset such as +08:00");
  if (pos != text.size()) return bad("unexpected text after the time");
  const std::chrono::year_month_day ymd{std::chrono::year(year),
                                        std::chrono::month(static_cast<unsigned>(month)),
                                        std::chrono::day(static_cast<unsigned>(day))};
  if (!ymd.ok()) return bad("no such day");
  if (hour > 23 || minute > 59 || second > 59) return bad("a time field is out of range");
  const int64_t days = std::chrono::sys_days(ymd).time_since_epoch().count();
  const int64_t seconds = days * 86400 + hour * 3600 + minute * 60 + second - offset;
  return seconds * kMicrosPerSecond + fraction;
}

Result<Micros> ParseSince(std::string_view text, Micros now) {
  if (auto at = ParseTimestamp(text); at.ok()) return *at;
  if (auto age = ParseAge(text); age.ok()) {
    return now - std::chrono::duration_cast<std::chrono::microseconds>(*age).count();
  }
  return Status::InvalidInput(
      "since '" + std::string(text) +
      "' is neither a time (2026-12-01T08:00:00Z) nor an age (90m, 1h, 7d)");
}

}  // namespace apollo11
