#pragma once
// Checks cron schedule text (the syntax is described in dsl/cron_schedule.h).

#include <string_view>

#include "common/status.h"

namespace apollo11::dsl {

// Accepts the five-field form "MIN HOUR DOM MON DOW" (each field `*`, `N`,
// `A-B`, with an optional `/STEP`, comma lists; month and weekday names such
// as `jan` and `mon`; weekday 0-7 with 0 and 7 Sunday), the same with a
// leading seconds field (for tests), and the macros @yearly @annually
// @monthly @weekly @daily @midnight @hourly. Returns InvalidInput naming the
// offending field otherwise.
Status ValidateCron(std::string_view text);

}  // namespace apollo11::dsl
