#include "actors/reconciler/reconciler_turn.h"

#include <spdlog/spdlog.h>

#include <array>

#include "actors/internal_routes.h"

namespace apollo11::actors {
namespace {

using RT = ReconcilerTurn;
const std::array<Route<RT>, 2> kReconcilerFromScheduler = {{
    {InternalType::kWatchDeadlines, &Decoded<RT, WatchDeadlines, &RT::OnWatch>},
    {InternalType::kUnwatch, &Decoded<RT, Unwatch, &RT::OnUnwatch>},
}};
const std::array<Route<RT>, 2> kReconcilerFromDispatcher = {{
    {InternalType::kWorkersSeen, &Decoded<RT, WorkersSeen, &RT::OnWorkersSeen>},
    {InternalType::kWorkerLeft, &Decoded<RT, WorkerLeft, &RT::OnWorkerLeft>},
}};

}  // namespace

void ReconcilerTurn::FromScheduler(const transport::Envelope& env) {
  RouteMessage(*this, kReconcilerFromScheduler, env);
}

void ReconcilerTurn::FromDispatcher(const transport::Envelope& env) {
  RouteMessage(*this, kReconcilerFromDispatcher, env);
}

void ReconcilerTurn::End(ReconcilerFrames* out) {
  const Micros now = clock_->Steady();
  for (const WorkerLost& lost : core_.LostWorkers(now)) {
    spdlog::warn("reconciler: {}", lost.reason);
    AddFrame(&out->to_dispatcher, InternalType::kWorkerLost, lost);
  }
  DeadlineExceeded expired = core_.Expired(now);
  if (!expired.exceeded.empty()) {
    AddFrame(&out->to_scheduler, InternalType::kDeadlineExceeded, expired);
  }
}

}  // namespace apollo11::actors
