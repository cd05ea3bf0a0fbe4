#include "common/clock.h"

#include <ctime>

namespace apollo11 {

std::string FormatTimestamp(Micros t) {
  std::time_t seconds = static_cast<std::time_t>(t / kMicrosPerSecond);
  int millis = static_cast<int>((t % kMicrosPerSecond) / kMicrosPerMilli);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[96];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
  return buf;
}

}  // namespace apollo11
