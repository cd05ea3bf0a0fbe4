#pragma once
// The one reply a standby gives to every mutating client request and to every
// worker HELLO, so that workers and the CLI can follow the leader:
//
//   not the leader; the leader is tcp://10.0.0.7:7012
//   not the leader; the leader is unknown
//   not the leader; the leader is tcp://10.0.0.7:7012; no run r1 in this ...
//
// A client request gets it as the reply's error with code
// StatusCode::kNotLeader, naming the leader's CLIENT endpoint; a worker's
// HELLO gets transport::Refused whose reason is this text, naming the
// leader's WORKER endpoint ("unknown" while no leader is elected: retry the
// list). HTTP answers it with 421 Misdirected Request and the same text. A
// standby also gives it for a read it cannot answer for the leader (a run
// its journal lacks, the workers, which connect to the leader), with a
// detail after "; " saying why.

#include <optional>
#include <string>
#include <string_view>

namespace apollo11::ha {

inline constexpr std::string_view kNotLeaderPrefix = "not the leader; the leader is ";
inline constexpr std::string_view kLeaderUnknown = "unknown";

// The reply naming `endpoint`; an empty endpoint gives "... is unknown".
// A non-empty `detail` follows as "; DETAIL".
std::string NotLeaderReply(std::string_view endpoint, std::string_view detail = {});

// For a reply or refusal text: nullopt when it is not a "not the leader"
// reply; the leader's endpoint when it is; "" when the leader is unknown.
// The endpoint ends at "; " (a detail follows); leading/trailing whitespace
// around it is dropped; anything that is not one printable token (spaces
// inside, control bytes) counts as unknown.
std::optional<std::string> ParseNotLeader(std::string_view text);

}  // namespace apollo11::ha
