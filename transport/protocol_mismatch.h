#pragma once
// What a coordinator tells a worker that speaks another version of the
// worker protocol (issue 36: such a worker used to log every frame as
// malformed and ask whether a coordinator was running there). The answer is
// a REFUSED naming both versions and the order of an upgrade, written in
// the worker's own version so that it can read it: Refused has kept one
// layout since kRefusedSince. A worker of this build recognises it
// (IsProtocolMismatch), logs it once and keeps retrying; an older one stops
// with the reason, which says to upgrade it.

#include <cstdint>
#include <string>
#include <string_view>

namespace apollo11::transport {

// The first worker-protocol version that has REFUSED in today's layout.
inline constexpr uint32_t kRefusedSince = 2;
inline constexpr std::string_view kProtocolMismatchPrefix = "protocol version mismatch: ";

// The refusal for a worker speaking `worker_version` (not this build's):
// both versions, what the worker should do, and the upgrade order.
std::string ProtocolMismatchReason(uint32_t worker_version);

// True for a REFUSED reason ProtocolMismatchReason wrote (any build's).
bool IsProtocolMismatch(std::string_view reason);

// The REFUSED frame with `reason` in `version`'s envelope; empty for a
// version older than kRefusedSince, which has no REFUSED to send.
std::string EncodeRefusedAs(uint32_t version, const std::string& reason);

}  // namespace apollo11::transport
