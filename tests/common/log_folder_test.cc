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

namespace apollo11 {
namespace {

TEST_CASE("lines that differ only in their numbers fold under one key", "[log]") {
  CHECK(LogFolder::NumbersFolded("refusing to lead in epoch 99: journal epoch 1054") ==
        "refusing to lead in epoch #: journal epoch #");
  CHECK(LogFolder::NumbersFolded("refusing to lead in epoch 100: journal epoch 1054") ==
        LogFolder::NumbersFolded("refusing to lead in epoch 99: journal epoch 1054"));
  CHECK(LogFolder::NumbersFolded("") == "");
  CHECK(LogFolder::NumbersFolded("7") == "#");
  CHECK(LogFolder::NumbersFolded("etcd at http://e1:2379 refused") ==
        "etcd at http://e#:# refused");
  // 1,054 refusals in 8 s, as an elector climbing to a journal's epoch made:
  // one line, then nothing until the interval ends.
  LogFolder folder(10 * kMicrosPerSecond);
  int logged = 0;
  uint64_t folded = 0;
  for (int i = 0; i < 1054; ++i) {
    const std::string line = "refusing to lead in epoch " + std::to_string(100 + 2 * i);
    if (folder.Allow(LogFolder::NumbersFolded(line), i * 7600, &folded)) ++logged;
  }
  CHECK(logged == 1);
  auto stale = folder.TakeStale(10 * kMicrosPerSecond);
  REQUIRE(stale.size() == 1);
  CHECK(stale[0].second == 1053);
}

}  // namespace
}  // namespace apollo11
