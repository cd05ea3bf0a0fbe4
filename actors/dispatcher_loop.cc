#include "actors/dispatcher_loop.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "actors/actor_loop.h"

namespace apollo11::actors {
namespace {

using std::chrono::milliseconds;
using transport::Envelope;

class DispatcherLoop {
 public:
  static constexpr const char* kName = "dispatcher";

  explicit DispatcherLoop(DispatcherLoopParams p)
      : p_(std::move(p)),
        core_(p_.clock, WithConnectionCheck(p_.options, this)),
        router_(*p_.ctx, zmq::socket_type::router) {}

  Status Run(transport::ActorPipe& pipe);

 private:
  static const std::array<Route<DispatcherLoop>, 7> kSchedulerRoutes;
  static const std::array<Route<DispatcherLoop>, 1> kReconcilerRoutes;

  // From the scheduler.
  void OnEnqueue(Enqueue m) {
    answer_ticket_ = std::max(answer_ticket_, m.ticket);
    core_.OnEnqueue(std::move(m));
  }
  void OnAdopt(AdoptRunning m) { core_.OnAdopt(m); }
  void OnAcks(AckResults m) { core_.OnAcks(m, &out_); }
  void OnCancel(CancelExecs m) { core_.OnCancel(m, &out_); }
  void OnRelease(ReleaseDispatch m) { core_.OnRelease(m, &out_); }
  void OnLogFetch(LogFetch m) { core_.OnLogFetch(m, &out_); }
  void OnPausePlacement(PausePlacement m) { core_.SetPlacementPaused(m.paused); }
  // From the reconciler.
  void OnWorkerLost(WorkerLost m) { core_.OnWorkerLost(m, &out_); }

  bool DrainScheduler();
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
  // Heartbeats, liveness and probes when due; `now` is Steady().
  void OnTimers(Micros now);
  // The workers as the scheduler's queries (workers, explain, /api/workers)
  // show them: every heartbeat, and as soon as one joins or leaves.
  void PublishSnapshot();
  void SendOut();

  DispatcherLoopParams p_;
  DispatcherCore core_;
  zmq::socket_t router_;
  DispatcherOutput out_;
  Envelope env_;
  std::string scratch_;
  uint64_t answer_ticket_ = 0;  // an Enqueue the scheduler waits on (see Enqueue::ticket)
  Micros next_beat_ = 0, next_probe_ = 0;
};

const std::array<Route<DispatcherLoop>, 7> DispatcherLoop::kSchedulerRoutes = {{
    {InternalType::kEnqueue, &Decoded<DispatcherLoop, Enqueue, &DispatcherLoop::OnEnqueue>},
    {InternalType::kAdoptRunning, &Decoded<DispatcherLoop, AdoptRunning, &DispatcherLoop::OnAdopt>},
    {InternalType::kAckResults, &Decoded<DispatcherLoop, AckResults, &DispatcherLoop::OnAcks>},
    {InternalType::kCancelExecs, &Decoded<DispatcherLoop, CancelExecs, &DispatcherLoop::OnCancel>},
    {InternalType::kReleaseDispatch,
     &Decoded<DispatcherLoop, ReleaseDispatch, &DispatcherLoop::OnRelease>},
    {InternalType::kLogFetch, &Decoded<DispatcherLoop, LogFetch, &DispatcherLoop::OnLogFetch>},
    {InternalType::kPausePlacement,
     &Decoded<DispatcherLoop, PausePlacement, &DispatcherLoop::OnPausePlacement>},
}};

const std::array<Route<DispatcherLoop>, 1> DispatcherLoop::kReconcilerRoutes = {{
    {InternalType::kWorkerLost,
     &Decoded<DispatcherLoop, WorkerLost, &DispatcherLoop::OnWorkerLost>},
}};

bool DispatcherLoop::DrainScheduler() {
  return DrainSocket(*p_.scheduler, kName, &env_,
                     [&](const Envelope& e) { RouteMessage(*this, kSchedulerRoutes, e); });
}

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

  // The loop's timers (heartbeat, probe, gauges) run on the steady clock.
  next_beat_ = p_.clock->Steady() + p_.heartbeat.count() * kMicrosPerMilli;
  next_probe_ = p_.clock->Steady() + p_.reconcile_interval.count() * kMicrosPerMilli;
  zmq::pollitem_t items[] = {pipe.PollItem(),
                             {router_.handle(), 0, ZMQ_POLLIN, 0},
                             {p_.scheduler->handle(), 0, ZMQ_POLLIN, 0},
                             {p_.reconciler->handle(), 0, ZMQ_POLLIN, 0}};
  for (;;) {
    Micros wake = std::min(next_beat_, next_probe_);
    if (core_.GaugesDue() != 0) wake = std::min(wake, core_.GaugesDue());
    auto polled = transport::Poll(items, UntilMs(p_.clock->Steady(), wake, milliseconds(1000)));
    if (!polled.ok()) return polled.status();
    bool term = false;
    if (Readable(items[0]) && !DrainSocket(pipe.socket(), kName, &env_, [&](const Envelope& e) {
          term = term || pipe.IsTerm(e);
        })) {
      return ContextTerminated();
    }
    if (term) return Status::Ok();

    for (int i = 0; Readable(items[1]) && i < kMaxFramesPerTurn; ++i) {
      auto msg = transport::RecvFrom(router_, /*dontwait=*/true);
      if (!msg.ok()) {
        if (msg.status().code() == StatusCode::kBusy) break;
        continue;  // a multi-frame message was dropped; keep serving
      }
      core_.OnWorkerFrame(msg->identity, msg->peer, msg->payload.data(), msg->payload.size(),
                          &out_);
    }
    if (Readable(items[2]) && !DrainScheduler()) return ContextTerminated();
    if (Readable(items[3]) && !DrainSocket(*p_.reconciler, kName, &env_, [&](const Envelope& e) {
          RouteMessage(*this, kReconcilerRoutes, e);
        })) {
      return ContextTerminated();
    }
    OnTimers(p_.clock->Steady());
    core_.Place(&out_);
    core_.PublishGauges();
    SendOut();
  }
}

void DispatcherLoop::OnTimers(Micros now) {
  if (now >= next_beat_) {
    core_.Heartbeat(&out_);
    SendInternal(*p_.reconciler, InternalType::kWorkersSeen, core_.Seen(), &scratch_);
    (void)core_.TakeRosterChanged();
    PublishSnapshot();
    next_beat_ = now + p_.heartbeat.count() * kMicrosPerMilli;
  } else if (core_.TakeRosterChanged()) {
    PublishSnapshot();
  }
  if (now >= next_probe_) {
    core_.Probe(&out_);
    next_probe_ = now + p_.reconcile_interval.count() * kMicrosPerMilli;
  }
}

void DispatcherLoop::PublishSnapshot() {
  WorkersSnapshot snapshot;
  snapshot.epoch = p_.options.epoch;
  for (const WorkerSnapshot& w : core_.Snapshot()) {
    snapshot.workers.push_back({w.id, w.group, w.slots, w.credits, w.running, w.last_seen,
                                w.expected_busy_ms, w.labels, w.joined_at, w.losses});
  }
  core_.TakeHealth(p_.clock->Now(), &snapshot);
  SendInternal(*p_.scheduler, InternalType::kWorkersSnapshot, snapshot, &scratch_);
}

void DispatcherLoop::SendOut() {
  // election: a leader whose lease may have expired sends workers nothing
  // (its node is about to stand down); what it placed is RUNNING in its
  // journal and the next leader's claim window sorts it out.
  const ha::RoleView* ha = p_.options.ha;
  if (ha != nullptr && !p_.options.standby && !ha->MayAct() && !out_.to_workers.empty()) {
    spdlog::warn("dispatcher: {} frames to workers not sent: the HA lease may have expired",
                 out_.to_workers.size());
    out_.to_workers.clear();
  }
  // Frames to workers. A peer that is gone fails the send (ROUTER_MANDATORY)
  // and is handed to the core, which may produce more frames: loop.
  for (size_t i = 0; i < out_.to_workers.size(); ++i) {
    auto& [identity, frame] = out_.to_workers[i];
    Status sent = transport::SendTo(router_, identity, frame, /*dontwait=*/true);
    if (!sent.ok()) {
      spdlog::warn("dispatcher: send to worker failed: {}", sent.message());
      std::string gone = identity;
      core_.OnSendFailed(gone, &out_);
    }
  }
  // Placed first: the scheduler must see an execution RUNNING before any
  // loss report that names it.
  if (!out_.placed.placed.empty() || answer_ticket_ != 0) {
    out_.placed.ticket = answer_ticket_;
    answer_ticket_ = 0;
    SendInternal(*p_.scheduler, InternalType::kPlaced, out_.placed, &scratch_);
  }
  if (!out_.started.items.empty()) {
    SendInternal(*p_.scheduler, InternalType::kStartedBatch, out_.started, &scratch_);
  }
  if (!out_.results.items.empty()) {
    SendInternal(*p_.scheduler, InternalType::kResultBatch, out_.results, &scratch_);
  }
  for (const LogFetched& fetched : out_.logs) {
    SendInternal(*p_.scheduler, InternalType::kLogFetched, fetched, &scratch_);
  }
  for (const WorkerGone& gone : out_.gone) {
    SendInternal(*p_.scheduler, InternalType::kWorkerGone, gone, &scratch_);
    if (core_.HasWorker(gone.worker_id)) continue;  // executions handed back; it stays
    // A delta, not a snapshot: the reconciler keeps watching the others.
    SendInternal(*p_.reconciler, InternalType::kWorkerLeft, WorkerLeft{gone.worker_id}, &scratch_);
  }
  out_.Clear();
}

}  // namespace

Status RunDispatcherLoop(transport::ActorPipe& pipe, DispatcherLoopParams params) {
  DispatcherLoop loop(std::move(params));
  return loop.Run(pipe);
}

}  // namespace apollo11::actors
