#include "actors/reconciler_loop.h"

#include <spdlog/spdlog.h>

#include "actors/actor_loop.h"
#include "actors/reconciler/reconciler_turn.h"

namespace apollo11::actors {
namespace {

using transport::Envelope;

// The reconciler's thread: its two links, polled until the next deadline
// or liveness check; everything it decides is ReconcilerTurn's.
class ReconcilerLoop {
 public:
  static constexpr const char* kName = "reconciler";

  explicit ReconcilerLoop(ReconcilerLoopParams p) : p_(std::move(p)), turn_(p_.clock, p_.options) {}

  Status Run(transport::ActorPipe& pipe);

 private:
  ReconcilerLoopParams p_;
  ReconcilerTurn turn_;
  ReconcilerFrames out_;
  Envelope env_;
};

Status ReconcilerLoop::Run(transport::ActorPipe& pipe) {
  pipe.SignalReady(Status::Ok());
  zmq::pollitem_t items[] = {pipe.PollItem(),
                             {p_.scheduler->handle(), 0, ZMQ_POLLIN, 0},
                             {p_.dispatcher->handle(), 0, ZMQ_POLLIN, 0}};
  for (;;) {
    auto polled =
        transport::Poll(items, UntilMs(p_.clock->Steady(), turn_.NextWake(), p_.options.heartbeat));
    if (!polled.ok()) return polled.status();
    bool term = false;
    if (Readable(items[0]) && !DrainSocket(pipe.socket(), kName, &env_, [&](const Envelope& e) {
          term = term || pipe.IsTerm(e);
        })) {
      return ContextTerminated();
    }
    if (term) return Status::Ok();
    if ((Readable(items[1]) && !DrainSocket(*p_.scheduler, kName, &env_,
                                            [&](const Envelope& e) { turn_.FromScheduler(e); })) ||
        (Readable(items[2]) && !DrainSocket(*p_.dispatcher, kName, &env_,
                                            [&](const Envelope& e) { turn_.FromDispatcher(e); }))) {
      return ContextTerminated();
    }
    turn_.End(&out_);
    SendFrames(*p_.dispatcher, &out_.to_dispatcher);
    SendFrames(*p_.scheduler, &out_.to_scheduler);
  }
}

}  // namespace

Status RunReconcilerLoop(transport::ActorPipe& pipe, ReconcilerLoopParams params) {
  ReconcilerLoop loop(std::move(params));
  return loop.Run(pipe);
}

}  // namespace apollo11::actors
