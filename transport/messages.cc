#include "transport/messages.h"

namespace apollo11::transport {

const char* MsgTypeName(uint16_t type) {
  switch (static_cast<MsgType>(type)) {
    case MsgType::kHello:
      return "HELLO";
    case MsgType::kCredit:
      return "CREDIT";
    case MsgType::kDispatch:
      return "DISPATCH";
    case MsgType::kStarted:
      return "STARTED";
    case MsgType::kResult:
      return "RESULT";
    case MsgType::kAck:
      return "ACK";
    case MsgType::kHeartbeat:
      return "HEARTBEAT";
    case MsgType::kProbe:
      return "PROBE";
    case MsgType::kProbeReply:
      return "PROBE_REPLY";
    case MsgType::kCancel:
      return "CANCEL";
    case MsgType::kBye:
      return "BYE";
    case MsgType::kLogRequest:
      return "LOG_REQUEST";
    case MsgType::kLogReply:
      return "LOG_REPLY";
    case MsgType::kRefused:
      return "REFUSED";
    case MsgType::kWatch:
      return "WATCH";
    case MsgType::kActorReady:
      return "ACTOR_READY";
    case MsgType::kActorDone:
      return "ACTOR_DONE";
    case MsgType::kTerm:
      return "TERM";
    case MsgType::kFirstInternal:
      break;
  }
  return "UNKNOWN";
}

}  // namespace apollo11::transport
