#pragma once
// The reconciler's logic: worker liveness and coordinator-side deadlines.
// A worker is lost when nothing was heard from it for `liveness` heartbeat
// intervals; an execution is timed out by the coordinator when no result came
// within its timeout plus the kill grace plus slack, in case its worker is
// stuck. Pure: time comes in as arguments, all of it Clock::Steady().

#include <map>
#include <queue>
#include <set>
#include <string>
#include <vector>

#include "actors/internal_messages.h"
#include "common/clock.h"
#include "common/duration.h"
#include "observability/coordinator_metrics.h"

namespace apollo11::actors {

struct ReconcilerOptions {
  Millis heartbeat{10000};
  int liveness = 3;
  observability::CoordinatorMetrics* metrics = nullptr;  // optional; must outlive the core
};

class ReconcilerCore {
 public:
  explicit ReconcilerCore(ReconcilerOptions options) : options_(options) {
    if (!options_.metrics) options_.metrics = observability::CoordinatorMetrics::Inert();
  }

  // A full snapshot from the dispatcher: listed workers are tracked (their
  // last_seen only moves forward), unlisted ones are forgotten.
  void OnWorkersSeen(const WorkersSeen& seen);
  // One worker left: it alone is forgotten.
  void OnWorkerLeft(const WorkerLeft& left);
  void OnWatch(const WatchDeadlines& watch);
  void OnUnwatch(const Unwatch& unwatch);

  // Workers silent for longer than heartbeat * liveness at `now`; they are
  // forgotten here (the dispatcher hands their executions back). Called at
  // least every heartbeat; a gap of heartbeat x liveness between two calls is this
  // coordinator's own stall, and is not counted as anyone's silence.
  std::vector<WorkerLost> LostWorkers(Micros now);
  // Deadlines that passed at `now` and were not unwatched.
  DeadlineExceeded Expired(Micros now);
  // The earliest deadline still watched, 0 when none.
  Micros NextDeadline() const;
  size_t watched() const { return watched_.size(); }
  // Workers whose liveness is tracked.
  size_t tracked_workers() const { return last_seen_.size(); }

 private:
  struct Due {
    Micros at;
    std::string exec_id;
    uint32_t attempt;
    bool operator>(const Due& o) const { return at > o.at; }
  };
  ReconcilerOptions options_;
  std::map<std::string, Micros> last_seen_;
  Micros last_check_ = 0;  // the previous LostWorkers (Steady())
  std::priority_queue<Due, std::vector<Due>, std::greater<>> heap_;
  std::map<std::pair<std::string, uint32_t>, Deadline> watched_;
};

}  // namespace apollo11::actors
