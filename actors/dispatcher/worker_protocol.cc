#include "actors/dispatcher/worker_protocol.h"

namespace apollo11::actors {
namespace {

using transport::MsgType;
using A = WorkerAction;

struct Row {
  MsgType type;
  WorkerAction in_state[kWorkerStates];  // indexed by WorkerState
};

// The table. A peer that has not said HELLO is asked to, and nothing it
// sends is believed: not even a RESULT, which it resends after its HELLO
// (a forged one would otherwise complete another worker's execution).
// Messages the dispatcher sends but never receives (DISPATCH, ACK,
// PROBE, CANCEL, LOG_REQUEST) and unknown types get "anything else".
//
// clang-format off
//   message               kUnregistered      kRegistered
constexpr Row kTable[] = {
    {MsgType::kHello,      {A::kRegister,     A::kRegister}},
    {MsgType::kCredit,     {A::kAskHello,     A::kCredit}},
    {MsgType::kStarted,    {A::kAskHello,     A::kStarted}},
    {MsgType::kResult,     {A::kAskHello,     A::kResult}},
    {MsgType::kHeartbeat,  {A::kAskHello,     A::kHeartbeat}},
    {MsgType::kProbeReply, {A::kAskHello,     A::kProbeReply}},
    {MsgType::kLogReply,   {A::kAskHello,     A::kLogReply}},
    {MsgType::kBye,        {A::kAskHello,     A::kBye}},
    {MsgType::kWatch,      {A::kWatch,        A::kWatch}},
};
//   anything else         kAskHello          kRefuse
// clang-format on
constexpr WorkerAction kOtherwise[kWorkerStates] = {A::kAskHello, A::kRefuse};

}  // namespace

WorkerAction DecideWorkerAction(WorkerState state, uint16_t type) {
  const int s = static_cast<int>(state);
  for (const Row& row : kTable) {
    if (transport::ToWire(row.type) == type) return row.in_state[s];
  }
  return kOtherwise[s];
}

const char* ToString(WorkerAction action) {
  switch (action) {
    case A::kRegister:
      return "register";
    case A::kCredit:
      return "credit";
    case A::kStarted:
      return "started";
    case A::kResult:
      return "result";
    case A::kHeartbeat:
      return "heartbeat";
    case A::kProbeReply:
      return "probe_reply";
    case A::kLogReply:
      return "log_reply";
    case A::kBye:
      return "bye";
    case A::kWatch:
      return "watch";
    case A::kAskHello:
      return "ask_hello";
    case A::kRefuse:
      return "refuse";
  }
  return "?";
}

const char* ToString(WorkerState state) {
  return state == WorkerState::kRegistered ? "registered" : "unregistered";
}

}  // namespace apollo11::actors
