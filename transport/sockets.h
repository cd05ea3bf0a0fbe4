#pragma once
// ZeroMQ socket helpers that never throw: socket options the protocol relies
// on (DESIGN §11), sends that report a gone peer or a full queue as a Status
// instead of a silent drop, single-frame receives, and a poll that survives
// EINTR. Each helper is called only from the thread that owns the socket.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <zmq.hpp>

#include "common/status.h"
#include "common/wire_limits.h"
#include "transport/key_roles.h"

namespace apollo11::transport {

// Options shared by the configure helpers.
struct SocketOptions {
  // ZMQ_MAXMSGSIZE: bigger inbound frames close the connection.
  int64_t max_msg_size = static_cast<int64_t>(kWireMaxFrameBytes);
  int hwm = 100000;  // SNDHWM/RCVHWM: generous, never used as flow control
  // DEALER only: ZMQ_IMMEDIATE. On (the default), a send while the peer is
  // not connected fails at once with Busy instead of queueing inside libzmq:
  // a worker keeps its own outbox (RESULTs until ACK) and resends after
  // HELLO, so stale frames (old-epoch heartbeats) are never replayed in a
  // burst on reconnect, and the worker learns the link is down.
  bool immediate = true;
  // DEALER only: ZMQ_RECONNECT_IVL and ZMQ_RECONNECT_IVL_MAX in ms; 0 keeps
  // libzmq's (100 ms, no back-off). With a max above the interval, failed
  // attempts back off by doubling up to it, and a connection that succeeds
  // starts again from the interval.
  int reconnect_ivl_ms = 0;
  int reconnect_ivl_max_ms = 0;
};

// The message of the Status returned once the context is terminated (ETERM):
// the owning actor should close its sockets and return.
inline constexpr std::string_view kContextTerminated = "zmq context terminated";

// True if `s` reports a terminated context (see kContextTerminated).
bool IsContextTerminated(const Status& s);

// ROUTER: ROUTER_MANDATORY=1 (unknown peers fail the send), ROUTER_HANDOVER=1
// (a worker that comes back with the same identity takes its slot over),
// MAXMSGSIZE, LINGER 0, generous HWMs. Io error if libzmq refuses an option.
Status ConfigureRouter(zmq::socket_t& router, const SocketOptions& options = {});

// DEALER with a fixed routing identity (set before connect): LINGER 0,
// ROUTING_ID, MAXMSGSIZE, HWMs, IMMEDIATE per `options`.
Status ConfigureDealer(zmq::socket_t& dealer, const std::string& identity,
                       const SocketOptions& options = {});

// Binds `endpoint` ("tcp://127.0.0.1:0" picks a free port) and returns the
// endpoint actually bound (ZMQ_LAST_ENDPOINT). Io error on failure.
Result<std::string> Bind(zmq::socket_t& socket, const std::string& endpoint);

// Connects `endpoint`. Io error on a malformed endpoint.
Status Connect(zmq::socket_t& socket, const std::string& endpoint);

// ROUTER send of one payload frame to `identity`. NotFound("peer gone ...")
// when no such peer is connected (EHOSTUNREACH under ROUTER_MANDATORY),
// Busy when it would block (EAGAIN: HWM reached with dontwait).
Status SendTo(zmq::socket_t& router, std::string_view identity, std::string_view payload,
              bool dontwait = true);

// One-frame send on a DEALER/PAIR. Busy when it would block (EAGAIN, e.g. a
// DEALER with IMMEDIATE and no connected peer, with dontwait).
Status Send(zmq::socket_t& socket, std::string_view payload, bool dontwait = true);

// A frame received on a ROUTER with the sender's identity and, on a CURVE
// connection, its key and roles as the ZAP handler stamped them.
struct RoutedMessage {
  std::string identity;
  zmq::message_t payload;
  PeerAuth peer;
};

// Receives one [identity, payload] message from a ROUTER. Busy if nothing is
// waiting (dontwait); InvalidInput (the message is drained and dropped) if
// the peer sent more than one payload frame.
Result<RoutedMessage> RecvFrom(zmq::socket_t& router, bool dontwait = true);

// Receives one single-frame message (DEALER, PAIR); errors as RecvFrom.
Result<zmq::message_t> Recv(zmq::socket_t& socket, bool dontwait = true);

// zmq_poll over `items`, retrying on EINTR with the remaining time. timeout
// < 0 waits forever. Returns how many items have events (0 on timeout).
Result<int> Poll(std::span<zmq::pollitem_t> items, std::chrono::milliseconds timeout);

// A bound and a connected inproc PAIR on "inproc://<name>" (bound first, as
// inproc requires on old libzmq), LINGER 0 and no high-water mark (so a
// non-blocking send never drops while the peer lives): a one-line link between actors.
// The two sockets may then be moved to different threads. libzmq releases an
// inproc name asynchronously after close: do not reuse a name right away.
Result<std::pair<zmq::socket_t, zmq::socket_t>> MakeInprocPair(zmq::context_t& ctx,
                                                               const std::string& name);

}  // namespace apollo11::transport
