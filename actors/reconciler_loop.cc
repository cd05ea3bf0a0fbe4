#include "actors/reconciler_loop.h"

#include <spdlog/spdlog.h>

#include "actors/actor_loop.h"

namespace apollo11::actors {
namespace {

using transport::Envelope;

class ReconcilerLoop {
 public:
  static constexpr const char* kName = "reconciler";

  explicit ReconcilerLoop(ReconcilerLoopParams p) : p_(std::move(p)), core_(p_.options) {}

  Status Run(transport::ActorPipe& pipe);

 private:
  static const std::array<Route<ReconcilerLoop>, 2> kSchedulerRoutes;
  static const std::array<Route<ReconcilerLoop>, 2> kDispatcherRoutes;

  void OnWatch(WatchDeadlines m) { core_.OnWatch(m); }
  void OnUnwatch(Unwatch m) { core_.OnUnwatch(m); }
  void OnWorkersSeen(WorkersSeen m) { core_.OnWorkersSeen(m); }
  void OnWorkerLeft(WorkerLeft m) { core_.OnWorkerLeft(m); }

  ReconcilerLoopParams p_;
  ReconcilerCore core_;
  Envelope env_;
  std::string scratch_;
};

const std::array<Route<ReconcilerLoop>, 2> ReconcilerLoop::kSchedulerRoutes = {{
    {InternalType::kWatchDeadlines,
     &Decoded<ReconcilerLoop, WatchDeadlines, &ReconcilerLoop::OnWatch>},
    {InternalType::kUnwatch, &Decoded<ReconcilerLoop, Unwatch, &ReconcilerLoop::OnUnwatch>},
}};

const std::array<Route<ReconcilerLoop>, 2> ReconcilerLoop::kDispatcherRoutes = {{
    {InternalType::kWorkersSeen,
     &Decoded<ReconcilerLoop, WorkersSeen, &ReconcilerLoop::OnWorkersSeen>},
    {InternalType::kWorkerLeft,
     &Decoded<ReconcilerLoop, WorkerLeft, &ReconcilerLoop::OnWorkerLeft>},
}};

Status ReconcilerLoop::Run(transport::ActorPipe& pipe) {
  pipe.SignalReady(Status::Ok());
  zmq::pollitem_t items[] = {pipe.PollItem(),
                             {p_.scheduler->handle(), 0, ZMQ_POLLIN, 0},
                             {p_.dispatcher->handle(), 0, ZMQ_POLLIN, 0}};
  for (;;) {
    auto polled = transport::Poll(
        items, UntilMs(p_.clock->Steady(), core_.NextDeadline(), p_.options.heartbeat));
    if (!polled.ok()) return polled.status();
    bool term = false;
    if (Readable(items[0]) && !DrainSocket(pipe.socket(), kName, &env_, [&](const Envelope& e) {
          term = term || pipe.IsTerm(e);
        })) {
      return ContextTerminated();
    }
    if (term) return Status::Ok();
    if ((Readable(items[1]) &&
         !DrainSocket(*p_.scheduler, kName, &env_,
                      [&](const Envelope& e) { RouteMessage(*this, kSchedulerRoutes, e); })) ||
        (Readable(items[2]) && !DrainSocket(*p_.dispatcher, kName, &env_, [&](const Envelope& e) {
           RouteMessage(*this, kDispatcherRoutes, e);
         }))) {
      return ContextTerminated();
    }
    // Liveness and deadlines are on the steady clock (the dispatcher's
    // Seen() is steady, and so are the scheduler's deadlines).
    const Micros now = p_.clock->Steady();
    for (const WorkerLost& lost : core_.LostWorkers(now)) {
      spdlog::warn("reconciler: {}", lost.reason);
      SendInternal(*p_.dispatcher, InternalType::kWorkerLost, lost, &scratch_);
    }
    DeadlineExceeded expired = core_.Expired(now);
    if (!expired.exceeded.empty()) {
      SendInternal(*p_.scheduler, InternalType::kDeadlineExceeded, expired, &scratch_);
    }
  }
}

}  // namespace

Status RunReconcilerLoop(transport::ActorPipe& pipe, ReconcilerLoopParams params) {
  ReconcilerLoop loop(std::move(params));
  return loop.Run(pipe);
}

}  // namespace apollo11::actors
