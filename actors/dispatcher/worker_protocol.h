#pragma once
// The dispatcher's side of the worker protocol as a state/event table (the
// zproto/Malamute idea): for each state a peer can be in and each message it
// can send, the one action the dispatcher takes. DispatcherCore decodes a
// frame, looks the action up here and runs that action's handler; which
// message is accepted in which state is read here and nowhere else.
//
// The protocol has two states per peer identity. There is no separate
// joining or leaving state: HELLO registers at once (credit follows with
// CREDIT), a draining worker is a registered one that says HELLO with 0 slots,
// and BYE forgets it at once.

#include <cstdint>

#include "transport/messages.h"

namespace apollo11::actors {

enum class WorkerState : uint8_t {
  // No HELLO heard from this identity, or it was forgotten since (BYE, lost,
  // a send to it failed, the coordinator restarted).
  kUnregistered = 0,
  // In the worker table: said HELLO, may be given credit and work.
  kRegistered = 1,
};
inline constexpr int kWorkerStates = 2;

// What the dispatcher does with one frame.
enum class WorkerAction : uint8_t {
  kRegister,    // HELLO: add to the worker table (a second HELLO re-registers)
  kCredit,      // add credit, capped at the free slots
  kStarted,     // forward STARTED to the scheduler
  kResult,      // from the execution's holder: finish it here, forward RESULT
  kHeartbeat,   // liveness only
  kProbeReply,  // hand back what the worker does not hold
  kLogReply,    // forward to the waiting log fetch
  kBye,         // forget the worker, hand its executions back
  kWatch,       // a worker following another coordinator: remember its route
  kAskHello,    // refused: answer a heartbeat marked unregistered
  kRefuse,      // refused: dropped and counted
};

// The action for message `type` (a raw wire value: unknown ones included)
// from a peer in `state`. Total: every (state, type) has one.
WorkerAction DecideWorkerAction(WorkerState state, uint16_t type);

// True when `action` refuses the message (kAskHello, kRefuse).
constexpr bool IsRefusal(WorkerAction action) {
  return action == WorkerAction::kAskHello || action == WorkerAction::kRefuse;
}

// "register", "credit", ... for log lines and tests. Never null.
const char* ToString(WorkerAction action);
const char* ToString(WorkerState state);

}  // namespace apollo11::actors
