#include "dsl/cron_schedule.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

using apollo11::TimeZone;
using apollo11::dsl::CronSchedule;

namespace {

// Seconds since the epoch of a UTC civil time.
int64_t Utc(int y, unsigned mo, unsigned d, int h, int mi, int s = 0) {
  using namespace std::chrono;
  sys_days date{year{y} / month{mo} / day{d}};
  return date.time_since_epoch().count() * 86400 + h * 3600 + mi * 60 + s;
}

CronSchedule Cron(const char* text) {
  auto parsed = CronSchedule::Parse(text);
  INFO(text << ": " << parsed.status().message());
  REQUIRE(parsed.ok());
  return *parsed;
}

TimeZone Zone(const char* name) {
  auto zone = TimeZone::Load(name);
  INFO(name);
  REQUIRE(zone.ok());
  return *zone;
}

// The `n` fire times after `from`.
std::vector<int64_t> Fires(const CronSchedule& cron, const TimeZone& zone, int64_t from, int n) {
  std::vector<int64_t> out;
  for (int i = 0; i < n; ++i) {
    auto next = cron.NextAfter(from, zone);
    if (!next) break;
    out.push_back(*next);
    from = *next;
  }
  return out;
}

}  // namespace

TEST_CASE("cron fields: values, ranges, steps, lists and names", "[cron]") {
  TimeZone utc;
  int64_t start = Utc(2026, 1, 1, 0, 0);  // a Thursday
  CHECK(Fires(Cron("*/15 * * * *"), utc, start, 3) == std::vector<int64_t>{Utc(2026, 1, 1, 0, 15),
                                                                           Utc(2026, 1, 1, 0, 30),
                                                                           Utc(2026, 1, 1, 0, 45)});
  CHECK(Fires(Cron("5,35 9-17/4 * * *"), utc, start, 4) ==
        std::vector<int64_t>{Utc(2026, 1, 1, 9, 5), Utc(2026, 1, 1, 9, 35), Utc(2026, 1, 1, 13, 5),
                             Utc(2026, 1, 1, 13, 35)});
  CHECK(Fires(Cron("0 0 * * fri-sat"), utc, start, 2) ==
        std::vector<int64_t>{Utc(2026, 1, 2, 0, 0), Utc(2026, 1, 3, 0, 0)});
  CHECK(Fires(Cron("0 0 * * 7"), utc, start, 1) == std::vector<int64_t>{Utc(2026, 1, 4, 0, 0)});
  CHECK(Fires(Cron("0 12 1 jul,DEC *"), utc, start, 2) ==
        std::vector<int64_t>{Utc(2026, 7, 1, 12, 0), Utc(2026, 12, 1, 12, 0)});
  // N/STEP means N-max/STEP.
  CHECK(Fires(Cron("50/5 0 * * *"), utc, start, 3) == std::vector<int64_t>{Utc(2026, 1, 1, 0, 50),
                                                                           Utc(2026, 1, 1, 0, 55),
                                                                           Utc(2026, 1, 2, 0, 50)});
  // Both day fields restricted: either matches (Vixie). 13th or a Friday.
  CHECK(Fires(Cron("0 0 13 * fri"), utc, start, 3) ==
        std::vector<int64_t>{Utc(2026, 1, 2, 0, 0), Utc(2026, 1, 9, 0, 0), Utc(2026, 1, 13, 0, 0)});
  // One of them starred: both must match. Friday the 13th.
  CHECK(Fires(Cron("0 0 13 * */1"), utc, start, 1) == std::vector<int64_t>{Utc(2026, 1, 13, 0, 0)});
  CHECK(Fires(Cron("0 0 29 2 *"), utc, start, 1) == std::vector<int64_t>{Utc(2028, 2, 29, 0, 0)});
}

TEST_CASE("cron macros and the seconds field", "[cron]") {
  TimeZone utc;
  int64_t start = Utc(2026, 5, 17, 10, 20, 30);
  CHECK(Fires(Cron("@hourly"), utc, start, 1) == std::vector<int64_t>{Utc(2026, 5, 17, 11, 0)});
  CHECK(Fires(Cron("@daily"), utc, start, 1) == std::vector<int64_t>{Utc(2026, 5, 18, 0, 0)});
  CHECK(Fires(Cron("@midnight"), utc, start, 1) == std::vector<int64_t>{Utc(2026, 5, 18, 0, 0)});
  CHECK(Fires(Cron("@weekly"), utc, start, 1) == std::vector<int64_t>{Utc(2026, 5, 24, 0, 0)});
  CHECK(Fires(Cron("@monthly"), utc, start, 1) == std::vector<int64_t>{Utc(2026, 6, 1, 0, 0)});
  CHECK(Fires(Cron("@yearly"), utc, start, 1) == std::vector<int64_t>{Utc(2027, 1, 1, 0, 0)});
  CHECK(Fires(Cron("@annually"), utc, start, 1) == std::vector<int64_t>{Utc(2027, 1, 1, 0, 0)});
  CHECK(Fires(Cron("*/2 * * * * *"), utc, start, 3) ==
        std::vector<int64_t>{start + 2, start + 4, start + 6});
  CHECK(Fires(Cron("0 * * * *"), utc, start, 1) == std::vector<int64_t>{Utc(2026, 5, 17, 11, 0)});
  CHECK(Cron("*/2 * * * * *").has_seconds());
  CHECK_FALSE(Cron("* * * * *").has_seconds());
}

TEST_CASE("cron schedules that are malformed or never fire are refused", "[cron]") {
  for (const char* bad : {"* * * *", "* * * * * * *", "60 * * * * *", "0 0 30 2 *", "0 0 31 4,6 *",
                          "@every", "*/0 * * * *"}) {
    INFO(bad);
    CHECK_FALSE(CronSchedule::Parse(bad).ok());
  }
  CHECK(CronSchedule::Parse("0 0 30 2 *").status().message().find("never fires") !=
        std::string::npos);
}

TEST_CASE("Europe/Berlin spring-forward day: fixed times in the gap fire at its end once",
          "[cron][dst]") {
  TimeZone berlin = Zone("Europe/Berlin");
  // 2026-03-29 02:00 CET -> 03:00 CEST, at 01:00Z.
  CHECK(Fires(Cron("30 2 * * *"), berlin, Utc(2026, 3, 28, 0, 0), 3) ==
        std::vector<int64_t>{Utc(2026, 3, 28, 1, 30), Utc(2026, 3, 29, 1, 0),
                             Utc(2026, 3, 30, 0, 30)});
  // Two fixed times in the gap are one fire.
  CHECK(Fires(Cron("0,30 2 * * *"), berlin, Utc(2026, 3, 28, 23, 0), 2) ==
        std::vector<int64_t>{Utc(2026, 3, 29, 1, 0), Utc(2026, 3, 30, 0, 0)});
  // Wildcard schedules skip the hour that does not exist.
  CHECK(Fires(Cron("*/30 * * * *"), berlin, Utc(2026, 3, 29, 0, 0), 3) ==
        std::vector<int64_t>{Utc(2026, 3, 29, 0, 30), Utc(2026, 3, 29, 1, 0),
                             Utc(2026, 3, 29, 1, 30)});
}

TEST_CASE("Europe/Berlin fall-back day: fixed times fire once, wildcards twice", "[cron][dst]") {
  TimeZone berlin = Zone("Europe/Berlin");
  // 2026-10-25 03:00 CEST -> 02:00 CET, at 01:00Z: 02:00-02:59 happens twice.
  CHECK(Fires(Cron("30 2 * * *"), berlin, Utc(2026, 10, 24, 12, 0), 2) ==
        std::vector<int64_t>{Utc(2026, 10, 25, 0, 30), Utc(2026, 10, 26, 1, 30)});
  CHECK(Fires(Cron("30 * * * *"), berlin, Utc(2026, 10, 24, 23, 0), 4) ==
        std::vector<int64_t>{Utc(2026, 10, 24, 23, 30), Utc(2026, 10, 25, 0, 30),
                             Utc(2026, 10, 25, 1, 30), Utc(2026, 10, 25, 2, 30)});
}

TEST_CASE("America/New_York spring-forward and fall-back days", "[cron][dst]") {
  TimeZone ny = Zone("America/New_York");
  // 2026-03-08 02:00 EST -> 03:00 EDT at 07:00Z.
  CHECK(
      Fires(Cron("30 2 * * *"), ny, Utc(2026, 3, 7, 0, 0), 3) ==
      std::vector<int64_t>{Utc(2026, 3, 7, 7, 30), Utc(2026, 3, 8, 7, 0), Utc(2026, 3, 9, 6, 30)});
  CHECK(Fires(Cron("0 * * * *"), ny, Utc(2026, 3, 8, 5, 30), 3) ==
        std::vector<int64_t>{Utc(2026, 3, 8, 6, 0), Utc(2026, 3, 8, 7, 0), Utc(2026, 3, 8, 8, 0)});
  // 2026-11-01 02:00 EDT -> 01:00 EST at 06:00Z: 01:00-01:59 happens twice.
  CHECK(Fires(Cron("30 1 * * *"), ny, Utc(2026, 10, 31, 12, 0), 2) ==
        std::vector<int64_t>{Utc(2026, 11, 1, 5, 30), Utc(2026, 11, 2, 6, 30)});
  CHECK(Fires(Cron("*/30 1 * * *"), ny, Utc(2026, 11, 1, 4, 0), 5) ==
        std::vector<int64_t>{Utc(2026, 11, 1, 5, 0), Utc(2026, 11, 1, 5, 30),
                             Utc(2026, 11, 1, 6, 0), Utc(2026, 11, 1, 6, 30),
                             Utc(2026, 11, 2, 6, 0)});
}

TEST_CASE("time zones come from TZif files, with the footer rule past the last transition",
          "[tz]") {
  TimeZone berlin = Zone("Europe/Berlin");
  CHECK(berlin.OffsetAt(Utc(2026, 1, 15, 12, 0)) == 3600);
  CHECK(berlin.OffsetAt(Utc(2026, 7, 15, 12, 0)) == 7200);
  CHECK(berlin.OffsetAt(Utc(2150, 7, 15, 12, 0)) == 7200);
  CHECK(berlin.OffsetAt(Utc(2150, 12, 15, 12, 0)) == 3600);
  CHECK(berlin.NextTransition(Utc(2026, 3, 1, 0, 0)) == Utc(2026, 3, 29, 1, 0));
  CHECK(Zone("Asia/Tokyo").OffsetAt(Utc(2026, 7, 1, 0, 0)) == 9 * 3600);
  CHECK(Zone("UTC").OffsetAt(0) == 0);
  for (const char* bad : {"Mars/Olympus", "../etc/passwd", "/etc/localtime", "Europe/Ber lin"}) {
    INFO(bad);
    CHECK_FALSE(TimeZone::Load(bad).ok());
  }
  CHECK_FALSE(TimeZone::FromTzif("TZif2 truncated", "X").ok());
  CHECK_FALSE(TimeZone::FromTzif("", "X").ok());
}
