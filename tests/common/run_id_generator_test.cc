// Run ids: unique by construction and increasing, whatever the wall clock
// does; one grammar for every run id that comes in from outside.

#include "common/run_id_generator.h"

#include <catch2/catch.hpp>
#include <string>
#include <unordered_set>

#include "common/ids.h"

using namespace apollo11;  // NOLINT: test file

TEST_CASE("a million run ids made on a frozen clock are distinct and increasing", "[ids]") {
  FakeClock clock;
  RunIdGenerator ids;
  std::unordered_set<std::string> seen;
  seen.reserve(1'000'000);
  std::string previous;
  for (int i = 0; i < 1'000'000; ++i) {
    std::string id = ids.Next(clock.Now());
    REQUIRE(id > previous);
    REQUIRE(IsValidRunId(id));
    REQUIRE(seen.insert(id).second);
    previous = std::move(id);
  }
}

TEST_CASE("run ids keep increasing when the wall clock steps back", "[ids]") {
  FakeClock clock;
  RunIdGenerator ids;
  const std::string before = ids.Next(clock.Now());
  clock.StepWall(-3600 * kMicrosPerSecond);
  const std::string after = ids.Next(clock.Now());
  CHECK(after > before);
  clock.StepWall(7200 * kMicrosPerSecond);
  const std::string later = ids.Next(clock.Now());
  CHECK(later > after);
  CHECK(later.substr(0, 16) != before.substr(0, 16));  // a new second
}

TEST_CASE("a generator seeded with the journal's last run id continues after it", "[ids]") {
  FakeClock clock;
  RunIdGenerator first;
  std::string last;
  for (int i = 0; i < 5; ++i) last = first.Next(clock.Now());
  // A restart with the clock an hour behind.
  clock.StepWall(-3600 * kMicrosPerSecond);
  RunIdGenerator restarted;
  restarted.Seed(last);
  const std::string next = restarted.Next(clock.Now());
  CHECK(next > last);
  // An id of another format seeds nothing.
  RunIdGenerator other;
  other.Seed("not-a-generated-id");
  CHECK(other.Next(clock.Now()) < last);
}

TEST_CASE("the ids of one second's counter overflow borrow the next second", "[ids]") {
  FakeClock clock;
  RunIdGenerator ids;
  std::string previous;
  for (int i = 0; i < 0x10000 + 2; ++i) {
    std::string id = ids.Next(clock.Now());
    REQUIRE(id.size() == 21);  // "rYYYYMMDDTHHMMSS-hhhh": the counter never widens
    REQUIRE(id > previous);
    previous = std::move(id);
  }
}

TEST_CASE("one grammar for run ids: no dot, no slash, bounded", "[ids]") {
  CHECK(IsValidRunId("r20261129T093649-4f2a"));
  CHECK(IsValidRunId("nightly_2026-11-29"));
  CHECK_FALSE(IsValidRunId(""));
  CHECK_FALSE(IsValidRunId("r1.a"));
  CHECK_FALSE(IsValidRunId("../etc"));
  CHECK_FALSE(IsValidRunId("-r1"));
  CHECK_FALSE(IsValidRunId("a b"));
  CHECK_FALSE(IsValidRunId(std::string(kMaxRunIdLength + 1, 'a')));
  CHECK(IsValidRunId(std::string(kMaxRunIdLength, 'a')));
  Status s = CheckRunId("x.y");
  CHECK(s.code() == StatusCode::kInvalidInput);
  CHECK(s.message().find("x.y") == std::string::npos);
}

TEST_CASE("a traceparent pads the run's trace id and names each attempt's span", "[ids][trace]") {
  const std::string a = apollo11::TraceParent("0af7651916cd43dd", "r1.load", 1);
  REQUIRE(a.size() == 55);
  CHECK(a.starts_with("00-00000000000000000af7651916cd43dd-"));
  CHECK(a.ends_with("-01"));
  const std::string span = a.substr(36, 16);
  CHECK(span.find_first_not_of("0123456789abcdef") == std::string::npos);
  CHECK(span != "0000000000000000");
  // Stable per attempt, another for the next attempt or execution.
  CHECK(apollo11::TraceParent("0af7651916cd43dd", "r1.load", 1) == a);
  CHECK(apollo11::TraceParent("0af7651916cd43dd", "r1.load", 2).substr(36, 16) != span);
  CHECK(apollo11::TraceParent("0af7651916cd43dd", "r1.other", 1).substr(36, 16) != span);
  // A full 128-bit id is kept; anything not a trace id gives none.
  CHECK(apollo11::TraceParent(std::string(32, 'a'), "r1.x", 1).substr(3, 32) ==
        std::string(32, 'a'));
  for (const char* bad : {"", "0000000000000000", "XYZ", "0af7651916cd43dd0af7651916cd43dd0"}) {
    CHECK(apollo11::TraceParent(bad, "r1.x", 1).empty());
  }
}
