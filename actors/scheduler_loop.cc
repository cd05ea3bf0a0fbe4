#include "actors/scheduler_loop.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <utility>

#include "actors/actor_loop.h"
#include "actors/scheduler/scheduler_turn.h"

namespace apollo11::actors {
namespace {

using std::chrono::milliseconds;
using transport::Envelope;

// The scheduler's thread: the client ROUTER and the links to the other two
// actors. Everything it decides is SchedulerTurn's (and, through it, the
// ClientGate's and TurnCommit's); this class moves bytes between the
// sockets and the turn, and waits briefly for the dispatcher's placement
// before each commit.
class SchedulerLoop {
 public:
  static constexpr const char* kName = "scheduler";

  explicit SchedulerLoop(SchedulerLoopParams p)
      : p_(std::move(p)),
        client_(*p_.ctx, zmq::socket_type::router),
        retention_(p_.journal, p_.retention),
        turn_(TurnConfig(p_, &retention_)) {}

  Status Run(transport::ActorPipe& pipe);

 private:
  static SchedulerTurnConfig TurnConfig(const SchedulerLoopParams& p, Retention* retention);
  Status Start(transport::ActorPipe& pipe);
  bool DrainDispatcher() {
    return DrainSocket(*p_.dispatcher, kName, &env_,
                       [&](const Envelope& e) { turn_.FromDispatcher(e); });
  }
  void DrainClients();
  // Place before commit (waiting up to TurnCommit::kPlaceBeforeCommitWait
  // for the dispatcher), commit, send what the commit released. False when
  // the commit failed.
  bool Flush(bool place_early);
  void SendOut();

  SchedulerLoopParams p_;
  zmq::socket_t client_;
  Retention retention_;
  SchedulerTurn turn_;
  Envelope env_;
};

SchedulerTurnConfig SchedulerLoop::TurnConfig(const SchedulerLoopParams& p, Retention* retention) {
  SchedulerTurnConfig c;
  c.store = p.journal;
  c.clock = p.clock;
  c.options = p.options;
  c.journal_dir = p.journal->dir();
  c.retention = retention;
  c.log_file = p.log_file;
  c.health_interval = p.health_interval;
  c.faults = p.faults;
  c.clients.check_roles = p.curve.has_value();
  c.clients.standby = p.standby;
  const ha::RoleView* ha = p.ha;
  c.clients.leader_endpoint = [ha] { return ha ? ha->Current().leader.client_endpoint : ""; };
  return c;
}

Status SchedulerLoop::Start(transport::ActorPipe& pipe) {
  transport::SocketOptions client_options;
  client_options.max_msg_size = static_cast<int64_t>(ClientLimits().max_frame);
  Status s = BindRouter(client_, client_options, p_.curve, p_.client_endpoint, p_.bound_client);
  if (!s.ok()) {
    pipe.SignalReady(s);  // Coordinator::Start returns it as it is
    return s;
  }
  // Recovery before serving: what it stages reaches the dispatcher before
  // the dispatcher starts taking workers' HELLOs (it is started after this
  // actor is ready and reads our messages first). A standby recovers when
  // it leads (the node starts it anew).
  const RecoveryReport r = turn_.Start();
  if (!p_.standby) *p_.recovery = r;
  if (r.runs > 0 || r.failed_runs > 0) {
    spdlog::info(
        "recovered {} unfinished runs ({} tasks: {} RUNNING left for their workers to claim, {} "
        "READY, {} waiting to retry; {} could not be rebuilt) in {:.1f} ms",
        r.runs, r.tasks, r.running, r.ready, r.retrying, r.failed_runs,
        static_cast<double>(r.elapsed_us) / 1000.0);
  }
  // The dispatcher starts after this actor is ready: nothing would answer an
  // early placement yet.
  Flush(/*place_early=*/false);
  pipe.SignalReady(Status::Ok());
  return Status::Ok();
}

Status SchedulerLoop::Run(transport::ActorPipe& pipe) {
  APOLLO11_RETURN_IF_ERROR(Start(pipe));
  zmq::pollitem_t items[] = {pipe.PollItem(),
                             {client_.handle(), 0, ZMQ_POLLIN, 0},
                             {p_.dispatcher->handle(), 0, ZMQ_POLLIN, 0},
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
    if (Readable(items[1])) DrainClients();
    if (Readable(items[2]) && !DrainDispatcher()) return ContextTerminated();
    if (Readable(items[3]) && !DrainSocket(*p_.reconciler, kName, &env_,
                                           [&](const Envelope& e) { turn_.FromReconciler(e); })) {
      return ContextTerminated();
    }
    turn_.Tick();
    if (turn_.CommitDue() && Flush(/*place_early=*/true)) turn_.Retain();
    SendOut();
  }
}

void SchedulerLoop::DrainClients() {
  for (int i = 0; i < kMaxFramesPerTurn; ++i) {
    auto msg = transport::RecvFrom(client_, /*dontwait=*/true);
    if (!msg.ok()) break;
    turn_.FromClient(msg->identity, msg->peer, msg->payload.data(), msg->payload.size());
  }
}

bool SchedulerLoop::Flush(bool place_early) {
  if (place_early && turn_.BeginEarlyPlacement()) {
    SendFrames(*p_.dispatcher, &turn_.frames().to_dispatcher);
    const Micros until = p_.clock->Steady() + TurnCommit::kPlaceBeforeCommitWait;
    zmq::pollitem_t item[] = {{p_.dispatcher->handle(), 0, ZMQ_POLLIN, 0}};
    while (turn_.AwaitingPlacement()) {
      const Micros left = until - p_.clock->Steady();
      if (left <= 0) break;
      const Micros wait_ms = std::max<Micros>(1, (left + kMicrosPerMilli - 1) / kMicrosPerMilli);
      auto polled = transport::Poll(item, milliseconds(wait_ms));
      if (!polled.ok() || !DrainDispatcher()) break;
    }
  }
  const bool committed = turn_.Commit();
  SendOut();
  return committed;
}

void SchedulerLoop::SendOut() {
  SendFrames(*p_.dispatcher, &turn_.frames().to_dispatcher);
  SendFrames(*p_.reconciler, &turn_.frames().to_reconciler);
  for (const ClientFrame& f : turn_.TakeClientFrames()) {
    Status s = transport::SendTo(client_, f.identity, f.frame, /*dontwait=*/true);
    if (!s.ok()) spdlog::debug("scheduler: client gone: {}", s.message());
  }
}

}  // namespace

Status RunSchedulerLoop(transport::ActorPipe& pipe, SchedulerLoopParams params) {
  SchedulerLoop loop(std::move(params));
  return loop.Run(pipe);
}

}  // namespace apollo11::actors
