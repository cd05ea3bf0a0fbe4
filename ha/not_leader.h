#pragma once
// The one reply a standby gives to every mutating client request and to every
// worker HELLO, so that workers and the CLI can follow the leader:
//
//   not the leader; the leader is tcp://10.0.0.7:7012
//   not the leader; the leader is unknown
//
// A client request gets it as the reply's error with code
// StatusCode::kNotLeader, naming the leader's CLIENT endpoint; a worker's
// HELLO gets transport::Refused whose reason is this text, naming the
// leader's WORKER endpoint ("unknown" while no leader is elected: retry the
// list). HTTP answers it with 421 Misdirected Request and the same text.

#include <optional>
#include <string>
#include <string_view>

namespace apollo11::ha {

inline constexpr std::string_view kNotLeaderPrefix = "not the leader; the leader is ";
inline constexpr std::string_view kLeaderUnknown = "unknown";

// The reply naming `endpoint`; an empty endpoint gives "... is unknown".
std::string NotLeaderReply(std::string_view endpoint);

// For a reply or refusal text: nullopt when it is not a "not the leader"
// reply; the leader's endpoint when it is; "" when the leader is unknown.
// Leading/trailing whitespace around the endpoint is dropped; anything that
// is not one printable token (spaces inside, control bytes) counts as unknown.
std::optional<std::string> ParseNotLeader(std::string_view text);

}  // namespace apollo11::ha
