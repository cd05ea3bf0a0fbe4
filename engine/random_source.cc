#include "engine/random_source.h"

#include <random>

namespace apollo11::engine {
namespace {

class Mt64Random final : public RandomSource {
 public:
  explicit Mt64Random(uint64_t seed) : engine_(seed) {}
  double Uniform01() override {
    // The top 53 bits as a fraction: exactly uniform on the doubles of [0, 1),
    // and the same on every standard library (uniform_real_distribution is not).
    return static_cast<double>(engine_() >> 11) * 0x1.0p-53;
  }

 private:
  std::mt19937_64 engine_;
};

}  // namespace

std::unique_ptr<RandomSource> NewEntropyRandom() {
  std::random_device device;
  const uint64_t seed = (static_cast<uint64_t>(device()) << 32) ^ device();
  return std::make_unique<Mt64Random>(seed);
}

std::unique_ptr<RandomSource> NewSeededRandom(uint64_t seed) {
  return std::make_unique<Mt64Random>(seed);
}

}  // namespace apollo11::engine
