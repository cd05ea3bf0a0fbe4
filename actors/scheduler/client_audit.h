#pragma once
// Who asked for a change, as the audit trail and the run's history name them
// (storage/audit_records.h). A request comes from a ZeroMQ peer (a CURVE key,
// or nobody known without CURVE) and may name another principal it is sent
// for (OnBehalf: a node's HTTP API sends for the API token it checked);
// CallerOf decides whom the coordinator records, and whether it believes
// the name.

#include <cstddef>
#include <string>
#include <string_view>

#include "actors/client_protocol.h"
#include "common/status.h"
#include "transport/key_roles.h"

namespace apollo11::actors {

// The most bytes CallerOf keeps of a named caller's principal, role and
// source.
inline constexpr size_t kMaxCallerField = 256;

struct Caller {
  std::string principal;   // "alice", "key:Ab3dE9fG1h2J", "anonymous"
  std::string role;        // "operator", "worker,admin"; "" when unknown
  std::string transport;   // "http" or "zmq"
  std::string source;      // where the request came from, as far as known
  std::string request_id;  // the caller's, or one made for it
  bool delegated = false;  // named in an OnBehalf (believed)

  // The actor the run's history records ("http:alice", "key:Ab3dE9fG1h2J");
  // `fallback` for an anonymous sender (no CURVE), as before the audit.
  std::string Actor(std::string_view fallback) const;
};

// "key:" and the first 12 characters of a Z85 public key: enough to tell
// the keys of one authorized-keys file apart, short enough for a log line.
std::string KeyPrincipal(const std::string& key);

// A request id as given (at most 64 of [A-Za-z0-9._-]); "" for anything else.
std::string CleanRequestId(std::string_view id);

// The caller of a request from `peer` naming `on_behalf`. `curve`: the
// coordinator checks keys. `made_id` is the request id used when the request
// brings none. Without CURVE everything is believed (nothing is
// authenticated there: the principal is what the client says, and an
// anonymous sender is "anonymous"); under CURVE a key may name another
// principal only when it holds the admin role (a node's own key does); any
// other key that names one is PermissionDenied.
Result<Caller> CallerOf(const transport::PeerAuth& peer, bool curve, const OnBehalf& on_behalf,
                        std::string made_id);

}  // namespace apollo11::actors
