#pragma once
// Task and run states, and the one table of allowed task transitions. Every
// state change in the system goes through IsAllowedTransition; an edge that is
// not in the table is refused, never applied.

#include <cstdint>
#include <optional>
#include <string_view>

namespace apollo11 {

enum class TaskState : uint8_t {
  kPending = 0,  // waiting for dependencies
  kReady,        // runnable, waiting for a worker slot
  kRunning,      // handed to a worker
  kSuccess,      // final
  kFailed,       // final
  kRetrying,     // an attempt failed; the next one waits for its delay
  kTimeout,      // final: the last attempt exceeded its timeout
  kSkipped,      // final: a branch not taken
  kCanceled,     // final: can no longer run (upstream failed, run canceled)
};
inline constexpr int kTaskStateCount = 9;

enum class RunStatus : uint8_t { kPending = 0, kRunning, kSuccess, kFailed, kCanceled };

// How one execution attempt ended, as a worker reports it. kAlreadyDone means
// the task's precheck said its work was already done (exit 3): a success.
enum class AttemptOutcome : uint8_t { kSuccess = 0, kFailed, kTimeout, kAlreadyDone };

const char* ToString(TaskState s);
const char* ToString(RunStatus s);
const char* ToString(AttemptOutcome o);  // "success", "failed", "timeout", "already_done"
std::optional<TaskState> ParseTaskState(std::string_view text);
std::optional<RunStatus> ParseRunStatus(std::string_view text);

// True for states a task never leaves.
bool IsFinal(TaskState s);
bool IsFinal(RunStatus s);

// The transition table. PENDING is the only start state.
bool IsAllowedTransition(TaskState from, TaskState to);
// The one edge outside the table: a rerun takes a task's SUCCESS from the run
// it reruns without running it (PENDING -> SUCCESS, reason "reused from
// RUN_ID"). Only DagRun::Reuse journals it.
bool IsReuseTransition(TaskState from, TaskState to);

}  // namespace apollo11
