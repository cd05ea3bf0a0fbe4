#include "engine/random_source.h"

#include <catch2/catch.hpp>
#include <vector>

#include "engine/retry.h"

namespace apollo11::engine {
namespace {

std::vector<double> Draw(RandomSource& r, int n) {
  std::vector<double> out;
  for (int i = 0; i < n; ++i) out.push_back(r.Uniform01());
  return out;
}

TEST_CASE("a seeded source replays the same samples, each at least 0 and below 1", "[random]") {
  auto a = NewSeededRandom(42);
  auto b = NewSeededRandom(42);
  auto c = NewSeededRandom(43);
  const std::vector<double> first = Draw(*a, 1000);
  CHECK(first == Draw(*b, 1000));
  CHECK(first != Draw(*c, 1000));
  for (double u : first) {
    CHECK(u >= 0.0);
    CHECK(u < 1.0);
  }
}

TEST_CASE("seeded jitter gives the same retry delays run after run", "[random][retry]") {
  dsl::RetryPolicy policy;
  policy.max_retries = 5;
  policy.delay = Millis(1000);
  policy.jitter = 0.5;
  auto delays = [&](uint64_t seed) {
    auto r = NewSeededRandom(seed);
    std::vector<int64_t> out;
    for (int n = 1; n <= 5; ++n) out.push_back(RetryDelay(policy, n, r->Uniform01()).count());
    return out;
  };
  CHECK(delays(7) == delays(7));
  for (int64_t d : delays(7)) {
    CHECK(d >= 500);
    CHECK(d <= 1500);
  }
}

TEST_CASE("entropy sources differ from one another", "[random]") {
  auto a = NewEntropyRandom();
  auto b = NewEntropyRandom();
  CHECK(Draw(*a, 4) != Draw(*b, 4));
}

}  // namespace
}  // namespace apollo11::engine
