#include "actors/dispatcher_loop.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "actors/actor_loop.h"
#include "actors/dispatcher/dispatcher_turn.h"

namespace apollo11::actors {
namespace {

using std::chrono::milliseconds;
using transport::Envelope;

// The dispatcher's thread: the workers' ROUTER and the links to the other
// two actors. Everything it decides is DispatcherTurn's; this class moves
// bytes between the sockets and the turn.
class DispatcherLoop final : public WorkerLink {
 public:
  static constexpr const char* kName = "dispatcher";

  explicit DispatcherLoop(DispatcherLoopParams p)
      : p_(std::move(p)),
        router_(*p_.ctx, zmq::socket_type::router),
        turn_(p_.clock, WithConnectionCheck(p_.options, this),
              {p_.heartbeat, p_.reconcile_interval}) {}

  Status Run(transport::ActorPipe& pipe);

  bool Send(const std::string& identity, const std::string& frame) override {
    Status sent = transport::SendTo(router_, identity, frame, /*dontwait=*/true);
    if (!sent.ok()) spdlog::warn("dispatcher: send to worker failed: {}", sent.message());
    return sent.ok();
  }

 private:
  bool DrainScheduler() {
    return DrainSocket(*p_.scheduler, kName, &env_,
                       [&](const Envelope& e) { turn_.FromScheduler(e); });
  }
  // The core's options, asking this loop whether a connection is still there.
  static DispatcherOptions WithConnectionCheck(DispatcherOptions options, DispatcherLoop* loop) {
    options.require_worker_role = loop->p_.curve.has_value();
    options.connected = [loop](const std::string& route) { return loop->Connected(route); };
    return options;
  }
  // True while the ROUTER has a connection with identity `route`: a
  // heartbeat to it is accepted (ROUTER_MANDATORY fails it for a gone peer).
  bool Connected(const std::string& route) {
    transport::Heartbeat hb;
    hb.epoch = p_.options.epoch;
    const std::string frame = transport::EncodeToString(transport::MsgType::kHeartbeat, hb);
    Status sent = transport::SendTo(router_, route, frame, /*dontwait=*/true);
    return sent.ok() || sent.code() != StatusCode::kNotFound;
  }
  // Hands up to kMaxFramesPerTurn worker frames to the turn.
  void DrainWorkers();

  DispatcherLoopParams p_;
  zmq::socket_t router_;
  DispatcherTurn turn_;
  DispatcherFrames out_;
  Envelope env_;
};

Status DispatcherLoop::Run(transport::ActorPipe& pipe) {
  // What the scheduler recovered from the journal is already waiting: take
  // it before any worker can say HELLO, so rejoining workers find their
  // executions known.
  if (!DrainScheduler()) {
    Status s = Status::Internal("dispatcher: context terminated at start");
    pipe.SignalReady(s);
    return s;
  }
  Status bound = BindRouter(router_, {}, p_.curve, p_.worker_endpoint, p_.bound_workers);
  if (!bound.ok()) {
    pipe.SignalReady(bound);
    return bound;
  }
  pipe.SignalReady(Status::Ok());
  zmq::pollitem_t items[] = {pipe.PollItem(),
                             {router_.handle(), 0, ZMQ_POLLIN, 0},
                             {p_.scheduler->handle(), 0, ZMQ_POLLIN, 0},
                             {p_.reconciler->handle(), 0, ZMQ_POLLIN, 0}};
  for (;;) {
    auto polled =
        transport::Poll(items, UntilMs(p_.clock->Steady(), turn_.NextWake(), milliseconds(1000)));
    if (!polled.ok()) return polled.status();
    bool term = false;
    if (Readable(items[0]) && !DrainSocket(pipe.socket(), kName, &env_, [&](const Envelope& e) {
          term = term || pipe.IsTerm(e);
        })) {
      return ContextTerminated();
    }
    if (term) return Status::Ok();
    if (Readable(items[1])) DrainWorkers();
    if (Readable(items[2]) && !DrainScheduler()) return ContextTerminated();
    if (Readable(items[3]) && !DrainSocket(*p_.reconciler, kName, &env_,
                                           [&](const Envelope& e) { turn_.FromReconciler(e); })) {
      return ContextTerminated();
    }
    turn_.End(*this, &out_);
    SendFrames(*p_.scheduler, &out_.to_scheduler);
    SendFrames(*p_.reconciler, &out_.to_reconciler);
  }
}

void DispatcherLoop::DrainWorkers() {
  for (int i = 0; i < kMaxFramesPerTurn; ++i) {
    auto msg = transport::RecvFrom(router_, /*dontwait=*/true);
    if (!msg.ok()) {
      if (msg.status().code() == StatusCode::kBusy) break;
      continue;  // a multi-frame message was dropped; keep serving
    }
    turn_.FromWorker(msg->identity, msg->peer, msg->payload.data(), msg->payload.size());
  }
}

}  // namespace

Status RunDispatcherLoop(transport::ActorPipe& pipe, DispatcherLoopParams params) {
  DispatcherLoop loop(std::move(params));
  return loop.Run(pipe);
}

}  // namespace apollo11::actors
