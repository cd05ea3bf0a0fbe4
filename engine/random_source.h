#pragma once
// Where the engine's randomness comes from (retry jitter): injected, so tests
// replay the same delays and a node draws real entropy.

#include <cstdint>
#include <memory>

namespace apollo11::engine {

class RandomSource {
 public:
  virtual ~RandomSource() = default;
  // A uniform sample in [0, 1). Not thread-safe: one owner thread draws.
  virtual double Uniform01() = 0;
};

// A generator seeded from std::random_device: what a node uses.
std::unique_ptr<RandomSource> NewEntropyRandom();
// A generator whose sequence depends only on `seed`: what tests use.
std::unique_ptr<RandomSource> NewSeededRandom(uint64_t seed);

}  // namespace apollo11::engine
