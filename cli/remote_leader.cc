// RemoteCoordinator: which coordinator of an HA set the CLI talks to (issue
// 14). It tries the --coordinator list in turn and follows "not the leader;
// the leader is X".

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <msgpack.hpp>
#include <thread>

#include "actors/client_protocol.h"
#include "cli/remote.h"
#include "ha/not_leader.h"
#include "transport/codec.h"
#include "transport/coordinator_endpoints.h"
#include "transport/sockets.h"

namespace apollo11::cli {
namespace {

// libzmq PINGs the coordinator this often and closes a connection that
// answered nothing for kPingTimeout after a PING.
constexpr std::chrono::milliseconds kPingEvery(250), kPingTimeout(750);
// When every coordinator of the list was unreachable in a row, Ask waits
// this long before the next round.
constexpr std::chrono::milliseconds kRoundPause(100);

// The leader a reply's error names when it is a "not the leader" refusal
// (every client reply begins with its code and error); nullopt otherwise.
std::optional<std::string> LeaderNamed(const std::string& raw) {
  auto env = transport::DecodeEnvelope(raw.data(), raw.size(), actors::ClientLimits());
  if (!env.ok()) return std::nullopt;
  const msgpack::object& body = env->body;
  if (body.type != msgpack::type::ARRAY || body.via.array.size < 2) return std::nullopt;
  const msgpack::object& error = body.via.array.ptr[1];
  if (error.type != msgpack::type::STR) return std::nullopt;
  return ha::ParseNotLeader(std::string_view(error.via.str.ptr, error.via.str.size));
}

}  // namespace

Status RemoteCoordinator::Dial(size_t i) {
  CloseSocket();
  current_ = i;
  endpoint_ = endpoints_[i];
  connect_failed_ = false;
  zmq::context_t& ctx = ext_ctx_ ? *ext_ctx_ : ctx_;
  socket_ = std::make_unique<zmq::socket_t>(ctx, zmq::socket_type::dealer);
  transport::SocketOptions options;
  options.immediate = false;  // queue the request until the connection is up
  options.max_msg_size = static_cast<int64_t>(actors::ClientLimits().max_frame);
  APOLLO11_RETURN_IF_ERROR(transport::ConfigureDealer(
      *socket_, "cli-" + std::to_string(::getpid()) + "-" + std::to_string(std::rand()), options));
  try {
    // A coordinator that stops answering at all (paused, its machine gone)
    // keeps its connection open: libzmq's PINGs find it out and close the
    // connection within about a second, and Ask moves on.
    socket_->set(zmq::sockopt::heartbeat_ivl, static_cast<int>(kPingEvery.count()));
    socket_->set(zmq::sockopt::heartbeat_timeout, static_cast<int>(kPingTimeout.count()));
  } catch (const zmq::error_t& e) {
    return Status::Io(std::string("cannot configure the coordinator link: ") + e.what());
  }
  if (curve_) {
    APOLLO11_RETURN_IF_ERROR(transport::ConfigureCurveClient(*socket_, *curve_, server_public_));
  }
  dropped_ = false;
  handshaken_ = false;
  APOLLO11_RETURN_IF_ERROR(WatchConnection(ctx));
  return transport::Connect(*socket_, endpoint_);
}

std::chrono::milliseconds RemoteCoordinator::ConnectWindow() const {
  return std::min(timeout_, std::chrono::milliseconds(1000));
}

Status RemoteCoordinator::LostRequest(const Status& why) {
  // A fresh socket: the old one may still hold the request, which must not
  // go out later, nor its answer be taken for the next request's.
  Status dialed = Dial(current_);
  if (!dialed.ok()) return dialed;
  return Status::Io(why.message() +
                    ": the request may or may not have been taken; look (e.g. apollo11 runs) "
                    "before you send it again");
}

Result<std::string> RemoteCoordinator::Ask(const std::string& frame, uint16_t reply_type,
                                           OnDrop on_drop) {
  const size_t max_hops = 2 * std::max<size_t>(endpoints_.size(), 1);
  const auto deadline = std::chrono::steady_clock::now() + timeout_ + build_wait_;
  size_t hops = 0, unreachable_in_a_row = 0;
  for (;;) {
    APOLLO11_RETURN_IF_ERROR(SendRequest(frame));
    unreachable_ = false;
    auto reply = Await(reply_type);
    if (!reply.ok() && dropped_ && on_drop == OnDrop::kFail) {
      return LostRequest(reply.status());
    }
    if (!reply.ok() && unreachable_) {
      // Passed over until the timeout, however often: a coordinator that
      // restarts its actors (an HA role change) binds again in a moment.
      if (std::chrono::steady_clock::now() >= deadline) return reply;
      if (++unreachable_in_a_row % endpoints_.size() == 0) std::this_thread::sleep_for(kRoundPause);
      APOLLO11_RETURN_IF_ERROR(Dial((current_ + 1) % endpoints_.size()));
      continue;
    }
    unreachable_in_a_row = 0;
    if (!reply.ok() && !dropped_) return reply;  // connected, and no answer in time
    const bool last = ++hops >= max_hops;
    if (!reply.ok()) {
      // A fresh socket: an answer the lost connection still carries can
      // never be taken for this one's. With several coordinators, the next
      // one: this one died, stopped answering, or changed role (and then
      // the next names the leader).
      APOLLO11_RETURN_IF_ERROR(Dial(last ? current_ : (current_ + 1) % endpoints_.size()));
      if (last) return reply;
      continue;
    }
    const std::optional<std::string> leader = LeaderNamed(*reply);
    if (!leader || last) return reply;
    auto known = std::find(endpoints_.begin(), endpoints_.end(), *leader);
    if (leader->empty() || *leader == endpoint_) {
      if (endpoints_.size() == 1) return reply;  // nobody else to ask
      APOLLO11_RETURN_IF_ERROR(Dial((current_ + 1) % endpoints_.size()));
    } else if (known != endpoints_.end()) {
      APOLLO11_RETURN_IF_ERROR(Dial(static_cast<size_t>(known - endpoints_.begin())));
    } else if (endpoints_.size() < transport::kMaxCoordinatorEndpoints) {
      endpoints_.push_back(*leader);  // the leader's advertised endpoint
      APOLLO11_RETURN_IF_ERROR(Dial(endpoints_.size() - 1));
    } else {
      return reply;
    }
  }
}

}  // namespace apollo11::cli
