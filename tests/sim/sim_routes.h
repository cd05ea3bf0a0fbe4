#pragma once
// How the simulator hands an encoded internal message to the actor it is
// for: one handler table per actor and source, as the loops in actors/ have
// them (scheduler_loop.cc, dispatcher_loop.cc, reconciler_loop.cc), over the
// loops' own decoding (actors/actor_loop.h: InternalLimits, Route, Decoded,
// RouteMessage). The loops' tables are private to classes that own sockets,
// so these mirror them; a message type a table does not list fails the test.
//
// Each inbox is a short-lived view of one actor's state, made for one turn.

#include <array>
#include <string>

#include "actors/actor_loop.h"
#include "actors/client_sessions.h"
#include "actors/dispatcher_core.h"
#include "actors/reconciler_core.h"
#include "actors/scheduler_core.h"
#include "actors/scheduler_turn.h"

namespace apollo11::sim {

// The scheduler's inputs from the dispatcher and the reconciler.
struct SchedulerInbox {
  static constexpr const char* kName = "sim scheduler";
  actors::SchedulerCore* core;
  actors::SchedulerTurn* turn;
  actors::ClientSessions* sessions;

  void FromDispatcher(const std::string& frame);
  void FromReconciler(const std::string& frame);

  void OnPlaced(actors::Placed m) { turn->OnPlaced(m); }
  void OnStarted(actors::StartedBatch m) { core->OnStarted(m); }
  void OnResults(actors::ResultBatch m) { core->OnResults(m); }
  void OnWorkerGone(actors::WorkerGone m) { core->OnWorkerGone(m); }
  // The loop keeps it for queries and queue health, which the simulator
  // does not model.
  void OnWorkersSnapshot(actors::WorkersSnapshot) {}
  void OnLogFetched(actors::LogFetched m) { sessions->OnLogFetched(std::move(m)); }
  void OnDeadlineExceeded(actors::DeadlineExceeded m) { core->OnDeadlineExceeded(m); }
};

// The dispatcher's inputs from the scheduler and the reconciler. What the
// handlers produce goes to `out`; an Enqueue's ticket to `answer_ticket`.
struct DispatcherInbox {
  static constexpr const char* kName = "sim dispatcher";
  actors::DispatcherCore* core;
  actors::DispatcherOutput* out;
  uint64_t* answer_ticket;

  void FromScheduler(const std::string& frame);
  void FromReconciler(const std::string& frame);

  void OnEnqueue(actors::Enqueue m);
  void OnAdopt(actors::AdoptRunning m) { core->OnAdopt(m); }
  void OnAcks(actors::AckResults m) { core->OnAcks(m, out); }
  void OnCancel(actors::CancelExecs m) { core->OnCancel(m, out); }
  void OnRelease(actors::ReleaseDispatch m) { core->OnRelease(m, out); }
  void OnLogFetch(actors::LogFetch m) { core->OnLogFetch(m, out); }
  void OnPausePlacement(actors::PausePlacement m) { core->SetPlacementPaused(m.paused); }
  void OnWorkerLost(actors::WorkerLost m) { core->OnWorkerLost(m, out); }
};

// The reconciler's inputs from the scheduler and the dispatcher.
struct ReconcilerInbox {
  static constexpr const char* kName = "sim reconciler";
  actors::ReconcilerCore* core;

  void FromScheduler(const std::string& frame);
  void FromDispatcher(const std::string& frame);

  void OnWatch(actors::WatchDeadlines m) { core->OnWatch(m); }
  void OnUnwatch(actors::Unwatch m) { core->OnUnwatch(m); }
  void OnWorkersSeen(actors::WorkersSeen m) { core->OnWorkersSeen(m); }
  void OnWorkerLeft(actors::WorkerLeft m) { core->OnWorkerLeft(m); }
};

// Encodes `body` as an internal message of `type`, as SendInternal does.
template <class T>
std::string EncodeInternal(actors::InternalType type, const T& body) {
  std::string frame;
  transport::Encode(static_cast<uint16_t>(type), body, &frame);
  return frame;
}

}  // namespace apollo11::sim
