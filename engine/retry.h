#pragma once
// Retry rules: whether a failed attempt is retried and how long it waits.
// Pure functions; randomness is passed in (a RandomSource sample, see
// engine/random_source.h) so callers and tests control it.

#include <string_view>

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

// A pipeline's domain: its name up to the first '.' ("order" for
// "order.sync"); the whole name when it has no '.'.
std::string_view RetryDomain(std::string_view pipeline_name);

// The retry-storm stagger (brief 5.3): a deterministic offset added to a
// retry's delay so retries of one domain failing together do not come due
// together. offset = floor(base * fraction * h), where base is the retry's
// delay before jitter, and h in [0, 1) is FNV-1a 64 of "DOMAIN/KEY" passed
// through the SplitMix64 finalizer, divided by 2^64 (KEY: the run id and
// task id, "RUN_ID.TASK_ID"). 0 when fraction <= 0.
Millis StaggerOffset(Millis base, double fraction, std::string_view domain, std::string_view key);

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
