#pragma once
// Small pieces every actor loop shares: draining a socket without blocking,
// decoding its frames, and sending one typed message.

#include <spdlog/spdlog.h>

#include <array>
#include <chrono>
#include <optional>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "actors/client_protocol.h"
#include "actors/internal_messages.h"
#include "actors/internal_routes.h"
#include "common/clock.h"
#include "transport/codec.h"
#include "transport/security.h"
#include "transport/sockets.h"

namespace apollo11::actors {

// How many frames one loop turn takes from one socket before moving on, so a
// busy peer cannot starve the others and group commits stay bounded.
inline constexpr int kMaxFramesPerTurn = 4096;

// Receives up to kMaxFramesPerTurn single-frame messages from `socket`
// without blocking and calls handle(envelope) for each well-formed one.
// Malformed frames are logged and dropped. Returns false once the context is
// terminated.
template <class Handler>
bool DrainSocket(zmq::socket_t& socket, const char* actor, transport::Envelope* env,
                 Handler&& handle) {
  for (int i = 0; i < kMaxFramesPerTurn; ++i) {
    auto msg = transport::Recv(socket, /*dontwait=*/true);
    if (!msg.ok()) {
      if (transport::IsContextTerminated(msg.status())) return false;
      return true;  // nothing more waiting
    }
    Status s = transport::DecodeEnvelopeInto(msg->data(), msg->size(), env, InternalLimits());
    if (!s.ok()) {
      spdlog::warn("{}: dropped a malformed internal frame: {}", actor, s.message());
      continue;
    }
    handle(*env);
  }
  return true;
}

// True when the last Poll found `item`'s socket readable. Loops drain only
// those sockets: an empty drain is not free (each EAGAIN has libzmq look at
// the socket's command pipe, a poll(2) and a getpid(2)), and a hop between
// actors used to pay dozens of them. zmq_poll is level-triggered, so frames a
// capped drain left behind make the next Poll return at once.
inline bool Readable(const zmq::pollitem_t& item) { return (item.revents & ZMQ_POLLIN) != 0; }

// Sends one message on a PAIR link between actors. Never blocks: a peer
// that is gone (an actor already stopped during shutdown) must not hang the
// sender. The links have no high-water mark (MakeInprocPair), so while the
// peer lives a send cannot fail; a failure means the peer is gone.
template <class T>
void SendInternal(zmq::socket_t& socket, InternalType type, const T& body, std::string* scratch) {
  scratch->clear();
  transport::Encode(static_cast<uint16_t>(type), body, scratch);
  Status s = transport::Send(socket, *scratch, /*dontwait=*/true);
  if (!s.ok()) {
    spdlog::error("internal message of type {} not delivered: {}", static_cast<int>(type),
                  s.message());
  }
}

// The ZAP domain of the coordinator's CURVE servers (both ROUTERs).
inline constexpr const char* kCurveDomain = "apollo11";

// Configures a ROUTER the outside world connects to (a CURVE server when
// keys are given; options must be set before bind) and binds it, reporting
// the endpoint actually bound (tcp port 0 resolved) in `bound`.
inline Status BindRouter(zmq::socket_t& router, const transport::SocketOptions& options,
                         const std::optional<transport::CurveKeyPair>& curve,
                         const std::string& endpoint, std::string* bound) {
  APOLLO11_RETURN_IF_ERROR(transport::ConfigureRouter(router, options));
  if (curve) {
    APOLLO11_RETURN_IF_ERROR(transport::ConfigureCurveServer(router, *curve, kCurveDomain));
  }
  auto result = transport::Bind(router, endpoint);
  if (!result.ok()) return result.status();
  *bound = *result;
  return Status::Ok();
}

// Why a loop stopped when its context was terminated under it.
inline Status ContextTerminated() {
  return Status::Io("the ZeroMQ context was terminated before the actor was stopped");
}

// Sends each of `frames` on a PAIR link (see SendInternal) and clears them.
inline void SendFrames(zmq::socket_t& socket, std::vector<std::string>* frames) {
  for (const std::string& frame : *frames) {
    Status s = transport::Send(socket, frame, /*dontwait=*/true);
    if (!s.ok()) spdlog::error("internal message not delivered: {}", s.message());
  }
  frames->clear();
}

// Milliseconds from `now` until `when` (µs), clamped to [0, cap]; `when` 0
// means "no deadline": cap.
inline std::chrono::milliseconds UntilMs(Micros now, Micros when, std::chrono::milliseconds cap) {
  if (when == 0) return cap;
  Micros delta = when - now;
  if (delta <= 0) return std::chrono::milliseconds(0);
  auto ms = std::chrono::milliseconds((delta + 999) / 1000);
  return ms < cap ? ms : cap;
}

}  // namespace apollo11::actors
