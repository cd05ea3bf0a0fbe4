#include "engine/retry.h"

#include <catch2/catch.hpp>

using apollo11::AttemptOutcome;
using apollo11::Millis;
using apollo11::dsl::Backoff;
using apollo11::dsl::RetryPolicy;
using apollo11::engine::FormatDelay;
using apollo11::engine::RetryDelay;
using apollo11::engine::ShouldRetry;

namespace {

RetryPolicy Policy(Backoff b, int64_t delay, int64_t max_delay = 0, double jitter = 0) {
  RetryPolicy p;
  p.max_retries = 5;
  p.backoff = b;
  p.delay = Millis(delay);
  p.max_delay = Millis(max_delay);
  p.jitter = jitter;
  return p;
}

const double kSamples[] = {0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.999999};

}  // namespace

TEST_CASE("fixed backoff waits the same delay for every retry", "[retry]") {
  const RetryPolicy p = Policy(Backoff::kFixed, 1500);
  for (int n = 1; n <= 5; ++n) CHECK(RetryDelay(p, n, 0.3) == Millis(1500));
}

TEST_CASE("exponential backoff doubles per retry up to max_delay", "[retry]") {
  const RetryPolicy p = Policy(Backoff::kExponential, 100, 1000);
  CHECK(RetryDelay(p, 1, 0.5) == Millis(100));
  CHECK(RetryDelay(p, 2, 0.5) == Millis(200));
  CHECK(RetryDelay(p, 3, 0.5) == Millis(400));
  CHECK(RetryDelay(p, 4, 0.5) == Millis(800));
  CHECK(RetryDelay(p, 5, 0.5) == Millis(1000));
  CHECK(RetryDelay(p, 500, 0.5) == Millis(1000));
}

TEST_CASE("uncapped exponential backoff saturates instead of overflowing", "[retry]") {
  const RetryPolicy p = Policy(Backoff::kExponential, 1000);
  CHECK(RetryDelay(p, 11, 0.5) == Millis(1024 * 1000));
  const Millis huge = RetryDelay(p, 100000, 0.5);
  CHECK(huge.count() > 0);
  CHECK(RetryDelay(p, 200000, 0.5) == huge);
}

TEST_CASE("jitter keeps delays within +/- the fraction and under the cap", "[retry]") {
  SECTION("fixed") {
    const RetryPolicy p = Policy(Backoff::kFixed, 1000, 0, 0.2);
    for (double u : kSamples) {
      const auto d = RetryDelay(p, 3, u).count();
      CHECK(d >= 800);
      CHECK(d <= 1200);
    }
    CHECK(RetryDelay(p, 1, 0.0) == Millis(800));
    CHECK(RetryDelay(p, 1, 0.5) == Millis(1000));
  }
  SECTION("exponential") {
    const RetryPolicy p = Policy(Backoff::kExponential, 100, 0, 0.2);
    for (int n = 1; n <= 6; ++n) {
      const double base = 100.0 * (1 << (n - 1));
      for (double u : kSamples) {
        const auto d = RetryDelay(p, n, u).count();
        CHECK(d >= static_cast<int64_t>(base * 0.8));
        CHECK(d <= static_cast<int64_t>(base * 1.2) + 1);
      }
    }
  }
  SECTION("capped") {
    const RetryPolicy p = Policy(Backoff::kExponential, 100, 500, 0.5);
    for (double u : kSamples) {
      const auto d = RetryDelay(p, 10, u).count();
      CHECK(d >= 250);
      CHECK(d <= 500);
    }
  }
  SECTION("never negative, even with jitter above 1") {
    const RetryPolicy p = Policy(Backoff::kFixed, 1000, 0, 3.0);
    CHECK(RetryDelay(p, 1, 0.0) == Millis(0));
  }
  SECTION("different samples spread a wave of retries") {
    const RetryPolicy p = Policy(Backoff::kExponential, 1000, 0, 0.2);
    CHECK(RetryDelay(p, 2, 0.1) != RetryDelay(p, 2, 0.9));
  }
}

TEST_CASE("retries happen only where a policy allows them", "[retry]") {
  RetryPolicy p = Policy(Backoff::kFixed, 10);
  p.max_retries = 2;
  CHECK_FALSE(ShouldRetry(nullptr, 0, AttemptOutcome::kFailed, 1, true));
  CHECK(ShouldRetry(&p, 0, AttemptOutcome::kFailed, 1, true));
  CHECK(ShouldRetry(&p, 1, AttemptOutcome::kTimeout, -1, true));
  CHECK_FALSE(ShouldRetry(&p, 2, AttemptOutcome::kFailed, 1, true));
  CHECK_FALSE(ShouldRetry(&p, 0, AttemptOutcome::kFailed, 1, false));
  CHECK_FALSE(ShouldRetry(&p, 0, AttemptOutcome::kSuccess, 0, true));
  CHECK_FALSE(ShouldRetry(&p, 0, AttemptOutcome::kAlreadyDone, 0, true));
}

TEST_CASE("on_exit_codes limits which failures retry, but not timeouts", "[retry]") {
  RetryPolicy p = Policy(Backoff::kFixed, 10);
  p.on_exit_codes = {75, 111};
  CHECK(ShouldRetry(&p, 0, AttemptOutcome::kFailed, 75, true));
  CHECK(ShouldRetry(&p, 0, AttemptOutcome::kFailed, 111, true));
  CHECK_FALSE(ShouldRetry(&p, 0, AttemptOutcome::kFailed, 1, true));
  CHECK(ShouldRetry(&p, 0, AttemptOutcome::kTimeout, 137, true));
}

TEST_CASE("delays read short in reasons", "[retry]") {
  CHECK(FormatDelay(Millis(1200)) == "1.2s");
  CHECK(FormatDelay(Millis(250)) == "250ms");
  CHECK(FormatDelay(Millis(2000)) == "2s");
  CHECK(FormatDelay(Millis(200000)) == "3m20s");
}
