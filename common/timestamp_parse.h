#pragma once
// Reading a wall-clock instant an operator typed (`apollo11 backfill --from`,
// the HTTP API): RFC 3339 and its common shortenings.
//
//   2026-11-01                      midnight UTC
//   2026-11-01T03:00  2026-11-01 03:00:00    UTC when no offset is given
//   2026-11-01T03:00:00.250Z        fractions of a second, up to microseconds
//   2026-11-01T03:00:00+08:00       an explicit offset (also -05:30, +0800)
//
// What FormatTimestamp writes reads back to the same instant (millisecond
// precision).

#include <string_view>

#include "common/clock.h"
#include "common/status.h"

namespace apollo11 {

// Microseconds since the Unix epoch. InvalidInput names what is wrong
// (a field out of range, a day the month does not have, trailing text).
Result<Micros> ParseTimestamp(std::string_view text);

// A start of a listing an operator typed (`apollo11 audit --since`, the HTTP
// API's since=): a timestamp as ParseTimestamp reads it, or an age before
// `now` ("90m", "1h", "7d": ParseAge). InvalidInput names both forms.
Result<Micros> ParseSince(std::string_view text, Micros now);

}  // namespace apollo11
