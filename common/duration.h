#pragma once
// Durations as written in pipelines and flags: "250ms", "5s", "2m", "1h",
// "1h30m". Units must appear largest first, each at most once.

#include <chrono>
#include <string>
#include <string_view>

#include "common/status.h"

namespace apollo11 {

using Millis = std::chrono::milliseconds;

// Parses `text`; an error names what was wrong ("unknown unit 'x'").
Result<Millis> ParseDuration(std::string_view text);

// An age for retention: a duration that may start with days ("30d",
// "1d12h", "36h", "0s"). Pipelines do not take days; flags like --older-than
// and --retention do.
Result<Millis> ParseAge(std::string_view text);

// The shortest text ParseDuration reads back to `d` ("1h30m", "250ms", "0s").
std::string FormatDuration(Millis d);

}  // namespace apollo11
