#include "actors/dispatcher/dispatcher_turn.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>

#include "actors/internal_routes.h"

namespace apollo11::actors {
namespace {

using DT = DispatcherTurn;
const std::array<Route<DT>, 7> kDispatcherFromScheduler = {{
    {InternalType::kEnqueue, &Decoded<DT, Enqueue, &DT::OnEnqueue>},
    {InternalType::kAdoptRunning, &Decoded<DT, AdoptRunning, &DT::OnAdopt>},
    {InternalType::kAckResults, &Decoded<DT, AckResults, &DT::OnAcks>},
    {InternalType::kCancelExecs, &Decoded<DT, CancelExecs, &DT::OnCancel>},
    {InternalType::kReleaseDispatch, &Decoded<DT, ReleaseDispatch, &DT::OnRelease>},
    {InternalType::kLogFetch, &Decoded<DT, LogFetch, &DT::OnLogFetch>},
    {InternalType::kPausePlacement, &Decoded<DT, PausePlacement, &DT::OnPausePlacement>},
}};
const std::array<Route<DT>, 1> kDispatcherFromReconciler = {{
    {InternalType::kWorkerLost, &Decoded<DT, WorkerLost, &DT::OnWorkerLost>},
}};

Micros AfterMs(Micros now, Millis ms) { return now + ms.count() * kMicrosPerMilli; }

}  // namespace

DispatcherTurn::DispatcherTurn(const Clock* clock, DispatcherOptions options,
                               DispatcherTurnOptions timers)
    : clock_(clock), options_(options), timers_(timers), core_(clock, std::move(options)) {
  next_beat_ = AfterMs(clock_->Steady(), timers_.heartbeat);
  next_probe_ = AfterMs(clock_->Steady(), timers_.reconcile_interval);
}

void DispatcherTurn::FromWorker(const std::string& identity, const transport::PeerAuth& peer,
                                const void* data, size_t size) {
  core_.OnWorkerFrame(identity, peer, data, size, &out_);
}

void DispatcherTurn::FromScheduler(const transport::Envelope& env) {
  RouteMessage(*this, kDispatcherFromScheduler, env);
}

void DispatcherTurn::FromReconciler(const transport::Envelope& env) {
  RouteMessage(*this, kDispatcherFromReconciler, env);
}

void DispatcherTurn::OnEnqueue(Enqueue m) {
  answer_ticket_ = std::max(answer_ticket_, m.ticket);
  core_.OnEnqueue(std::move(m));
}

Micros DispatcherTurn::NextWake() const {
  Micros wake = std::min(next_beat_, next_probe_);
  if (core_.GaugesDue() != 0) wake = std::min(wake, core_.GaugesDue());
  // A new term is announced in the first turn, not when a frame or the
  // first heartbeat (a whole --heartbeat away) first wakes the loop.
  if (!announced_) return clock_->Steady();
  // Announcing a new term: look for reconnected watchers every 20 ms.
  if (core_.announcing()) wake = std::min(wake, clock_->Steady() + 20 * kMicrosPerMilli);
  return wake;
}

void DispatcherTurn::End(WorkerLink& workers, DispatcherFrames* out) {
  const Micros now = clock_->Steady();
  if (!announced_) {
    // A new term: the workers that watch this coordinator (a WATCH every
    // heartbeat) hear of it now, not when they next look for a leader.
    announced_ = true;
    const Micros heartbeat = timers_.heartbeat.count() * kMicrosPerMilli;
    core_.StartAnnouncing(now - 3 * heartbeat,
                          now + std::max<Micros>(heartbeat, 2 * kMicrosPerSecond));
  }
  core_.Announce(now, &out_);
  OnTimers(clock_->Steady(), out);
  core_.Place(&out_);
  core_.PublishGauges();
  SendToWorkers(workers);
  // Placed first: the scheduler must see an execution RUNNING before any
  // loss report that names it.
  if (!out_.placed.placed.empty() || answer_ticket_ != 0) {
    out_.placed.ticket = std::exchange(answer_ticket_, 0);
    AddFrame(&out->to_scheduler, InternalType::kPlaced, out_.placed);
  }
  if (!out_.started.items.empty()) {
    AddFrame(&out->to_scheduler, InternalType::kStartedBatch, out_.started);
  }
  if (!out_.results.items.empty()) {
    AddFrame(&out->to_scheduler, InternalType::kResultBatch, out_.results);
  }
  for (const LogFetched& fetched : out_.logs) {
    AddFrame(&out->to_scheduler, InternalType::kLogFetched, fetched);
  }
  for (const WorkerGone& gone : out_.gone) {
    AddFrame(&out->to_scheduler, InternalType::kWorkerGone, gone);
    if (core_.HasWorker(gone.worker_id)) continue;  // executions handed back; it stays
    // A delta, not a snapshot: the reconciler keeps watching the others.
    AddFrame(&out->to_reconciler, InternalType::kWorkerLeft, WorkerLeft{gone.worker_id});
  }
  out_.Clear();
}

void DispatcherTurn::OnTimers(Micros now, DispatcherFrames* out) {
  if (now >= next_beat_) {
    core_.Heartbeat(&out_);
    AddFrame(&out->to_reconciler, InternalType::kWorkersSeen, core_.Seen());
    (void)core_.TakeRosterChanged();
    AddSnapshot(out);
    next_beat_ = AfterMs(now, timers_.heartbeat);
  } else if (core_.TakeRosterChanged()) {
    AddSnapshot(out);
  }
  if (now >= next_probe_) {
    core_.Probe(&out_);
    next_probe_ = AfterMs(now, timers_.reconcile_interval);
  }
}

void DispatcherTurn::AddSnapshot(DispatcherFrames* out) {
  WorkersSnapshot snapshot;
  snapshot.epoch = options_.epoch;
  for (const WorkerSnapshot& w : core_.Snapshot()) {
    snapshot.workers.push_back({w.id, w.group, w.slots, w.credits, w.running, w.last_seen,
                                w.expected_busy_ms, w.labels, w.joined_at, w.losses});
  }
  core_.TakeHealth(clock_->Now(), &snapshot);
  AddFrame(&out->to_scheduler, InternalType::kWorkersSnapshot, snapshot);
}

void DispatcherTurn::SendToWorkers(WorkerLink& workers) {
  // election: a leader whose lease may have expired sends workers nothing
  // (its node is about to stand down); what it placed is RUNNING in its
  // journal and the next leader's claim window sorts it out.
  const ha::RoleView* ha = options_.ha;
  if (ha != nullptr && !options_.standby && !ha->MayAct() && !out_.to_workers.empty()) {
    spdlog::warn("dispatcher: {} frames to workers not sent: the HA lease may have expired",
                 out_.to_workers.size());
    out_.to_workers.clear();
  }
  // A peer that is gone fails the send and is handed to the core, which may
  // produce more frames: index, not iterators.
  for (size_t i = 0; i < out_.to_workers.size(); ++i) {
    if (workers.Send(out_.to_workers[i].first, out_.to_workers[i].second)) continue;
    const std::string gone = out_.to_workers[i].first;
    core_.OnSendFailed(gone, &out_);
  }
}

}  // namespace apollo11::actors
