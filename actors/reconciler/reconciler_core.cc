#include "actors/reconciler/reconciler_core.h"

namespace apollo11::actors {

void ReconcilerCore::OnWorkersSeen(const WorkersSeen& seen) {
  std::set<std::string> listed;
  for (const WorkerSeen& w : seen.workers) {
    Micros& last = last_seen_[w.worker_id];
    last = std::max(last, w.last_seen);
    listed.insert(w.worker_id);
  }
  // Workers the dispatcher no longer lists were removed there (BYE, lost).
  for (auto it = last_seen_.begin(); it != last_seen_.end();) {
    it = listed.count(it->first) ? std::next(it) : last_seen_.erase(it);
  }
}

void ReconcilerCore::OnWorkerLeft(const WorkerLeft& left) { last_seen_.erase(left.worker_id); }

void ReconcilerCore::OnWatch(const WatchDeadlines& watch) {
  for (const Deadline& d : watch.deadlines) {
    watched_[{d.exec_id, d.attempt}] = d;
    heap_.push({d.deadline, d.exec_id, d.attempt});
  }
}

void ReconcilerCore::OnUnwatch(const Unwatch& unwatch) {
  for (const transport::ExecRef& ref : unwatch.execs) watched_.erase({ref.exec_id, ref.attempt});
}

std::vector<WorkerLost> ReconcilerCore::LostWorkers(Micros now) {
  std::vector<WorkerLost> lost;
  const Micros heartbeat = options_.heartbeat.count() * kMicrosPerMilli;
  const Micros limit = heartbeat * options_.liveness;
  // This loop runs at least every heartbeat. A gap of a whole liveness
  // window is the coordinator's own stall (SIGSTOP, a host that stopped
  // scheduling it): its workers could not be heard meanwhile, so that time
  // is not silence.
  if (last_check_ != 0 && now - last_check_ >= limit) {
    const Micros stall = now - last_check_;  // a worker's window starts again
    for (auto& [id, seen] : last_seen_) seen = std::min(now, seen + stall);
  }
  last_check_ = now;
  for (auto it = last_seen_.begin(); it != last_seen_.end();) {
    Micros silent = now - it->second;
    if (silent > limit) {
      WorkerLost l;
      l.worker_id = it->first;
      l.reason = "worker " + it->first + " lost: no heartbeat for " +
                 FormatDuration(Millis(silent / kMicrosPerMilli));
      lost.push_back(std::move(l));
      options_.metrics->heartbeat_losses.Inc();
      it = last_seen_.erase(it);
    } else {
      ++it;
    }
  }
  return lost;
}

DeadlineExceeded ReconcilerCore::Expired(Micros now) {
  DeadlineExceeded out;
  while (!heap_.empty() && heap_.top().at <= now) {
    Due due = heap_.top();
    heap_.pop();
    auto it = watched_.find({due.exec_id, due.attempt});
    if (it == watched_.end()) continue;  // finished in time
    out.exceeded.push_back(it->second);
    watched_.erase(it);
  }
  return out;
}

Micros ReconcilerCore::NextDeadline() const {
  // The heap may hold unwatched entries; an early wake-up is harmless.
  return heap_.empty() ? 0 : heap_.top().at;
}

}  // namespace apollo11::actors
