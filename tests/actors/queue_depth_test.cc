// The queue depth of a worker (actors/worker/queue_depth.h): fixed or adaptive, and
// the credit that follows from it, checked against a model of the
// coordinator's credit count.

#include "actors/worker/queue_depth.h"

#include <catch2/catch.hpp>
#include <deque>
#include <random>

using namespace apollo11;          // NOLINT: test file
using namespace apollo11::actors;  // NOLINT: test file

TEST_CASE("the adaptive depth's bounds", "[worker][queue]") {
  CHECK(PrefetchFloor(1) == 4);
  CHECK(PrefetchCeiling(1) == 32);
  CHECK(PrefetchFloor(2) == 4);
  CHECK(PrefetchCeiling(2) == 64);
  CHECK(PrefetchFloor(16) == 32);
  CHECK(PrefetchCeiling(8) == 256);
  CHECK(PrefetchCeiling(16) == 256);
  CHECK(PrefetchFloor(200) == 256);
  CHECK(PrefetchCeiling(200) == 256);
  for (uint32_t slots = 1; slots <= 300; ++slots)
    CHECK(PrefetchFloor(slots) <= PrefetchCeiling(slots));
}

TEST_CASE("a fixed depth never moves and returns credit one for one", "[worker][queue]") {
  QueueDepth d = QueueDepth::Fixed(2, 3);
  CHECK(d.advertised() == 3);
  CHECK(d.OnHello(1) == 4);
  d.Observe(1);
  d.Observe(10 * kMicrosPerSecond);
  CHECK(d.depth() == 3);
  CHECK(d.OnFreed(2) == 2);
  CHECK(d.OnFreed(0) == 0);
}

TEST_CASE("an adaptive depth deepens for short tasks and gives it back for long ones",
          "[worker][queue]") {
  QueueDepth d = QueueDepth::Adaptive(2, PrefetchFloor(2), PrefetchCeiling(2));
  CHECK(d.advertised() == 64);
  CHECK(d.depth() == 4);     // nothing observed yet: the floor
  CHECK(d.OnHello(0) == 6);  // slots + floor
  d.Observe(100);            // 100 µs: 2 x 50 ms / 100 µs, cut to the ceiling
  CHECK(d.depth() == 64);
  CHECK(d.OnFreed(1) == 1 + 60);  // its own credit and the deeper queue's
  // Tasks of 10 ms: 2 x 50 / 10 = 10 once the mean has moved there.
  for (int i = 0; i < 60; ++i) d.Observe(10 * kMicrosPerMilli);
  CHECK(d.depth() == 10);
  // Shallower by 54: the next 54 executions that finish return no credit.
  uint32_t returned = 0;
  for (int i = 0; i < 54; ++i) returned += d.OnFreed(1);
  CHECK(returned == 0);
  CHECK(d.OnFreed(1) == 1);
  // Long tasks: back to the floor.
  for (int i = 0; i < 60; ++i) d.Observe(kMicrosPerSecond);
  CHECK(d.depth() == 4);
  // A clock step backwards counts as an instant task, not a negative one.
  d.Observe(-5 * kMicrosPerSecond);
  CHECK(d.depth() >= 4);
  CHECK(d.depth() <= 64);
}

TEST_CASE("a stopped depth grants nothing more", "[worker][queue]") {
  QueueDepth d = QueueDepth::Adaptive(2, 4, 32);
  CHECK(d.OnHello(0) == 6);
  d.Stop();
  CHECK(d.advertised() == 0);
  CHECK(d.OnFreed(3) == 0);
  CHECK(d.OnHello(2) == 0);
  CHECK(d.OnFreed(1) == 0);
}

// The coordinator's side, modelled: credits granted minus executions
// placed. Held plus credit never exceeds slots + the advertised prefetch,
// and settles at slots + depth once every debt is paid.
TEST_CASE("credit and held executions stay within the advertised capacity", "[worker][queue]") {
  const uint32_t slots = 3;
  QueueDepth d = QueueDepth::Adaptive(slots, PrefetchFloor(slots), PrefetchCeiling(slots));
  std::mt19937 rng(7);
  uint32_t credit = d.OnHello(0), held = 0;
  for (int phase = 0; phase < 6; ++phase) {
    // Even phases: tasks of ~0.2 ms; odd ones: ~300 ms.
    const Micros base = phase % 2 == 0 ? 200 : 300 * kMicrosPerMilli;
    for (int step = 0; step < 2000; ++step) {
      if (credit > 0 && (held == 0 || rng() % 2 == 0)) {  // the coordinator places one
        --credit;
        ++held;
      } else if (held > 0) {  // one finishes
        --held;
        d.Observe(base + static_cast<Micros>(rng() % 100));
        credit += d.OnFreed(1);
      }
      REQUIRE(credit + held <= slots + d.advertised());
    }
    // The coordinator spends its credit and everything finishes, until a
    // shallower depth's debt is paid: then its credit is the new capacity.
    for (int round = 0; round < 50; ++round) {
      held += credit;
      credit = 0;
      while (held > 0) {
        --held;
        d.Observe(base);
        credit += d.OnFreed(1);
      }
    }
    CHECK(credit == slots + d.depth());
    CHECK(d.depth() == (phase % 2 == 0 ? PrefetchCeiling(slots) : PrefetchFloor(slots)));
  }
}
