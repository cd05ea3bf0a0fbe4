#include "engine/task_state.h"

#include <array>

namespace apollo11 {
namespace {

using S = TaskState;
constexpr int N = kTaskStateCount;

// kAllowed[from][to]. Why each edge exists:
//  PENDING  -> READY (dependencies met), SKIPPED (branch not taken),
//              CANCELED (upstream failed unhandled, or run canceled)
//  READY    -> RUNNING (dispatched, or a foreach task expanded), CANCELED,
//              FAILED (cannot be placed or refused by the engine, e.g. an
//              unsupported task type, or foreach items over the cap),
//              SKIPPED (a foreach task whose list is empty)
//  RUNNING  -> SUCCESS, FAILED, TIMEOUT (outcome), RETRYING (attempt failed,
//              retries left), READY (requeued after its worker was lost),
//              CANCELED (run canceled, task killed)
//  RETRYING -> READY (delay elapsed), CANCELED
constexpr std::array<std::array<bool, N>, N> MakeTable() {
  std::array<std::array<bool, N>, N> t{};
  auto allow = [&t](S from, S to) { t[static_cast<int>(from)][static_cast<int>(to)] = true; };
  allow(S::kPending, S::kReady);
  allow(S::kPending, S::kSkipped);
  allow(S::kPending, S::kCanceled);
  allow(S::kReady, S::kRunning);
  allow(S::kReady, S::kCanceled);
  allow(S::kReady, S::kFailed);
  allow(S::kReady, S::kSkipped);
  allow(S::kRunning, S::kSuccess);
  allow(S::kRunning, S::kFailed);
  allow(S::kRunning, S::kTimeout);
  allow(S::kRunning, S::kRetrying);
  allow(S::kRunning, S::kReady);
  allow(S::kRunning, S::kCanceled);
  allow(S::kRetrying, S::kReady);
  allow(S::kRetrying, S::kCanceled);
  return t;
}
constexpr auto kAllowed = MakeTable();

constexpr const char* kTaskNames[N] = {"PENDING",  "READY",   "RUNNING", "SUCCESS", "FAILED",
                                       "RETRYING", "TIMEOUT", "SKIPPED", "CANCELED"};
constexpr const char* kRunNames[5] = {"PENDING", "RUNNING", "SUCCESS", "FAILED", "CANCELED"};
constexpr const char* kOutcomeNames[4] = {"success", "failed", "timeout", "already_done"};

}  // namespace

const char* ToString(TaskState s) {
  auto i = static_cast<int>(s);
  return i < N ? kTaskNames[i] : "INVALID";
}

const char* ToString(RunStatus s) {
  auto i = static_cast<int>(s);
  return i < 5 ? kRunNames[i] : "INVALID";
}

const char* ToString(AttemptOutcome o) {
  auto i = static_cast<int>(o);
  return i < 4 ? kOutcomeNames[i] : "invalid";
}

std::optional<TaskState> ParseTaskState(std::string_view text) {
  for (int i = 0; i < N; ++i) {
    if (text == kTaskNames[i]) return static_cast<TaskState>(i);
  }
  return std::nullopt;
}

std::optional<RunStatus> ParseRunStatus(std::string_view text) {
  for (int i = 0; i < 5; ++i) {
    if (text == kRunNames[i]) return static_cast<RunStatus>(i);
  }
  return std::nullopt;
}

bool IsFinal(TaskState s) {
  return s == S::kSuccess || s == S::kFailed || s == S::kTimeout || s == S::kSkipped ||
         s == S::kCanceled;
}

bool IsFinal(RunStatus s) {
  return s == RunStatus::kSuccess || s == RunStatus::kFailed || s == RunStatus::kCanceled;
}

bool IsAllowedTransition(TaskState from, TaskState to) {
  auto f = static_cast<int>(from), t = static_cast<int>(to);
  if (f >= N || t >= N) return false;
  return kAllowed[f][t];
}

bool IsReuseTransition(TaskState from, TaskState to) {
  return from == S::kPending && to == S::kSuccess;
}

}  // namespace apollo11
