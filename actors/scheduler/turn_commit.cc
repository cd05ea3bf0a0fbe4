#include "actors/scheduler/turn_commit.h"

#include <algorithm>

#include "transport/codec.h"

namespace apollo11::actors {
namespace {

// Raised on every failed commit; the Notifier folds the retries of one
// outage into one delivery per fold window.
alerts::AlertEvent JournalErrorAlert(std::string summary, Micros now) {
  alerts::AlertEvent a;
  a.type = alerts::AlertType::kJournalError;
  a.ts = now;
  a.reason = "journal commit failed: " + std::move(summary);
  return a;
}

}  // namespace

TurnCommit::TurnCommit(SchedulerCore* core, JournalHealth* health, ClientSessions* sessions,
                       alerts::Sink* alerts)
    : core_(core), health_(health), sessions_(sessions), alerts_(alerts) {}

template <class T>
void TurnCommit::Add(std::vector<std::string>* to, InternalType type, const T& body) {
  to->emplace_back();
  transport::Encode(static_cast<uint16_t>(type), body, &to->back());
}

bool TurnCommit::BeginEarlyPlacement(InternalFrames* out) {
  core_->TakeEnqueue(&early_);
  if (early_.execs.empty()) return false;
  early_.ticket = ++early_ticket_;
  AddEnqueue(&out->to_dispatcher, &early_, EnqueueBudget());
  return true;
}

void TurnCommit::AddEnqueue(std::vector<std::string>* to, Enqueue* enqueue, size_t budget) {
  Enqueue chunk;
  size_t bytes = 0;
  for (QueuedExec& q : enqueue->execs) {
    const size_t size = transport::EncodedSize(transport::MsgType::kDispatch, q.dispatch);
    if (!chunk.execs.empty() && bytes + size > budget) {
      Add(to, InternalType::kEnqueue, chunk);
      chunk.execs.clear();
      bytes = 0;
    }
    bytes += size;
    chunk.execs.push_back(std::move(q));
  }
  chunk.ticket = enqueue->ticket;
  Add(to, InternalType::kEnqueue, chunk);
  enqueue->execs.clear();
}

void TurnCommit::OnPlaced(const Placed& placed) {
  core_->OnPlaced(placed);
  placed_ticket_ = std::max(placed_ticket_, placed.ticket);
}

bool TurnCommit::Commit(Micros wall_now, Micros steady_now, InternalFrames* out) {
  Status flushed = core_->Flush(&staged_);
  if (!flushed.ok()) {
    // Nothing was released; the staged work is retried. A full disk stops
    // progress (no promotion, no placement), never loses what is already
    // journaled, and queries keep being answered meanwhile.
    if (!health_->failing()) {
      Add(&out->to_dispatcher, InternalType::kPausePlacement,
          PausePlacement{true, flushed.message()});
    }
    health_->OnFailure(flushed, core_->staged_transitions(), steady_now, wall_now);
    if (alerts_) alerts_->Emit(JournalErrorAlert(health_->Summary(steady_now), wall_now));
    return false;
  }
  if (health_->failing()) {
    health_->OnSuccess(steady_now);
    Add(&out->to_dispatcher, InternalType::kPausePlacement, PausePlacement{false, ""});
  }
  sessions_->OnCommitted(staged_.progress, staged_.finished, std::move(staged_.changes));
  for (const RunFinished& f : staged_.finished) finished_runs_.push_back(f.run_id);
  if (!staged_.enqueue.execs.empty()) {
    AddEnqueue(&out->to_dispatcher, &staged_.enqueue, EnqueueBudget());
  }
  if (!staged_.adopt.execs.empty()) {
    Add(&out->to_dispatcher, InternalType::kAdoptRunning, staged_.adopt);
  }
  if (!staged_.release.execs.empty()) {
    Add(&out->to_dispatcher, InternalType::kReleaseDispatch, staged_.release);
  }
  if (!staged_.acks.acks.empty()) Add(&out->to_dispatcher, InternalType::kAckResults, staged_.acks);
  if (!staged_.cancels.execs.empty()) {
    Add(&out->to_dispatcher, InternalType::kCancelExecs, staged_.cancels);
  }
  if (!staged_.watch.deadlines.empty()) {
    Add(&out->to_reconciler, InternalType::kWatchDeadlines, staged_.watch);
  }
  if (!staged_.unwatch.execs.empty()) {
    Add(&out->to_reconciler, InternalType::kUnwatch, staged_.unwatch);
  }
  staged_.Clear();
  return true;
}

}  // namespace apollo11::actors
