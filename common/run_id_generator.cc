#include "common/run_id_generator.h"

#include <cstdio>
#include <ctime>

namespace apollo11 {
namespace {

std::string Format(int64_t second, uint32_t counter) {
  std::time_t seconds = static_cast<std::time_t>(second);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[96];
  std::snprintf(buf, sizeof(buf), "r%04d%02d%02dT%02d%02d%02d-%04x", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<unsigned>(counter));
  return buf;
}

bool Digits(std::string_view s, size_t from, size_t n, int* out) {
  int v = 0;
  for (size_t i = from; i < from + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}

// "rYYYYMMDDTHHMMSS-hhhh": its second and counter; false for any other id.
bool Parse(std::string_view id, int64_t* second, uint32_t* counter) {
  constexpr size_t kPrefix = 17;  // "r" + 8 digits + "T" + 6 digits + "-"
  if (id.size() != kPrefix + 4 || id[0] != 'r' || id[9] != 'T' || id[16] != '-') return false;
  std::tm tm{};
  int year = 0, month = 0;
  if (!Digits(id, 1, 4, &year) || !Digits(id, 5, 2, &month) || !Digits(id, 7, 2, &tm.tm_mday) ||
      !Digits(id, 10, 2, &tm.tm_hour) || !Digits(id, 12, 2, &tm.tm_min) ||
      !Digits(id, 14, 2, &tm.tm_sec)) {
    return false;
  }
  tm.tm_year = year - 1900;
  tm.tm_mon = month - 1;
  uint32_t c = 0;
  for (size_t i = kPrefix; i < id.size(); ++i) {
    const char ch = id[i];
    const int digit = ch >= '0' && ch <= '9'   ? ch - '0'
                      : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
                                               : -1;
    if (digit < 0) return false;
    c = c * 16 + static_cast<uint32_t>(digit);
  }
  *second = static_cast<int64_t>(timegm(&tm));
  *counter = c;
  return true;
}

}  // namespace

void RunIdGenerator::Seed(std::string_view last_id) {
  int64_t second = 0;
  uint32_t counter = 0;
  if (!Parse(last_id, &second, &counter)) return;
  if (second > second_ || (second == second_ && counter > counter_)) {
    second_ = second;
    counter_ = counter;
  }
}

std::string RunIdGenerator::Next(Micros now) {
  const int64_t second = now / kMicrosPerSecond;
  if (second_ == 0 || second > second_) {
    second_ = second;
    counter_ = 0;
  } else if (++counter_ == kPerSecond) {
    ++second_;  // borrow the next second rather than widen the counter
    counter_ = 0;
  }
  return Format(second_, counter_);
}

}  // namespace apollo11
