#pragma once
// The actor runtime, after czmq's zactor: an actor is one named thread that
// owns its sockets and state; its parent talks to it over an inproc PAIR
// pipe with codec frames. Start returns once the body has signalled ready
// (or failed to start); Stop sends TERM and waits for the body to return.
//
// A body's loop, typically:
//   pipe.SignalReady(Status::Ok());
//   for (;;) {
//     zmq::pollitem_t items[] = {pipe.PollItem(), {router.handle(), 0, ZMQ_POLLIN, 0}};
//     if (!Poll(items, timers.NextTimeout()).ok()) return;
//     if (items[0].revents & ZMQ_POLLIN) {
//       auto cmd = pipe.Recv();
//       if (!cmd.ok() || pipe.IsTerm(*cmd)) return;
//       ...
//     }
//   }

#include <chrono>
#include <functional>
#include <memory>
#include <stop_token>
#include <string>
#include <thread>
#include <zmq.hpp>

#include "common/status.h"
#include "transport/codec.h"
#include "transport/sockets.h"

namespace apollo11::transport {

// The actor's end of the pipe, handed to its body. Used only on the actor's
// thread.
class ActorPipe {
 public:
  ActorPipe(zmq::socket_t socket, std::stop_token stop) noexcept
      : socket_(std::move(socket)), stop_(std::move(stop)) {}

  // The PAIR socket, for polling alongside the actor's other sockets.
  zmq::socket_t& socket() { return socket_; }

  // A ZMQ_POLLIN poll item for the pipe.
  zmq::pollitem_t PollItem() { return {socket_.handle(), 0, ZMQ_POLLIN, 0}; }

  // Tells Actor::Start the body is ready (Ok) or could not start (error,
  // after which the body should return). Call exactly once, first thing
  // after setting up; later calls are ignored.
  void SignalReady(Status status);

  // Receives one frame from the parent (waits for it unless dontwait).
  // A malformed frame is an error; the parent's messages are never dropped
  // silently.
  Result<Envelope> Recv(bool dontwait = false);

  // True if `env` is the parent's TERM: the body must return promptly.
  bool IsTerm(const Envelope& env) const { return env.type == ToWire(MsgType::kTerm); }

  // Sends a reply or event to the parent.
  template <class T>
  Status Send(uint16_t type, const T& body) {
    scratch_.clear();
    Encode(type, body, &scratch_);
    return transport::Send(socket_, scratch_, /*dontwait=*/false);
  }

  // Set when Stop timed out: a body in a long computation may check it.
  bool stop_requested() const { return stop_.stop_requested(); }

  bool ready_signalled() const { return ready_signalled_; }
  // True once SignalReady(Ok) was called: the body is running, and a later
  // failure is its death rather than a failed start.
  bool started() const { return started_; }

 private:
  zmq::socket_t socket_;
  std::stop_token stop_;
  std::string scratch_;
  bool ready_signalled_ = false;
  bool started_ = false;
};

// A running actor, owned by its parent. Start/Stop/Send/Recv are called from
// the parent's thread only. The context must outlive the Actor.
class Actor {
 public:
  using Body = std::function<void(ActorPipe& pipe)>;

  // Starts `body` on a thread named `name` (first 15 chars) and waits until
  // it calls pipe.SignalReady. If it signals an error (or returns or throws
  // before signalling), the thread is joined and that error is returned.
  static Result<std::unique_ptr<Actor>> Start(zmq::context_t& ctx, std::string name, Body body);

  // Stops the actor if still running (see Stop), waiting up to 10 s; a body
  // that still has not returned is then waited for, with a message on stderr.
  ~Actor();
  Actor(const Actor&) = delete;
  Actor& operator=(const Actor&) = delete;

  // Sends TERM and waits up to `timeout` for the body to return, then joins
  // the thread. Busy if the body did not return in time (it is also asked to
  // stop via its stop_token; Stop may be called again). Ok if already stopped.
  Status Stop(std::chrono::milliseconds timeout);

  // Sends a command to the actor's body.
  template <class T>
  Status Send(uint16_t type, const T& body) {
    scratch_.clear();
    Encode(type, body, &scratch_);
    return transport::Send(pipe_, scratch_, /*dontwait=*/false);
  }

  // Receives the next frame the body sent, waiting up to `timeout` (< 0:
  // forever). Busy on timeout; NotFound once the body has returned.
  Result<Envelope> Recv(std::chrono::milliseconds timeout);

  // The parent's end of the pipe, for polling several actors at once.
  zmq::socket_t& pipe() { return pipe_; }

  const std::string& name() const { return name_; }

  // True once the body has returned (seen on the pipe) or Stop succeeded.
  bool done() const { return done_; }

 private:
  explicit Actor(std::string name) : name_(std::move(name)) {}

  std::string name_;
  zmq::socket_t pipe_;
  std::jthread thread_;
  std::string scratch_;
  bool done_ = false;
  bool term_sent_ = false;
  bool joined_ = false;
};

}  // namespace apollo11::transport
