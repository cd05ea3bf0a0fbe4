#pragma once
// One turn of the reconciler actor, socket-free: what the reconciler loop
// (actors/reconciler_loop.cc) and the simulator (tests/sim) both run. It
// routes the scheduler's deadlines and the dispatcher's roster to the
// ReconcilerCore through one handler table each, then, at the turn's end,
// declares lost the workers silent past the liveness window (to the
// dispatcher) and reports the deadlines that passed (to the scheduler).
//
// Single-threaded: the reconciler actor's thread calls everything.

#include <string>
#include <vector>

#include "actors/internal_messages.h"
#include "actors/reconciler/reconciler_core.h"
#include "common/clock.h"
#include "transport/codec.h"

namespace apollo11::actors {

// The reconciler's encoded messages to the other two actors, in order.
struct ReconcilerFrames {
  std::vector<std::string> to_dispatcher;
  std::vector<std::string> to_scheduler;
};

class ReconcilerTurn {
 public:
  static constexpr const char* kName = "reconciler";

  // `clock` must outlive the turn.
  ReconcilerTurn(const Clock* clock, ReconcilerOptions options) : clock_(clock), core_(options) {}

  void FromScheduler(const transport::Envelope& env);
  void FromDispatcher(const transport::Envelope& env);
  // Ends the turn at the clock's Steady() (liveness and deadlines are both
  // on the steady clock: a wall-clock step neither hastens nor delays
  // them): WorkerLost for each silent worker, one DeadlineExceeded for what
  // timed out, appended to `out`.
  void End(ReconcilerFrames* out);
  // When End next has work (Steady()), 0 when nothing is watched.
  Micros NextWake() const { return core_.NextDeadline(); }

  const ReconcilerCore& core() const { return core_; }

  void OnWatch(WatchDeadlines m) { core_.OnWatch(m); }
  void OnUnwatch(Unwatch m) { core_.OnUnwatch(m); }
  void OnWorkersSeen(WorkersSeen m) { core_.OnWorkersSeen(m); }
  void OnWorkerLeft(WorkerLeft m) { core_.OnWorkerLeft(m); }

 private:
  const Clock* clock_;
  ReconcilerCore core_;
};

}  // namespace apollo11::actors
