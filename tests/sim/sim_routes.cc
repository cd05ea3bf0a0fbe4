#include "tests/sim/sim_routes.h"

#include <algorithm>
#include <catch2/catch.hpp>

namespace apollo11::sim {
namespace {

using actors::Decoded;
using actors::InternalType;
using actors::Route;

// Decodes `frame` as the loops' DrainSocket does and hands it to its row of
// `table`. Between the simulator's own actors a malformed frame or an
// unlisted type is a bug: it fails the test instead of being dropped.
template <class Self, size_t N>
void RouteFrame(Self& self, const std::array<Route<Self>, N>& table, const std::string& frame) {
  auto env = transport::DecodeEnvelope(frame.data(), frame.size(), actors::InternalLimits());
  REQUIRE(env.ok());
  const bool listed = std::any_of(table.begin(), table.end(), [&](const Route<Self>& r) {
    return static_cast<uint16_t>(r.type) == env->type;
  });
  INFO(Self::kName << " got message type " << env->type);
  REQUIRE(listed);
  actors::RouteMessage(self, table, *env);
}

using S = SchedulerInbox;
const std::array<Route<S>, 6> kSchedulerFromDispatcher = {{
    {InternalType::kPlaced, &Decoded<S, actors::Placed, &S::OnPlaced>},
    {InternalType::kStartedBatch, &Decoded<S, actors::StartedBatch, &S::OnStarted>},
    {InternalType::kResultBatch, &Decoded<S, actors::ResultBatch, &S::OnResults>},
    {InternalType::kWorkerGone, &Decoded<S, actors::WorkerGone, &S::OnWorkerGone>},
    {InternalType::kWorkersSnapshot, &Decoded<S, actors::WorkersSnapshot, &S::OnWorkersSnapshot>},
    {InternalType::kLogFetched, &Decoded<S, actors::LogFetched, &S::OnLogFetched>},
}};
const std::array<Route<S>, 1> kSchedulerFromReconciler = {{
    {InternalType::kDeadlineExceeded,
     &Decoded<S, actors::DeadlineExceeded, &S::OnDeadlineExceeded>},
}};

using D = DispatcherInbox;
const std::array<Route<D>, 7> kDispatcherFromScheduler = {{
    {InternalType::kEnqueue, &Decoded<D, actors::Enqueue, &D::OnEnqueue>},
    {InternalType::kAdoptRunning, &Decoded<D, actors::AdoptRunning, &D::OnAdopt>},
    {InternalType::kAckResults, &Decoded<D, actors::AckResults, &D::OnAcks>},
    {InternalType::kCancelExecs, &Decoded<D, actors::CancelExecs, &D::OnCancel>},
    {InternalType::kReleaseDispatch, &Decoded<D, actors::ReleaseDispatch, &D::OnRelease>},
    {InternalType::kLogFetch, &Decoded<D, actors::LogFetch, &D::OnLogFetch>},
    {InternalType::kPausePlacement, &Decoded<D, actors::PausePlacement, &D::OnPausePlacement>},
}};
const std::array<Route<D>, 1> kDispatcherFromReconciler = {{
    {InternalType::kWorkerLost, &Decoded<D, actors::WorkerLost, &D::OnWorkerLost>},
}};

using R = ReconcilerInbox;
const std::array<Route<R>, 2> kReconcilerFromScheduler = {{
    {InternalType::kWatchDeadlines, &Decoded<R, actors::WatchDeadlines, &R::OnWatch>},
    {InternalType::kUnwatch, &Decoded<R, actors::Unwatch, &R::OnUnwatch>},
}};
const std::array<Route<R>, 2> kReconcilerFromDispatcher = {{
    {InternalType::kWorkersSeen, &Decoded<R, actors::WorkersSeen, &R::OnWorkersSeen>},
    {InternalType::kWorkerLeft, &Decoded<R, actors::WorkerLeft, &R::OnWorkerLeft>},
}};

}  // namespace

void SchedulerInbox::FromDispatcher(const std::string& frame) {
  RouteFrame(*this, kSchedulerFromDispatcher, frame);
}

void SchedulerInbox::FromReconciler(const std::string& frame) {
  RouteFrame(*this, kSchedulerFromReconciler, frame);
}

void DispatcherInbox::OnEnqueue(actors::Enqueue m) {
  *answer_ticket = std::max(*answer_ticket, m.ticket);
  core->OnEnqueue(std::move(m));
}

void DispatcherInbox::FromScheduler(const std::string& frame) {
  RouteFrame(*this, kDispatcherFromScheduler, frame);
}

void DispatcherInbox::FromReconciler(const std::string& frame) {
  RouteFrame(*this, kDispatcherFromReconciler, frame);
}

void ReconcilerInbox::FromScheduler(const std::string& frame) {
  RouteFrame(*this, kReconcilerFromScheduler, frame);
}

void ReconcilerInbox::FromDispatcher(const std::string& frame) {
  RouteFrame(*this, kReconcilerFromDispatcher, frame);
}

}  // namespace apollo11::sim
