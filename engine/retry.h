#pragma once
// Retry rules: whether a failed attempt is retried and how long it waits.
// Pure functions; randomness is passed in (a RandomSource sample, see
// engine/random_source.h) so callers and tests control it.

#include "common/duration.h"
#include "dsl/pipeline.h"
#include "engine/task_state.h"

namespace apollo11::engine {

// The delay before retry number `retry_number` (1 = first retry). Fixed
// backoff waits `delay`; exponential waits delay * 2^(n-1) without overflow.
// Both are capped at max_delay (0 = no cap), then jittered by
// d * (1 + jitter * (2*u01 - 1)) where u01 is a uniform sample in [0, 1); the
// result is never negative and never above the cap.
Millis RetryDelay(const dsl::RetryPolicy& policy, int retry_number, double u01);

// Whether an attempt that ended with `outcome` gets another attempt. False
// without a policy (no global default), for successes, once `retries_used`
// reaches max_retries, and when the executor says the error is not retryable
// (an HTTP 4xx). A non-empty on_exit_codes limits failures to those codes; a
// timeout retries regardless of on_exit_codes.
bool ShouldRetry(const dsl::RetryPolicy* policy, int retries_used, AttemptOutcome outcome,
                 int exit_code, bool retryable);

// "250ms", "1.2s", "3m20s": a delay short enough to read in a reason.
std::string FormatDelay(Millis d);

}  // namespace apollo11::engine
