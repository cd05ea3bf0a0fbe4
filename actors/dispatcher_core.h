#pragma once
// The dispatcher's logic, apart from its sockets: the table of workers (group,
// slots, credits, what each runs), the queue of READY executions waiting for
// a slot, and placement. It sends only against credit: a worker's credits are
// the slots it says are free, and nothing relies on ZeroMQ high-water marks.
//
// Single-threaded: the dispatcher actor's thread calls everything. Outbound
// frames are collected in DispatcherOutput; the actor sends them.

#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "actors/internal_messages.h"
#include "alerts/sink.h"
#include "common/clock.h"
#include "observability/coordinator_metrics.h"
#include "transport/codec.h"

namespace apollo11::actors {

struct DispatcherOptions {
  uint64_t epoch = 1;  // the coordinator's term; sent with DISPATCH, CANCEL, HEARTBEAT
  observability::CoordinatorMetrics* metrics = nullptr;  // optional; must outlive the core
  alerts::Sink* alerts = nullptr;  // gets worker_lost; null: no alerts; outlives the core
};

// Everything one step produced. `to_workers` frames are already encoded.
struct DispatcherOutput {
  std::vector<std::pair<std::string, std::string>> to_workers;  // identity, frame
  Placed placed;
  StartedBatch started;
  ResultBatch results;
  std::vector<WorkerGone> gone;
  std::vector<LogFetched> logs;
  void Clear();
};

// A read-only view of one worker, for `apollo11 workers` and tests.
struct WorkerSnapshot {
  std::string id, group;
  uint32_t slots = 0, credits = 0, running = 0;
  Micros last_seen = 0;
  int64_t expected_busy_ms = 0;
  std::vector<std::string> labels;  // sorted
  Micros joined_at = 0;             // this connection's first HELLO
  uint32_t losses = 0;              // times this id was declared lost since the coordinator started
};

class DispatcherCore {
 public:
  DispatcherCore(const Clock* clock, DispatcherOptions options);

  // A frame from a worker (after the ROUTER identity frame). Garbage is
  // counted and dropped.
  void OnWorkerFrame(const std::string& identity, const void* data, size_t size,
                     DispatcherOutput* out);
  // READY executions to place.
  void OnEnqueue(Enqueue&& enqueue);
  // Sends the DISPATCH of placements the scheduler has journaled. Until then
  // a placement only reserves the worker's slot (Place).
  void OnRelease(const ReleaseDispatch& release, DispatcherOutput* out);
  // After a coordinator restart: executions the journal says are RUNNING.
  // Each is kept by the worker that claims it (HELLO or RESULT) before
  // claim_until; the rest are handed back as lost by Place.
  void OnAdopt(const AdoptRunning& adopt);
  void OnAcks(const AckResults& acks, DispatcherOutput* out);
  void OnCancel(const CancelExecs& cancel, DispatcherOutput* out);
  // Forwards a log request to its worker, or answers it with an error when
  // that worker is not connected.
  void OnLogFetch(const LogFetch& fetch, DispatcherOutput* out);
  // The reconciler declared a worker lost: forget it and hand its executions
  // back to the scheduler.
  void OnWorkerLost(const WorkerLost& lost, DispatcherOutput* out);
  // Sending to `identity` failed (the peer is gone): same as lost.
  void OnSendFailed(const std::string& identity, DispatcherOutput* out);

  // Places queued executions on workers with credit (nothing while paused).
  void Place(DispatcherOutput* out);
  // While the scheduler cannot journal (disk full), nothing new is placed:
  // every placement would be a RUNNING transition it cannot record.
  void SetPlacementPaused(bool paused) { placement_paused_ = paused; }
  bool placement_paused() const { return placement_paused_; }
  // Publishes the queue and worker gauges, at most every 100 ms (the cost is
  // one pass over the workers); a skipped update is due at GaugesDue().
  void PublishGauges();
  // When a skipped gauge update is due; 0 when none is pending.
  Micros GaugesDue() const;
  // Periodic: a HEARTBEAT to every worker.
  void Heartbeat(DispatcherOutput* out);
  // Periodic reconciliation: asks each worker about the executions we
  // believe it runs. One it does not hold (a DISPATCH or a report was lost)
  // is handed back to the scheduler and its slot's credit restored.
  void Probe(DispatcherOutput* out);
  // Liveness report for the reconciler.
  WorkersSeen Seen() const;

  size_t queued() const { return queued_; }
  size_t reserved() const { return reserved_.size(); }
  size_t unclaimed() const { return orphans_.size(); }
  size_t workers() const { return workers_.size(); }
  bool HasWorker(const std::string& id) const { return workers_.count(id) > 0; }
  uint64_t dropped_frames() const { return dropped_frames_; }
  std::vector<WorkerSnapshot> Snapshot() const;
  // Fills the queue-health fields of `snapshot` (see WorkersSnapshot) as of
  // `now`, and starts measuring heartbeat gaps afresh.
  void TakeHealth(Micros now, WorkersSnapshot* snapshot);

 private:
  struct Worker {
    std::string id, group;
    uint32_t slots = 0, credits = 0;
    std::unordered_map<std::string, uint32_t> running;  // exec_id -> attempt
    std::unordered_map<std::string, int64_t> expected;  // exec_id -> expected ms
    std::unordered_set<std::string> rejoined;  // probed after a HELLO that did not list them
    Micros last_seen = 0;
    int64_t expected_busy_ms = 0;
    std::vector<std::string> labels;  // from HELLO, sorted and unique
    Micros joined_at = 0;
  };
  // Queue order within a group: higher priority first, then arrival order.
  using QueueKey = std::pair<int32_t, uint64_t>;  // (-priority, seq)

  // Drops a worker, handing its executions back; false when it was unknown.
  bool Forget(const std::string& identity, const std::string& reason, DispatcherOutput* out);
  // A worker_lost alert for what Forget just handed back.
  void AlertLost(const WorkerGone& gone);
  template <class T>
  void Send(const std::string& identity, transport::MsgType type, const T& body,
            DispatcherOutput* out);
  void Finish(Worker& w, const std::string& exec_id);
  void Dequeue(const std::string& exec_id);
  // `identity` holds (exec_id, attempt): if it is a recovered RUNNING
  // execution nobody has claimed yet, it becomes that worker's; true then.
  // `w` is null for a worker that has not said HELLO yet.
  bool Claim(const std::string& identity, Worker* w, const std::string& exec_id, uint32_t attempt);
  // Orphans nobody claimed in time are handed back to the scheduler.
  void ReleaseUnclaimed(Micros now, DispatcherOutput* out);
  // A reservation that will never be released (refused, canceled): the slot
  // is free again.
  void DropReservation(const std::string& exec_id);

  const Clock* clock_;
  DispatcherOptions options_;
  std::map<std::string, Worker> workers_;
  std::unordered_map<std::string, std::map<QueueKey, QueuedExec>> queues_;          // by group
  std::unordered_map<std::string, std::pair<std::string, QueueKey>> queued_index_;  // exec id
  size_t queued_ = 0;
  struct Orphan {
    uint32_t attempt = 0;
    std::string worker_id;  // where the journal last saw it
    int64_t expected_ms = 0;
    Micros claim_until = 0;
  };
  std::unordered_map<std::string, Orphan> orphans_;  // exec id -> recovered RUNNING
  Micros next_claim_deadline_ = 0;                   // earliest orphan claim_until
  struct Reservation {
    std::string worker_id;
    uint32_t attempt = 0;
    std::string frame;  // the encoded DISPATCH, sent on release
  };
  std::unordered_map<std::string, Reservation> reserved_;  // exec id -> placed, not yet sent
  uint64_t seq_ = 0;
  uint64_t dropped_frames_ = 0;
  std::unordered_set<std::string> other_version_peers_;  // told once that their version differs
  // Losses per worker id (not BYE), kept after the worker is forgotten so
  // that `apollo11 workers` shows a flapping worker when it rejoins. One
  // entry per id ever lost: bounded by the fleet.
  std::unordered_map<std::string, uint32_t> losses_;
  bool placement_paused_ = false;
  Micros gauges_published_ = 0;
  bool gauges_pending_ = false;
  Micros min_gap_ = 0, max_gap_ = 0;  // between frames of one worker, since TakeHealth
};

}  // namespace apollo11::actors
