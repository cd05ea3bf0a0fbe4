#include "common/ids.h"

#include <cstdio>
#include <ctime>
#include <random>

namespace apollo11 {
namespace {

uint64_t RandomBits() {
  thread_local std::mt19937_64 engine{std::random_device{}()};
  return engine();
}

}  // namespace

std::string NewRunId(Micros now) { return NewRunId(now, static_cast<uint16_t>(RandomBits())); }

std::string NewRunId(Micros now, uint16_t suffix) {
  std::time_t seconds = static_cast<std::time_t>(now / kMicrosPerSecond);
  std::tm tm{};
  gmtime_r(&seconds, &tm);
  char buf[96];
  std::snprintf(buf, sizeof(buf), "r%04d%02d%02dT%02d%02d%02d-%04x", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<unsigned>(suffix));
  return buf;
}

std::string NewTraceId() {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(RandomBits()));
  return buf;
}

}  // namespace apollo11
