#include "common/duration.h"

#include <catch2/catch.hpp>

using apollo11::FormatDuration;
using apollo11::Millis;
using apollo11::ParseDuration;

TEST_CASE("durations in every documented form parse", "[duration]") {
  CHECK(ParseDuration("250ms").value() == Millis(250));
  CHECK(ParseDuration("5s").value() == Millis(5000));
  CHECK(ParseDuration("2m").value() == Millis(120000));
  CHECK(ParseDuration("1h").value() == Millis(3600000));
  CHECK(ParseDuration("1h30m").value() == Millis(5400000));
  CHECK(ParseDuration("1m5s250ms").value() == Millis(65250));
}

TEST_CASE("malformed durations are refused with a reason", "[duration]") {
  for (const char* bad : {"", "5", "s", "5x", "1.5s", "-5s", "5s1m", "1h1h", "5 s", "ms"}) {
    auto r = ParseDuration(bad);
    INFO(bad);
    CHECK_FALSE(r.ok());
    CHECK_FALSE(r.status().message().empty());
  }
  CHECK(ParseDuration("5x").status().message().find("unknown unit 'x'") != std::string::npos);
}

TEST_CASE("formatting reads back to the same duration", "[duration]") {
  for (int64_t ms : {0, 1, 250, 1000, 5400000, 3723004}) {
    CHECK(ParseDuration(FormatDuration(Millis(ms))).value() == Millis(ms));
  }
  CHECK(FormatDuration(Millis(5400000)) == "1h30m");
}

TEST_CASE("retention ages take days as well as ordinary durations", "[duration]") {
  using apollo11::ParseAge;
  CHECK(*ParseAge("30d") == Millis(30LL * 86'400'000));
  CHECK(*ParseAge("1d12h") == Millis(36LL * 3'600'000));
  CHECK(*ParseAge("36h") == Millis(36LL * 3'600'000));
  CHECK(*ParseAge("0s") == Millis(0));
  CHECK_FALSE(ParseAge("30").ok());
  CHECK_FALSE(ParseAge("d").ok());
  CHECK_FALSE(ParseAge("1d1x").ok());
  CHECK(ParseAge("1d1x").status().message().find("30d") != std::string::npos);
}
