#include "actors/scheduler/client_audit.h"

namespace apollo11::actors {

std::string Caller::Actor(std::string_view fallback) const {
  if (delegated) return transport + ":" + principal;
  if (principal == "anonymous") return std::string(fallback);
  return principal;
}

std::string KeyPrincipal(const std::string& key) { return "key:" + key.substr(0, 12); }

std::string CleanRequestId(std::string_view id) {
  if (id.empty() || id.size() > 64) return "";
  for (char c : id) {
    const bool fine = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                      c == '.' || c == '_' || c == '-';
    if (!fine) return "";
  }
  return std::string(id);
}

Result<Caller> CallerOf(const transport::PeerAuth& peer, bool curve, const OnBehalf& on_behalf,
                        std::string made_id) {
  Caller c;
  c.transport = "zmq";
  c.request_id = std::move(made_id);
  if (curve && peer.authenticated()) {
    c.principal = KeyPrincipal(peer.key);
    c.role = transport::FormatRoles(peer.roles);
    c.source = "CURVE key " + peer.key;
  } else {
    c.principal = "anonymous";
    c.source = "unauthenticated ZeroMQ client (no CURVE)";
  }
  if (on_behalf.empty()) return c;
  if (curve && (peer.roles & transport::kRoleAdmin) == 0) {
    return Status::PermissionDenied(
        "key " + peer.key + " (roles: " + (peer.roles ? c.role : std::string("none")) +
        ") may not send a request on behalf of '" + on_behalf.principal.substr(0, 64) +
        "': only an admin key (as a node's own, for its HTTP API) may");
  }
  const std::string via = c.principal == "anonymous" ? "a link without CURVE" : c.principal;
  // Cut: the principal also goes into every transition a request causes
  // (its actor), and a client frame may be 64 MiB.
  c.principal = on_behalf.principal.substr(0, kMaxCallerField);
  c.role = on_behalf.role.substr(0, kMaxCallerField);
  c.transport = on_behalf.transport.empty() ? "http" : on_behalf.transport.substr(0, 16);
  c.source = (on_behalf.source.empty() ? std::string("unknown address")
                                       : on_behalf.source.substr(0, kMaxCallerField)) +
             " via " + via;
  if (std::string id = CleanRequestId(on_behalf.request_id); !id.empty()) c.request_id = id;
  c.delegated = true;
  return c;
}

}  // namespace apollo11::actors
