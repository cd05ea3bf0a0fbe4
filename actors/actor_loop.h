#pragma once
// Small pieces every actor loop shares: draining a socket without blocking,
// decoding its frames, and sending one typed message.

#include <spdlog/spdlog.h>

#include <chrono>
#include <string>
#include <zmq.hpp>

#include "actors/internal_messages.h"
#include "common/clock.h"
#include "transport/codec.h"
#include "transport/sockets.h"

namespace apollo11::actors {

// How many frames one loop turn takes from one socket before moving on, so a
// busy peer cannot starve the others and group commits stay bounded.
inline constexpr int kMaxFramesPerTurn = 4096;

// Decode limits for links between this process's own actors: trusted
// peers, but batches can be large (a 100k-task snapshot, thousands of
// results with their output tails in one frame).
inline transport::DecodeLimits InternalLimits() {
  transport::DecodeLimits l;
  l.max_frame = size_t{1} << 30;
  l.array = 10'000'000;
  l.map = 1'000'000;
  l.str = size_t{256} << 20;
  l.bin = size_t{256} << 20;
  return l;
}

// Decode limits for clients submitting runs: a pipeline snapshot is one
// string and may be tens of megabytes for very large DAGs.
inline transport::DecodeLimits ClientLimits() {
  transport::DecodeLimits l;
  l.max_frame = size_t{64} << 20;
  l.str = size_t{64} << 20;
  return l;
}

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
