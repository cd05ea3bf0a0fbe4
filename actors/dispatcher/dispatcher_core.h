#pragma once
// The dispatcher's logic, apart from its sockets: the table of workers (group,
// slots, credits, what each runs), the queue of READY executions waiting for
// a slot, and placement. It sends only against credit: a worker's credits are
// the slots it says are free, and nothing relies on ZeroMQ high-water marks.
//
// Single-threaded: the dispatcher actor's thread calls everything. Outbound
// frames are collected in DispatcherOutput; the actor sends them.

#include <spdlog/spdlog.h>

#include <deque>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "actors/dispatcher/claim_window.h"
#include "actors/dispatcher/ready_queue.h"
#include "actors/dispatcher/watchers.h"
#include "actors/dispatcher/worker_protocol.h"
#include "actors/internal_messages.h"
#include "alerts/sink.h"
#include "common/clock.h"
#include "common/log_limiter.h"
#include "engine/placement.h"
#include "ha/role_view.h"
#include "observability/coordinator_metrics.h"
#include "transport/codec.h"
#include "transport/key_roles.h"

namespace apollo11::actors {

// The most slots one worker may offer, and the most workers registered at
// once: a HELLO beyond either is refused.
inline constexpr uint32_t kMaxWorkerSlots = 4096;
// The most executions one worker may queue beyond its slots (HELLO's
// prefetch); a larger offer is cut to this.
inline constexpr uint32_t kMaxWorkerPrefetch = 1024;
inline constexpr size_t kMaxWorkers = 10000;
// Peer-supplied text the coordinator keeps (journal, alerts, `workers`) is
// cut to these many bytes: a RESULT's error and stderr tail, a HELLO's group
// and each label (a HELLO with more than kMaxWorkerLabels labels is refused).
inline constexpr size_t kMaxResultErrorBytes = 4096;
inline constexpr size_t kMaxStderrTailBytes = 16384;
inline constexpr size_t kMaxWorkerNameBytes = 128;
inline constexpr size_t kMaxWorkerLabels = 64;

// A worker id is 1 to 128 printable ASCII characters, no space and no '/'
// (it names a directory, STATE_DIR/worker-ID, and the socket identity is
// ID/NONCE), and not "." or "..".
bool IsValidWorkerId(const std::string& id);

// Cuts `text` to at most `max` bytes, at a UTF-8 character boundary, saying
// so at its end.
void CapText(std::string* text, size_t max);

// A peer-supplied string (identity, exec id) fit for a log line: printable
// ASCII kept, the rest as \xNN, cut after 128 bytes.
std::string Printable(const std::string& s);

struct DispatcherOptions {
  uint64_t epoch = 1;  // the coordinator's term; sent with DISPATCH, CANCEL, HEARTBEAT
  // CURVE: every frame must come from a key with the `worker` role.
  bool require_worker_role = false;
  // Whether a connection (ROUTER identity) is there, found by sending it a
  // HEARTBEAT of `epoch`; asked when a HELLO claims the id of a registered
  // worker from another connection, and to announce a new term to watching
  // workers. Null: assume it is (the claim is refused; the announcement is
  // sent as a frame of the step's output).
  std::function<bool(const std::string& route)> connected;
  observability::CoordinatorMetrics* metrics = nullptr;  // optional; must outlive the core
  alerts::Sink* alerts = nullptr;  // gets worker_lost; null: no alerts; outlives the core
  // election: CoordinatorConfig::ha and ::standby. A standby refuses every
  // HELLO with "not the leader; the leader is WORKER_ENDPOINT" and drops
  // other worker frames.
  const ha::RoleView* ha = nullptr;
  bool standby = false;
  // The workers that watch this coordinator (WATCH), kept by the node
  // across the coordinator's restarts; null: none kept, none announced to.
  // Must outlive the core.
  Watchers* watchers = nullptr;
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
  uint32_t prefetch = 0;  // executions it queues beyond its slots: credits <= slots + this
};

class DispatcherCore {
 public:
  DispatcherCore(const Clock* clock, DispatcherOptions options);

  // A frame from a worker (after the ROUTER identity frame). What it does
  // depends on the peer's WorkerState: see the table in worker_protocol.cc.
  // Garbage is counted and dropped; a message its state does not allow, and
  // a RESULT or STARTED for an execution another worker holds, is refused
  // (counted in refused_frames and by reason in the metrics, logged at a
  // limited rate), never fatal.
  // `peer` is what the ZAP handler stamped on the connection (empty without
  // CURVE); the overload without it is an unauthenticated peer.
  void OnWorkerFrame(const std::string& identity, const transport::PeerAuth& peer, const void* data,
                     size_t size, DispatcherOutput* out);
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
  // one pass over the workers); a skipped update is due at GaugesDue(), a
  // Steady() time.
  void PublishGauges();
  // When a skipped gauge update is due; 0 when none is pending.
  Micros GaugesDue() const;
  // Periodic: a HEARTBEAT to every worker.
  void Heartbeat(DispatcherOutput* out);
  // A new leader's first turn: it will announce its term to every worker
  // that watched this coordinator since `heard_since` (Steady()), until
  // `until`. A worker follows a newer term at once and says HELLO, so the
  // claim window closes on workers that rejoined, not on a timer.
  void StartAnnouncing(Micros heard_since, Micros until);
  // Each turn while announcing: a HEARTBEAT of the term (not marked
  // unregistered: the worker keeps its queue for the claim window) to each
  // watcher whose connection is back (a role change
  // rebinds the sockets; workers reconnect within libzmq's reconnect
  // interval). Stops at `until` or when every watcher was told.
  void Announce(Micros now, DispatcherOutput* out);
  bool announcing() const { return !to_announce_.empty(); }
  // Periodic reconciliation: asks each worker about the executions we
  // believe it runs. One it does not hold (a DISPATCH or a report was lost)
  // is handed back to the scheduler and its slot's credit restored.
  void Probe(DispatcherOutput* out);
  // Liveness report for the reconciler: when each worker was last heard, on
  // the steady clock (compare with Clock::Steady()).
  WorkersSeen Seen() const;

  size_t queued() const { return ready_.size(); }
  size_t reserved() const { return reserved_.size(); }
  size_t unclaimed() const { return claims_.size(); }
  size_t workers() const { return workers_.size(); }
  bool HasWorker(const std::string& id) const { return workers_.count(id) > 0; }
  uint64_t dropped_frames() const { return dropped_frames_; }
  // Frames refused because the peer's state does not allow them (a CREDIT
  // before HELLO, a DISPATCH from a worker, ...); the unreadable ones among
  // them are in dropped_frames too.
  uint64_t refused_frames() const { return refused_frames_; }
  // Entries kept about peers that are not registered workers (losses per
  // id, peers of another protocol version): bounded, whatever peers send.
  size_t remembered_peers() const { return losses_.size() + other_version_peers_.size(); }
  std::vector<WorkerSnapshot> Snapshot() const;
  // True once after a worker joined, said HELLO again or was dropped since
  // the last call: the caller publishes a snapshot now rather than at the
  // next heartbeat, so a worker is listed from its HELLO.
  bool TakeRosterChanged() { return std::exchange(roster_changed_, false); }
  // Fills the queue-health fields of `snapshot` (see WorkersSnapshot) as of
  // `now`, and starts measuring heartbeat gaps afresh.
  void TakeHealth(Micros now, WorkersSnapshot* snapshot);

 private:
  struct Worker {
    std::string id, group;
    std::string route;  // its connection's ROUTER identity (ID/NONCE, or ID for an old worker)
    std::string key;    // its CURVE key; "" without CURVE
    uint32_t slots = 0, credits = 0;
    uint32_t prefetch = 0;  // executions it queues beyond its slots
    // What it may hold at once, running or queued: credit never exceeds
    // this minus what it holds.
    uint32_t capacity() const { return slots + prefetch; }
    std::unordered_map<std::string, uint32_t> running;  // exec_id -> attempt (running or queued)
    std::unordered_map<std::string, int64_t> expected;  // exec_id -> expected ms
    std::unordered_set<std::string> rejoined;  // probed after a HELLO that did not list them
    Micros last_seen = 0;                      // wall clock, shown to users
    Micros last_heard = 0;                     // steady clock, for liveness and heartbeat gaps
    int64_t expected_busy_ms = 0;
    std::vector<std::string> labels;  // from HELLO, sorted and unique
    Micros joined_at = 0;
  };

  // One decoded frame from connection `identity`; `worker` is null while
  // unregistered.
  struct Frame {
    const std::string& identity;
    Worker* worker;
    const transport::Envelope& envelope;
    const transport::PeerAuth& peer;
  };
  // The worker registered on connection `route`, or null.
  Worker* WorkerAt(const std::string& route);
  // False (refused, counted) when the frame's key may not act as a worker,
  // or differs from the key its worker registered with.
  bool Admitted(const Frame& f, DispatcherOutput* out);
  // The worker a HELLO registers or re-registers, or null when it is refused
  // (REFUSED sent, counted, logged): absurd slots, an unusable id, the id of
  // a live worker on another connection or of another key.
  Worker* Register(const Frame& f, const transport::Hello& hello, DispatcherOutput* out);
  void RefuseHello(const Frame& f, observability::WorkerRefusal reason, const std::string& why,
                   DispatcherOutput* out);
  bool RouteConnected(const std::string& route) const;
  // The handlers of WorkerAction. Those returning bool return false when the
  // body does not decode (the frame is counted as dropped).
  bool OnHello(const Frame& f, DispatcherOutput* out);
  // A WATCH: remembered (never refused, never answered by a standby); a
  // leader answers a worker not registered here with a HEARTBEAT of its term.
  void OnWatch(const Frame& f, DispatcherOutput* out);
  bool OnCredit(const Frame& f);
  bool OnStarted(const Frame& f, DispatcherOutput* out);
  bool OnResult(const Frame& f, DispatcherOutput* out);
  bool OnProbeReply(const Frame& f, DispatcherOutput* out);
  bool OnLogReply(const Frame& f, DispatcherOutput* out);
  void Refuse(const Frame& f, WorkerState state, WorkerAction action, DispatcherOutput* out);
  // Counts a refusal for `reason` and logs the line `what()` makes, unless
  // too many were logged lately (then it is only counted).
  template <class Describe>
  void CountRefusal(observability::WorkerRefusal reason, Describe what) {
    uint64_t suppressed = 0;
    if (!CountRefusal(reason, &suppressed)) return;
    if (suppressed == 0) {
      spdlog::warn("{}", what());
    } else {
      spdlog::warn("{} ({} more refused frames not logged)", what(), suppressed);
    }
  }
  // Counts it; true (with the number held back since) when it may be logged.
  bool CountRefusal(observability::WorkerRefusal reason, uint64_t* suppressed);
  // True when a worker other than `w` holds (exec_id, attempt): placed or
  // claimed there, or waiting in the claim window for it. Claims it for `w`
  // first when the window names `w`.
  bool HeldByAnother(Worker& w, const std::string& exec_id, uint32_t attempt);
  // Records that `w` holds (exec_id, attempt).
  void Hold(Worker& w, const std::string& exec_id, uint32_t attempt, int64_t expected_ms);
  // A heartbeat marked unregistered: the peer says HELLO again.
  void AskHello(const std::string& identity, DispatcherOutput* out);
  // Any frame from a registered worker: it is alive.
  void Touch(Worker& w);
  // For a worker saying HELLO again: a PROBE for what we placed there that
  // its HELLO does not list (marked rejoined), or nothing.
  std::vector<transport::Probe> RejoinProbes(Worker& w, const transport::Hello& hello);
  // Drops a worker, handing its executions back; false when it was unknown.
  // `bye`: it said BYE (logged at info when it held nothing, else warn).
  bool Forget(const std::string& identity, const std::string& reason, DispatcherOutput* out,
              bool bye = false);
  // A worker_lost alert for what Forget just handed back.
  void AlertLost(const WorkerGone& gone);
  // A frame from `identity` in worker-protocol `version`, not this build's:
  // a REFUSED in that version naming both and the upgrade order (on a
  // standby: the leader, as to anyone), so the worker learns why it is not
  // heard. Nothing for a version too old to have REFUSED.
  void TellOtherVersion(const std::string& identity, uint32_t version, DispatcherOutput* out);
  // Queues one frame of `type` to the worker at `identity`.
  template <class T>
  void Send(const std::string& identity, transport::MsgType type, const T& body,
            DispatcherOutput* out) {
    std::string frame;
    transport::Encode(static_cast<uint16_t>(type), body, &frame);
    out->to_workers.emplace_back(identity, std::move(frame));
  }
  void Finish(Worker& w, const std::string& exec_id);
  // The workers of `group` with credit, as placement sees them, and each
  // one's entry in workers_.
  void CandidateViews(const std::string& group, std::vector<engine::WorkerView>* views,
                      std::vector<Worker*>* by_view);
  // Places `exec` on `w`: reserves the slot and keeps the DISPATCH until
  // OnRelease.
  void Reserve(Worker& w, QueuedExec& exec, Micros now, DispatcherOutput* out);
  // `identity` holds (exec_id, attempt): if it is a recovered RUNNING
  // execution nobody has claimed yet, it becomes that worker's; true then.
  // `w` is null for a worker that has not said HELLO yet.
  bool Claim(const std::string& identity, Worker* w, const std::string& exec_id, uint32_t attempt);
  // A reservation that will never be released (refused, canceled): the slot
  // is free again.
  void DropReservation(const std::string& exec_id);

  const Clock* clock_;
  DispatcherOptions options_;
  bool roster_changed_ = false;                          // see TakeRosterChanged
  std::map<std::string, Worker> workers_;                // by worker id
  std::unordered_map<std::string, std::string> routes_;  // connection -> worker id
  ReadyQueue ready_;
  ClaimWindow claims_;
  std::vector<std::string> to_announce_;  // watcher routes not yet told of this term
  Micros announce_until_ =
      0;  // Steady(): StartAnnouncing's `until`  // recovered RUNNING executions not yet claimed
  struct Reservation {
    std::string worker_id;
    uint32_t attempt = 0;
    std::string frame;  // the encoded DISPATCH, sent on release
  };
  std::unordered_map<std::string, Reservation> reserved_;  // exec id -> placed, not yet sent
  struct Holder {
    std::string worker_id;
    uint32_t attempt = 0;
  };
  // exec id -> the worker it was placed on or claimed by (kept with each
  // worker's `running`): who may report it.
  std::unordered_map<std::string, Holder> holders_;
  LogLimiter refusal_log_{10, kMicrosPerSecond};
  uint64_t dropped_frames_ = 0;
  uint64_t refused_frames_ = 0;
  // Bound on the peers remembered below: random identities must not grow
  // them forever.
  static constexpr size_t kMaxRemembered = 4096;
  std::unordered_set<std::string> other_version_peers_;  // told once that their version differs
  // LOG_REQUESTs sent and not answered: request id -> the worker asked.
  std::unordered_map<uint64_t, std::string> log_requests_;
  // Losses per worker id (not BYE), kept after the worker is forgotten so
  // that `apollo11 workers` shows a flapping worker when it rejoins; the
  // oldest ids beyond kMaxRemembered are forgotten (loss_order_).
  std::unordered_map<std::string, uint32_t> losses_;
  std::deque<std::string> loss_order_;
  // Counts a loss of worker `id`.
  void NoteLoss(const std::string& id);
  // The connection of registered worker `id`, or null.
  const std::string* RouteOf(const std::string& id) const;
  bool placement_paused_ = false;
  Micros gauges_published_ = 0;
  bool gauges_pending_ = false;
  Micros min_gap_ = 0, max_gap_ = 0;  // between frames of one worker (steady), since TakeHealth
};

}  // namespace apollo11::actors
