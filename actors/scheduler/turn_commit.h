#pragma once
// The end of one scheduler turn: place before commit, commit, then release.
// Socket-free: it drives the SchedulerCore, the JournalHealth and the
// ClientSessions, and returns the frames for the dispatcher and the
// reconciler, encoded, for the loop (or a test harness wiring the cores
// through in-memory queues) to deliver in order.
//
// The sequence, per turn:
//   1. BeginEarlyPlacement: the READY executions the turn produced go to the
//      dispatcher with a fresh ticket before the commit;
//   2. the caller delivers the Placed answers (OnPlaced) until
//      AwaitingPlacement is false or a short wait ran out, so that the
//      placements join the commit: one fsync per dependency hop, not two;
//   3. Commit: the journal commit; only on success are the held client
//      replies and the turn's messages released. On failure nothing is
//      released, placement is paused, and the commit is retried later.

#include <string>
#include <vector>

#include "actors/internal_messages.h"
#include "actors/scheduler/client_sessions.h"
#include "actors/scheduler/journal_health.h"
#include "actors/scheduler/scheduler_core.h"
#include "alerts/sink.h"

namespace apollo11::actors {

// Encoded messages from the scheduler to the other two actors, in order.
struct InternalFrames {
  std::vector<std::string> to_dispatcher;
  std::vector<std::string> to_reconciler;
  void Clear() {
    to_dispatcher.clear();
    to_reconciler.clear();
  }
};

class TurnCommit {
 public:
  // How long a turn waits for the dispatcher to place what it is about to
  // commit. The answer normally takes tens of µs (an inproc round trip); the
  // bound only matters when the dispatcher is busy with a large turn.
  static constexpr Micros kPlaceBeforeCommitWait = 1000;

  // All pointers must outlive the turn; `alerts` may be null.
  TurnCommit(SchedulerCore* core, JournalHealth* health, ClientSessions* sessions,
             alerts::Sink* alerts);

  // Takes the core's READY executions and, when there are any, appends an
  // Enqueue with a fresh ticket to `out` and returns true: the caller should
  // deliver it and wait (briefly) for the Placed that echoes the ticket.
  bool BeginEarlyPlacement(InternalFrames* out);
  // A Placed from the dispatcher: applied to the core; its ticket ends the
  // wait for an early placement.
  void OnPlaced(const Placed& placed);
  // True while the latest early placement has not been answered.
  bool AwaitingPlacement() const { return placed_ticket_ < early_ticket_; }

  // Commits what the core staged. On success releases, into `out` and the
  // sessions, everything the commit made true, and returns true. On failure
  // releases nothing, records it in the health (and alerts), pauses
  // placement (once per outage) and returns false; the staged work is
  // committed by a later call. `steady_now` times the health's retries,
  // `wall_now` dates what is shown and alerted.
  bool Commit(Micros wall_now, Micros steady_now, InternalFrames* out);

  // Appends enqueue's executions to `to` as kEnqueue frames of at most
  // `budget` bytes of DISPATCH each (one frame when they fit, and always at
  // least one execution per frame), in order; only the last frame carries
  // the ticket, so the Placed echoing it comes after every frame was taken.
  // Leaves enqueue->execs empty.
  static void AddEnqueue(std::vector<std::string>* to, Enqueue* enqueue, size_t budget);
  // The budget Commit and BeginEarlyPlacement use: a quarter of the
  // internal link's frame limit (the dispatcher drops a larger frame).
  static size_t EnqueueBudget() { return InternalLimits().max_frame / 4; }
  // The ids of the runs that ended in the commits since the last call.
  std::vector<std::string> TakeFinishedRuns() { return std::move(finished_runs_); }

 private:
  template <class T>
  static void Add(std::vector<std::string>* to, InternalType type, const T& body);

  SchedulerCore* core_;
  JournalHealth* health_;
  ClientSessions* sessions_;
  alerts::Sink* alerts_;
  SchedulerOutbox staged_;
  Enqueue early_;
  uint64_t early_ticket_ = 0;   // the newest early placement's ticket
  uint64_t placed_ticket_ = 0;  // the newest ticket the dispatcher answered
  std::vector<std::string> finished_runs_;
};

}  // namespace apollo11::actors
