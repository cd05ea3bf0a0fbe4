#pragma once
// The ZAP authentication handler (ZeroMQ RFC 27) that makes CURVE servers in
// one zmq context admit only authorized public keys. Without it, a CURVE
// server accepts ANY client key pair (encryption only, DESIGN §11).
//
// Use: start the handler, then configure the server socket with
// ConfigureCurveServer(socket, keys, "workers") and bind. Each connection's
// handshake is checked against the authorized set of the socket's ZAP domain:
// 200 only for mechanism CURVE and a listed client key; everything else
// (unlisted key, unknown domain, NULL or PLAIN mechanism, malformed request)
// is 400 and logged with the client address. An accepted client's Z85 public
// key becomes the connection's ZMQ "User-Id" message property, and its roles
// (key_roles.h) the property kRolesProperty, both read with zmq_msg_gets.
// A refused client gets a ZMTP ERROR and libzmq does NOT reconnect it: it
// stays silent (a socket monitor sees ZMQ_EVENT_HANDSHAKE_FAILED_AUTH).
//
// Only ONE handler may run per context: libzmq sends every ZAP request to
// the single endpoint inproc://zeromq.zap.01, and Start fails with Busy if it
// is taken. libzmq releases an inproc name asynchronously after close, so a
// new handler right after stopping one in the same context may also be Busy.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "common/mutex.h"
#include "common/status.h"
#include "transport/actor.h"
#include "transport/key_roles.h"

namespace apollo11::transport {

// The endpoint libzmq sends ZAP requests to (RFC 27).
inline constexpr char kZapEndpoint[] = "inproc://zeromq.zap.01";

// ZAP domain -> Z85 public keys admitted on sockets of that domain.
using AuthorizedKeys = std::map<std::string, std::set<std::string>>;
// Z85 public key -> its roles; an authorized key not listed here has
// kRolesUnstated.
using KeyRolesByKey = std::map<std::string, KeyRoles>;

// What the handler answers to one request: a pure function of the request
// frames and the authorized keys, so it is tested without sockets.
struct ZapDecision {
  std::string request_id;   // echoed from the request ("" if it had none)
  bool accepted = false;    // status code "200" if true, "400" otherwise
  std::string status_text;  // "OK" or the reason for refusal (logged)
  std::string user_id;      // the client's Z85 public key when accepted
  std::string address;      // the client's address, for the log ("" if absent)
  std::string mechanism;    // as requested ("" if absent)
  KeyRoles roles = 0;       // the accepted key's roles
};

// Decides a ZAP 1.0 request given as its frames: version, request id,
// domain, address, identity, mechanism, credentials... Never throws; any
// malformed request is refused.
ZapDecision DecideZap(const std::vector<std::string>& request, const AuthorizedKeys& keys,
                      const KeyRolesByKey& roles = {});

// The ZAP reply's metadata frame for `roles` (ZMTP property encoding): the
// property kRolesProperty with FormatRoles(roles).
std::string RolesMetadata(KeyRoles roles);

// A running ZAP handler actor. Owned by whoever owns the context (it must be
// stopped, or destroyed, before the context is closed). All methods are
// called from the owner's thread; the counters may be read from any thread.
class ZapHandler {
 public:
  // Binds kZapEndpoint in `ctx` on a new actor thread and starts answering
  // with `keys`, stamping each accepted connection with its key's `roles`.
  // Busy if another ZAP handler holds the endpoint.
  static Result<std::unique_ptr<ZapHandler>> Start(zmq::context_t& ctx, AuthorizedKeys keys,
                                                   KeyRolesByKey roles = {});

  // Stops the actor (see Stop).
  ~ZapHandler();
  ZapHandler(const ZapHandler&) = delete;
  ZapHandler& operator=(const ZapHandler&) = delete;

  // Replaces the authorized keys and their roles (e.g. after the
  // authorized-keys file was edited; a key missing from `roles` has
  // kRolesUnstated); in force for every handshake that starts after it
  // returns. Existing connections keep the roles they were stamped with.
  Status SetAuthorizedKeys(const AuthorizedKeys& keys, const KeyRolesByKey& roles = {});

  // Stops answering and joins the actor. Afterwards libzmq finds no handler
  // and CURVE servers in this context accept ANY key: close the servers first.
  Status Stop(std::chrono::milliseconds timeout = std::chrono::seconds(5));

  // Why the handler stopped answering on its own (it threw, or its context
  // was terminated under it), nullopt while it serves or after Stop. Until
  // it is restarted, CURVE servers in the context admit ANY key: its owner
  // must stop serving (a node exits with this reason). Any thread.
  std::optional<std::string> failure() const;

  // Requests answered 200 / 400 since Start.
  uint64_t accepted() const { return counters_->accepted.load(); }
  uint64_t refused() const { return counters_->refused.load(); }

 private:
  struct Counters {
    std::atomic<uint64_t> accepted{0};
    std::atomic<uint64_t> refused{0};
    Mutex mu;
    bool stopping GUARDED_BY(mu) = false;  // Stop was called
    std::optional<std::string> failure GUARDED_BY(mu);
  };
  ZapHandler() = default;

  std::shared_ptr<Counters> counters_ = std::make_shared<Counters>();
  std::unique_ptr<Actor> actor_;
};

}  // namespace apollo11::transport
