#include "engine/task_state.h"

#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <utility>

using apollo11::AttemptOutcome;
using apollo11::IsAllowedTransition;
using apollo11::IsFinal;
using apollo11::kTaskStateCount;
using apollo11::TaskState;
using S = apollo11::TaskState;

TEST_CASE("the transition table allows exactly the documented edges", "[task_state]") {
  const std::set<std::pair<S, S>> allowed = {
      {S::kPending, S::kReady},    {S::kPending, S::kSkipped},  {S::kPending, S::kCanceled},
      {S::kReady, S::kSkipped},    {S::kReady, S::kRunning},    {S::kReady, S::kCanceled},
      {S::kReady, S::kFailed},     {S::kRunning, S::kSuccess},  {S::kRunning, S::kFailed},
      {S::kRunning, S::kTimeout},  {S::kRunning, S::kRetrying}, {S::kRunning, S::kReady},
      {S::kRunning, S::kCanceled}, {S::kRetrying, S::kReady},   {S::kRetrying, S::kCanceled},
  };
  for (int f = 0; f < kTaskStateCount; ++f) {
    for (int t = 0; t < kTaskStateCount; ++t) {
      const S from = static_cast<S>(f), to = static_cast<S>(t);
      INFO(ToString(from) << " -> " << ToString(to));
      CHECK(IsAllowedTransition(from, to) == (allowed.count({from, to}) == 1));
    }
  }
}

TEST_CASE("illegal transitions are refused, including out of final states", "[task_state]") {
  CHECK_FALSE(IsAllowedTransition(S::kPending, S::kRunning));
  CHECK_FALSE(IsAllowedTransition(S::kPending, S::kSuccess));
  CHECK_FALSE(IsAllowedTransition(S::kReady, S::kSuccess));
  CHECK_FALSE(IsAllowedTransition(S::kRetrying, S::kRunning));
  CHECK_FALSE(IsAllowedTransition(S::kRunning, S::kRunning));
  for (S final_state : {S::kSuccess, S::kFailed, S::kTimeout, S::kSkipped, S::kCanceled}) {
    CHECK(IsFinal(final_state));
    for (int t = 0; t < kTaskStateCount; ++t) {
      CHECK_FALSE(IsAllowedTransition(final_state, static_cast<S>(t)));
    }
  }
  CHECK_FALSE(IsAllowedTransition(static_cast<S>(42), S::kReady));
}

TEST_CASE("state names round-trip and outcomes have their names", "[task_state]") {
  for (int i = 0; i < kTaskStateCount; ++i) {
    const S s = static_cast<S>(i);
    CHECK(apollo11::ParseTaskState(ToString(s)) == s);
  }
  CHECK(std::string(ToString(AttemptOutcome::kSuccess)) == "success");
  CHECK(std::string(ToString(AttemptOutcome::kFailed)) == "failed");
  CHECK(std::string(ToString(AttemptOutcome::kTimeout)) == "timeout");
  CHECK(std::string(ToString(AttemptOutcome::kAlreadyDone)) == "already_done");
}
