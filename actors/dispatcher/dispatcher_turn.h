#pragma once
// One turn of the dispatcher actor, socket-free: what the dispatcher loop
// (actors/dispatcher_loop.cc) and the simulator (tests/sim) both run. It
// routes the scheduler's and the reconciler's messages to the
// DispatcherCore through one handler table, takes the workers' frames, runs
// the loop's timers (heartbeats, probes, the workers snapshot), places, and
// hands the turn's output on: frames to workers through a WorkerLink, frames
// to the scheduler and the reconciler encoded, in the order the protocol
// needs (Placed before any loss report that names what it placed).
//
// Single-threaded: the dispatcher actor's thread calls everything.

#include <string>
#include <vector>

#include "actors/dispatcher/dispatcher_core.h"
#include "actors/internal_messages.h"
#include "common/clock.h"
#include "common/duration.h"
#include "transport/codec.h"
#include "transport/key_roles.h"

namespace apollo11::actors {

// Where a turn's frames to workers go: the loop's ROUTER, or the
// simulator's mailboxes.
class WorkerLink {
 public:
  virtual ~WorkerLink() = default;
  // Sends `frame` to the connection `identity`; false when no connection
  // has that identity any more (ROUTER_MANDATORY's EHOSTUNREACH).
  virtual bool Send(const std::string& identity, const std::string& frame) = 0;
};

// The dispatcher's encoded messages to the other two actors, in order.
struct DispatcherFrames {
  std::vector<std::string> to_scheduler;
  std::vector<std::string> to_reconciler;
};

struct DispatcherTurnOptions {
  Millis heartbeat{10000};           // HEARTBEAT to workers, WorkersSeen to the reconciler
  Millis reconcile_interval{30000};  // PROBE of what workers hold
};

class DispatcherTurn {
 public:
  static constexpr const char* kName = "dispatcher";

  // `clock` must outlive the turn; the timers start at construction.
  DispatcherTurn(const Clock* clock, DispatcherOptions options, DispatcherTurnOptions timers);

  void FromWorker(const std::string& identity, const transport::PeerAuth& peer, const void* data,
                  size_t size);
  void FromScheduler(const transport::Envelope& env);
  void FromReconciler(const transport::Envelope& env);

  // Ends the turn at the clock's Steady() (every timer of the dispatcher is
  // on the steady clock): the timers that are due, placement and
  // gauges; then sends the frames to workers through `workers` (a send that
  // fails hands that connection to the core, which may produce more) and
  // appends the messages for the other actors to `out`. A leader whose HA
  // lease may have expired sends workers nothing (DispatcherOptions::ha).
  void End(WorkerLink& workers, DispatcherFrames* out);
  // When End next has timer work (Steady()).
  Micros NextWake() const;

  DispatcherCore& core() { return core_; }
  const DispatcherCore& core() const { return core_; }

  // The handlers of the internal messages (the routing table's targets).
  void OnEnqueue(Enqueue m);
  void OnAdopt(AdoptRunning m) { core_.OnAdopt(m); }
  void OnAcks(AckResults m) { core_.OnAcks(m, &out_); }
  void OnCancel(CancelExecs m) { core_.OnCancel(m, &out_); }
  void OnRelease(ReleaseDispatch m) { core_.OnRelease(m, &out_); }
  void OnLogFetch(LogFetch m) { core_.OnLogFetch(m, &out_); }
  void OnPausePlacement(PausePlacement m) { core_.SetPlacementPaused(m.paused); }
  void OnWorkerLost(WorkerLost m) { core_.OnWorkerLost(m, &out_); }

 private:
  void OnTimers(Micros now, DispatcherFrames* out);
  // The workers as the scheduler's queries show them (workers, explain,
  // /api/workers): every heartbeat, and as soon as one joins or leaves.
  void AddSnapshot(DispatcherFrames* out);
  void SendToWorkers(WorkerLink& workers);

  const Clock* clock_;
  DispatcherOptions options_;
  DispatcherTurnOptions timers_;
  DispatcherCore core_;
  DispatcherOutput out_;
  uint64_t answer_ticket_ = 0;  // an Enqueue the scheduler waits on (see Enqueue::ticket)
  Micros next_beat_ = 0, next_probe_ = 0;
  bool announced_ = false;  // the first End announces a leader's term
};

}  // namespace apollo11::actors
