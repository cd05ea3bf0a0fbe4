#pragma once
// Who may do what: the roles of a principal and the one table of actions
// each role allows, for both transports. A principal is a CURVE key on the
// ZeroMQ ports (its line in the authorized-keys file, security.h) or an API
// token on the HTTP port (observability/http_access.h); both carry the same
// roles, and the coordinator's client gate and the HTTP server both check
// an action with Allows.
//
//   viewer    reads everything that is not secret: status, runs, history,
//             workers, logs, pipelines (env names, not values), metrics;
//   operator  a viewer that may also trigger registered pipelines, rerun,
//             cancel, pause, unpause and backfill them, answer slow tasks,
//             and read a pipeline's whole snapshot (env values included);
//   admin     an operator that may also bring in code: run a pipeline file
//             (`submit`), register and remove pipelines; resign the
//             leadership; and read the audit trail;
//   worker    connects as a worker (ZeroMQ only) and nothing else.
//
// The names before this model are still read: `reader` is a viewer and
// `client` an operator (which, unlike a client before, may not submit a
// pipeline file or register one: give admin for that). A key line without a
// role (the format before roles) keeps its old meaning: worker and admin.
// Without CURVE the ZeroMQ ports check nothing.

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace apollo11::transport {

// A set of roles, one bit each (a key listed on several lines has several).
using KeyRoles = uint8_t;
inline constexpr KeyRoles kRoleWorker = 1;
inline constexpr KeyRoles kRoleViewer = 2;
inline constexpr KeyRoles kRoleOperator = 4;
inline constexpr KeyRoles kRoleAdmin = 8;
// What a key listed without a role may do (the meaning before roles).
inline constexpr KeyRoles kRolesUnstated = kRoleWorker | kRoleAdmin;

// The ZAP metadata property that carries a connection's roles.
inline constexpr char kRolesProperty[] = "X-Apollo11-Roles";

// The role named `name` ("worker", "viewer", "operator", "admin", or the
// older "reader" and "client"); nullopt for anything else.
std::optional<KeyRoles> ParseRole(std::string_view name);
// For an older name, the sentence a loader logs once ("role 'client' is read
// as 'operator', which ..."); "" for a current name.
std::string_view RoleNameNote(std::string_view name);
// "worker,admin": the roles in that order, comma-separated; "" for none.
std::string FormatRoles(KeyRoles roles);
// The roles of a FormatRoles text; unknown names are ignored.
KeyRoles ParseRoles(std::string_view text);

// Everything a principal may be allowed to do.
enum class Action : uint8_t {
  kRead,          // queries: status, runs, history, workers, logs, pipelines
  kReadSnapshot,  // a pipeline's whole snapshot, env values included
  kTrigger,       // start a run of a registered pipeline
  kRerun,
  kCancel,
  kConfirm,  // answer a slow task (kill or keep)
  kPause,
  kUnpause,
  kBackfill,
  kSubmit,    // run a pipeline file (code nobody registered)
  kRegister,  // a new version of a pipeline (or report one that failed validation)
  kRemove,
  kResign,     // hand the leadership over
  kReadAudit,  // the audit trail: who did what, from where
  kWork,       // the worker protocol
};

struct ActionRule {
  Action action;
  std::string_view name;  // "cancel": as audit records and refusals say it
  KeyRoles roles;         // the roles that may
};
// The table, one row per Action in declaration order.
std::span<const ActionRule> ActionRules();
const ActionRule& RuleOf(Action a);
inline bool Allows(KeyRoles roles, Action a) { return (roles & RuleOf(a).roles) != 0; }
// "operator or admin": the roles that may do `a`, for refusals.
std::string RolesThatMay(Action a);

// Who sent a message, as the transport knows it: empty `key` (and no roles)
// when the connection is not authenticated (no CURVE, inproc).
struct PeerAuth {
  std::string key;  // the client's Z85 public key (ZAP User-Id)
  KeyRoles roles = 0;
  bool authenticated() const { return !key.empty(); }
};

}  // namespace apollo11::transport
