#include "transport/protocol_mismatch.h"

#include "transport/codec.h"
#include "transport/messages.h"

namespace apollo11::transport {

std::string ProtocolMismatchReason(uint32_t worker_version) {
  const std::string ours = std::to_string(kProtocolVersion);
  const std::string theirs = std::to_string(worker_version);
  std::string out(kProtocolMismatchPrefix);
  out += "this coordinator speaks worker protocol " + ours + ", the worker " + theirs;
  out += worker_version < kProtocolVersion
             ? ": start the worker on the coordinator's release (`apollo11-node --version` "
               "names the protocol)"
             : ": the worker waits, retrying, until a coordinator of protocol " + theirs + " leads";
  out +=
      ". A protocol bump upgrades the workers first (each drained with SIGTERM, then started "
      "on the new release), then the standbys, then the leader (docs/ha.md, \"Upgrading "
      "across a protocol bump\")";
  return out;
}

bool IsProtocolMismatch(std::string_view reason) {
  return reason.substr(0, kProtocolMismatchPrefix.size()) == kProtocolMismatchPrefix;
}

std::string EncodeRefusedAs(uint32_t version, const std::string& reason) {
  std::string frame;
  if (version < kRefusedSince) return frame;
  EncodeAs(version, ToWire(MsgType::kRefused), Refused{reason}, &frame);
  return frame;
}

}  // namespace apollo11::transport
