#pragma once
// An IANA time zone read from a TZif file (RFC 8536), for turning UTC instants
// into local wall time and back without libc's process-wide TZ setting
// (localtime_r after setenv("TZ") races with every other thread). GCC 12's
// libstdc++ has no std::chrono::tzdb, hence our own reader.
//
// The transitions of the file are used as they are; after the last one, the
// POSIX TZ rule in the file's footer (e.g. "CET-1CEST,M3.5.0,M10.5.0/3") is
// expanded up to the year 2200, so "slim" zone files work as well as "fat"
// ones. Rules of the Jn and n forms are not expanded (no current zone uses
// them): past the last transition such a zone keeps its last offset.
//
// Immutable after Load: safe to share between threads.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace apollo11 {

class TimeZone {
 public:
  // UTC: offset 0, no transitions.
  TimeZone();

  // The zone named `name` ("UTC", or an IANA name such as "Europe/Berlin")
  // from the TZif file under `dir`. InvalidInput: a name that is not a zone
  // name (absolute, "..", odd characters), no such zone, or a file that is
  // not TZif (the message says which).
  static Result<TimeZone> Load(const std::string& name,
                               const std::string& dir = "/usr/share/zoneinfo");
  // Decodes the bytes of a TZif file; `name` is what name() returns.
  static Result<TimeZone> FromTzif(std::string_view bytes, const std::string& name);

  const std::string& name() const { return name_; }
  // Seconds east of UTC in force at `utc` (seconds since the Unix epoch).
  int32_t OffsetAt(int64_t utc) const;
  // The first instant > `utc` at which the offset changes, or INT64_MAX.
  int64_t NextTransition(int64_t utc) const;

 private:
  std::string name_ = "UTC";
  int32_t initial_offset_ = 0;    // before the first transition
  std::vector<int64_t> times_;    // transition instants, increasing
  std::vector<int32_t> offsets_;  // offset from times_[i] on
};

}  // namespace apollo11
