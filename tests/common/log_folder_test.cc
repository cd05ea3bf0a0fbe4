#include "common/log_folder.h"

#include <catch2/catch.hpp>

namespace apollo11 {
namespace {

constexpr Micros kSecond = kMicrosPerSecond;

TEST_CASE("a repeated line is logged once per interval with the count of its repeats", "[log]") {
  LogFolder folder(10 * kSecond);
  uint64_t folded = 99;
  CHECK(folder.Allow("w1: the coordinator at A is not the leader", 0, &folded));
  CHECK(folded == 0);
  for (int i = 1; i <= 1000; ++i) {
    CHECK_FALSE(folder.Allow("w1: the coordinator at A is not the leader", i, &folded));
  }
  // Another line is its own.
  CHECK(folder.Allow("w1: the coordinator at B is not the leader", 5, &folded));
  CHECK(folded == 0);
  CHECK(folder.Allow("w1: the coordinator at A is not the leader", 10 * kSecond, &folded));
  CHECK(folded == 1000);
  CHECK(folder.Suffix(folded) == " (1000 more like it in the last 10 s)");
  CHECK(folder.Suffix(0).empty());
}

TEST_CASE("the count of a flood that stopped is handed back once its interval passed", "[log]") {
  LogFolder folder(kSecond);
  uint64_t folded = 0;
  REQUIRE(folder.Allow("a", 0, &folded));
  for (int i = 0; i < 5; ++i) CHECK_FALSE(folder.Allow("a", 10, &folded));
  REQUIRE(folder.Allow("b", 0, &folded));  // nothing held back: never handed back
  CHECK(folder.TakeStale(kSecond / 2).empty());
  auto stale = folder.TakeStale(kSecond);
  REQUIRE(stale.size() == 1);
  CHECK(stale[0] == std::make_pair(std::string("a"), uint64_t{5}));
  CHECK(folder.TakeStale(3 * kSecond).empty());
  // Counted from the hand-back: a repeat right after it is held again.
  CHECK_FALSE(folder.Allow("a", kSecond + 1, &folded));
}

TEST_CASE("a folder keeps at most its bound of lines, dropping the oldest", "[log]") {
  LogFolder folder(kSecond, 2);
  uint64_t folded = 0;
  REQUIRE(folder.Allow("a", 0, &folded));
  REQUIRE(folder.Allow("b", 1, &folded));
  REQUIRE(folder.Allow("c", 2, &folded));  // evicts "a"
  CHECK(folder.Allow("a", 3, &folded));    // new again
  CHECK_FALSE(folder.Allow("c", 4, &folded));
}

}  // namespace
}  // namespace apollo11
