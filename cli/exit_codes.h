#pragma once
// The process exit codes of `apollo11` and `apollo11-node`, as the README
// documents them. Every command returns one of these, never a literal.

namespace apollo11::cli {

// Success; for `run` and `status --wait`: the run succeeded.
inline constexpr int kExitOk = 0;
// The run failed or was canceled.
inline constexpr int kExitRunFailed = 1;
// What the user asked for is wrong, absent or contradicts the state: a bad
// flag, file or id, an unknown run, a paused pipeline, a run that already
// ended, an idempotency key reused with other params.
inline constexpr int kExitInvalidInput = 2;
// An internal error or an unusable environment (state dir locked, journal
// unreadable, an actor that did not start or died).
inline constexpr int kExitInternal = 3;
// Refused: the caller's role may not do it (its CURVE key's, API token's
// or provider group's), or its rate limit was reached.
inline constexpr int kExitDenied = 5;
// `apollo11 logs`: what the log file holds was printed, but it is incomplete
// (a write failed on the worker, e.g. disk full); stderr says why.
inline constexpr int kExitLogsIncomplete = 4;
// `apollo11 run` interrupted twice: it exits at once without waiting (128+SIGINT).
inline constexpr int kExitAbandoned = 130;

}  // namespace apollo11::cli
