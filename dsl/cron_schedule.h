#pragma once
// A parsed cron schedule and its fire-time arithmetic in a time zone.
//
// Syntax: five fields "MIN HOUR DOM MON DOW", or six with a leading seconds
// field "SEC MIN HOUR DOM MON DOW" (meant for tests and demos: a schedule
// that fires every few seconds). Each field is `*`, `N`, `A-B`, with an
// optional `/STEP` (`N/STEP` means N-max/STEP), or a comma list of those;
// months and weekdays take names (jan, mon); weekday 0 and 7 are Sunday.
// The macros @yearly @annually @monthly @weekly @daily @midnight @hourly
// stand for their five-field forms.
//
// Day matching follows Vixie cron: when both day of month and day of week
// are restricted (neither starts with `*`), a day matching either fires;
// otherwise both must match.
//
// Daylight saving (cronie's convention): the fields match local wall time.
// A "wildcard" schedule is one whose minute or hour field starts with `*`.
// - A local time that does not exist (spring forward): a wildcard schedule
//   skips it; any other fires once at the first instant after the gap.
// - A local time that happens twice (fall back): a wildcard schedule fires at
//   both; any other fires at the first only.
// Fire times that land on the same instant are one fire.

#include <bitset>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/status.h"
#include "common/time_zone.h"

namespace apollo11::dsl {

class CronSchedule {
 public:
  // Parses `text`; InvalidInput naming the offending field otherwise (and
  // for a schedule that never fires, such as "0 0 30 2 *").
  static Result<CronSchedule> Parse(std::string_view text);

  // The first fire time strictly after `utc` (seconds since the Unix epoch)
  // in `zone`, or nullopt when there is none within eight years.
  std::optional<int64_t> NextAfter(int64_t utc, const TimeZone& zone) const;

  bool has_seconds() const { return has_seconds_; }

 private:
  // The first local civil time (seconds since 1970-01-01 00:00 local) at or
  // after `civil` that the fields match, or nullopt before `limit`.
  std::optional<int64_t> NextCivil(int64_t civil, int64_t limit) const;
  bool DayMatches(unsigned mday, unsigned month, unsigned weekday) const;

  std::bitset<60> seconds_;
  std::bitset<60> minutes_;
  std::bitset<24> hours_;
  std::bitset<32> days_;     // 1-31
  std::bitset<13> months_;   // 1-12
  std::bitset<7> weekdays_;  // 0 = Sunday
  bool dom_star_ = false;
  bool dow_star_ = false;
  bool wildcard_ = false;  // minute or hour field starts with '*'
  bool has_seconds_ = false;
};

}  // namespace apollo11::dsl
