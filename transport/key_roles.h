#pragma once
// What a CURVE key may do, from its line in the authorized-keys file
// (security.h). The ZAP handler stamps a connection's roles on it (the ZAP
// metadata property kRolesProperty, read with zmq_msg_gets on every message),
// and the coordinator's actors check them per message:
//   worker  may connect as a worker (HELLO, RESULT, ...) and nothing else;
//   reader  may ask read-only queries (status, runs, logs, workers, ...);
//   client  a reader that may also submit (trigger) runs;
//   admin   a client that may also cancel runs and confirm slow tasks
//           (`confirm --kill` / `--keep`).
// A key line without a role (the file format before roles) keeps its old
// meaning: every role (worker and admin). Without CURVE nothing is checked.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace apollo11::transport {

// A set of roles, one bit each.
using KeyRoles = uint8_t;
inline constexpr KeyRoles kRoleWorker = 1;
inline constexpr KeyRoles kRoleReader = 2;
inline constexpr KeyRoles kRoleClient = 4;
inline constexpr KeyRoles kRoleAdmin = 8;
// What a key listed without a role may do (the meaning before roles).
inline constexpr KeyRoles kRolesUnstated = kRoleWorker | kRoleAdmin;

// The ZAP metadata property that carries a connection's roles.
inline constexpr char kRolesProperty[] = "X-Apollo11-Roles";

// The role named `name` ("worker", "reader", "client", "admin"); nullopt for
// anything else.
std::optional<KeyRoles> ParseRole(std::string_view name);
// "worker,admin": the roles in that order, comma-separated; "" for none.
std::string FormatRoles(KeyRoles roles);
// The roles of a FormatRoles text; unknown names are ignored.
KeyRoles ParseRoles(std::string_view text);

// What a client connection's roles allow.
inline bool MayQuery(KeyRoles r) { return (r & (kRoleReader | kRoleClient | kRoleAdmin)) != 0; }
inline bool MaySubmit(KeyRoles r) { return (r & (kRoleClient | kRoleAdmin)) != 0; }
inline bool MayChangeRuns(KeyRoles r) { return (r & kRoleAdmin) != 0; }
inline bool MayWork(KeyRoles r) { return (r & kRoleWorker) != 0; }

// Who sent a message, as the transport knows it: empty `key` (and no roles)
// when the connection is not authenticated (no CURVE, inproc).
struct PeerAuth {
  std::string key;  // the client's Z85 public key (ZAP User-Id)
  KeyRoles roles = 0;
  bool authenticated() const { return !key.empty(); }
};

}  // namespace apollo11::transport
