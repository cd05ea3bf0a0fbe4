#include "engine/retry.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>

namespace apollo11::engine {
namespace {

// Far beyond any sensible delay (about 31 years) and far below int64 overflow.
constexpr double kMaxDelayMillis = 1e12;

}  // namespace

Millis RetryDelay(const dsl::RetryPolicy& policy, int retry_number, double u01) {
  double d = static_cast<double>(std::max<int64_t>(policy.delay.count(), 0));
  if (policy.backoff == dsl::Backoff::kExponential && retry_number > 1) {
    // 2^(n-1) in floating point: saturates instead of overflowing.
    d = std::ldexp(d, std::min(retry_number - 1, 1000));
  }
  const double cap = policy.max_delay.count() > 0
                         ? std::min(static_cast<double>(policy.max_delay.count()), kMaxDelayMillis)
                         : kMaxDelayMillis;
  d = std::min(d, cap);
  if (policy.jitter > 0) {
    double u = std::clamp(std::isfinite(u01) ? u01 : 0.5, 0.0, 1.0);
    d *= 1.0 + policy.jitter * (2.0 * u - 1.0);
  }
  d = std::clamp(d, 0.0, cap);
  return Millis(static_cast<int64_t>(std::llround(d)));
}

std::string_view RetryDomain(std::string_view pipeline_name) {
  return pipeline_name.substr(0, pipeline_name.find('.'));
}

Millis StaggerOffset(Millis base, double fraction, std::string_view domain, std::string_view key) {
  if (!(fraction > 0) || base.count() <= 0) return Millis(0);
  uint64_t h = 14695981039346656037ull;
  auto mix = [&h](std::string_view s) {
    for (unsigned char c : s) {
      h ^= c;
      h *= 1099511628211ull;
    }
  };
  mix(domain);
  mix("/");
  mix(key);
  // FNV-1a's last bytes barely reach its high bits: finish with SplitMix64's
  // mixer so names differing in one digit land far apart.
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  const double u = std::ldexp(static_cast<double>(h >> 11), -53);  // [0, 1)
  const double offset = static_cast<double>(base.count()) * std::min(fraction, 1.0) * u;
  return Millis(static_cast<int64_t>(std::floor(std::min(offset, kMaxDelayMillis))));
}

bool ShouldRetry(const dsl::RetryPolicy* policy, int retries_used, AttemptOutcome outcome,
                 int exit_code, bool retryable) {
  if (policy == nullptr) return false;
  if (outcome != AttemptOutcome::kFailed && outcome != AttemptOutcome::kTimeout) return false;
  if (retries_used >= policy->max_retries) return false;
  if (!retryable) return false;
  if (outcome == AttemptOutcome::kTimeout || policy->on_exit_codes.empty()) return true;
  return std::find(policy->on_exit_codes.begin(), policy->on_exit_codes.end(), exit_code) !=
         policy->on_exit_codes.end();
}

std::string FormatDelay(Millis d) {
  int64_t ms = d.count();
  if (ms >= 1000 && ms < 60'000 && ms % 1000 != 0) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1fs", static_cast<double>(ms) / 1000.0);
    return buf;
  }
  return FormatDuration(d);
}

}  // namespace apollo11::engine
