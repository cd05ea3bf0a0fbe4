#include "dsl/cron.h"

#include <catch2/catch.hpp>

using apollo11::dsl::ValidateCron;

TEST_CASE("standard cron forms and macros are accepted", "[cron]") {
  for (const char* ok :
       {"* * * * *", "*/15 * * * *", "0 3 * * *", "0 9-17/2 * * mon-fri", "5,35 0 1 jan,jul *",
        "0 0 1-31/7 * 0", "0 0 * * 7", "  0   0 * * sun ", "@daily", "@hourly", "@yearly"}) {
    INFO(ok);
    CHECK(ValidateCron(ok).ok());
  }
}

TEST_CASE("malformed cron text is refused with the field named", "[cron]") {
  struct Case {
    const char* text;
    const char* why;
  };
  for (const Case& c : {Case{"* * * *", "expected 5"}, Case{"60 * * * *", "minute"},
                        Case{"* 24 * * *", "hour"}, Case{"* * 0 * *", "day of month"},
                        Case{"* * * 13 *", "month"}, Case{"* * * * 8", "day of week"},
                        Case{"*/0 * * * *", "step"}, Case{"5-1 * * * *", "backwards"},
                        Case{"a * * * *", "minute"}, Case{"@weekdays", "unknown cron macro"},
                        Case{"1,,2 * * * *", "minute"}, Case{"", "expected 5"}}) {
    INFO(c.text);
    apollo11::Status s = ValidateCron(c.text);
    CHECK_FALSE(s.ok());
    CHECK(s.message().find(c.why) != std::string::npos);
  }
}
