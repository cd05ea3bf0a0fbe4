#include "common/timestamp_parse.h"

#include <catch2/catch.hpp>

namespace apollo11 {
namespace {

constexpr Micros kNov1 = 1761955200LL * kMicrosPerSecond;  // 2025-11-01T00:00:00Z

TEST_CASE("ParseTimestamp reads RFC 3339 and its shortenings", "[timestamp]") {
  CHECK(*ParseTimestamp("2025-11-01") == kNov1);
  CHECK(*ParseTimestamp("2025-11-01T00:00") == kNov1);
  CHECK(*ParseTimestamp("2025-11-01 03:04:05") ==
        kNov1 + (3 * 3600 + 4 * 60 + 5) * kMicrosPerSecond);
  CHECK(*ParseTimestamp("2025-11-01T03:00:00Z") == kNov1 + 3 * 3600 * kMicrosPerSecond);
  CHECK(*ParseTimestamp("2025-11-01T08:00:00+08:00") == kNov1);
  CHECK(*ParseTimestamp("2025-10-31T19:00:00-0500") == kNov1);
  CHECK(*ParseTimestamp("2025-11-01T00:00:00.25Z") == kNov1 + 250000);
  CHECK(*ParseTimestamp("1970-01-01") == 0);
  CHECK(*ParseTimestamp("1969-12-31T23:59:59Z") == -kMicrosPerSecond);
  CHECK(*ParseTimestamp("2024-02-29") > 0);  // a leap day
}

TEST_CASE("ParseTimestamp reads back what FormatTimestamp writes", "[timestamp]") {
  for (Micros t : {Micros{0}, kNov1 + 123000, Micros{1764640800123000}}) {
    CHECK(*ParseTimestamp(FormatTimestamp(t)) == t);
  }
}

TEST_CASE("ParseTimestamp refuses what is not a time, saying why", "[timestamp]") {
  for (const char* bad :
       {"", "yesterday", "2025-13-01", "2025-02-29", "2025-11-31", "2025-11-01T24:00",
        "2025-11-01T10:60", "2025-11-01T10:00:61", "2025-11-01T10", "2025-11-01T10:00:00+25:00",
        "2025-11-01Tx", "2025-11-01T10:00:00.Z", "2025-11-01 trailing", "1764640800"}) {
    INFO(bad);
    auto t = ParseTimestamp(bad);
    REQUIRE_FALSE(t.ok());
    CHECK(t.status().code() == StatusCode::kInvalidInput);
    CHECK(t.status().message().find("not a timestamp") != std::string::npos);
  }
}

}  // namespace
}  // namespace apollo11
