#pragma once
// The worker's logic, apart from its socket and from what runs tasks: turns
// DISPATCH into attempts on a TaskRunner (executor/task_runner.h), reports STARTED and RESULT,
// keeps every result until the coordinator ACKs it (resending meanwhile), grants credit as slots
// free up, heartbeats, and notices when the coordinator has gone quiet.
//
// Delivery: DISPATCH is deduplicated by (exec_id, attempt), so a duplicate is
// harmless; commands from an epoch older than the newest seen are refused.
//
// Queue: the worker grants credit for slots + prefetch executions (a prefetch
// that adapts to its tasks' durations by default: actors/worker/queue_depth.h). One that
// arrives while every slot is busy waits in a local FIFO and starts the
// moment a slot frees (no round trip to the coordinator). A queued execution
// is held (listed in HELLO, "holds it" to a PROBE); STARTED is sent when it
// really starts; CANCEL removes it without starting it (a CANCELED result).
// Single-threaded: the worker actor's thread calls everything.

#include <deque>
#include <map>
#include <string>
#include <vector>

#include "actors/worker/coordinator_follower.h"
#include "actors/worker/log_slices.h"
#include "actors/worker/node_log_reader.h"
#include "actors/worker/queue_depth.h"
#include "common/clock.h"
#include "common/duration.h"
#include "common/log_folder.h"
#include "executor/exec_types.h"
#include "executor/task_runner.h"
#include "observability/worker_metrics.h"
#include "storage/outbox.h"
#include "transport/codec.h"
#include "transport/messages.h"

namespace apollo11::actors {

struct WorkerOptions {
  std::string worker_id;
  std::string group = "default";
  uint32_t slots = 1;
  // Executions held beyond `slots`, queued until a slot frees; the credit
  // granted is slots + prefetch. With adapt_prefetch, the most it queues:
  // the depth moves between PrefetchFloor(slots) and this by how long its
  // tasks take (actors/worker/queue_depth.h); without, always this many.
  uint32_t prefetch = 0;
  bool adapt_prefetch = false;
  std::vector<std::string> labels;
  Millis heartbeat{10000};
  int liveness = 3;
  Millis result_resend{1000};  // resend an unacknowledged RESULT this often
  // This node's own JSON log (STATE_DIR/worker-ID/worker.log). Not read by
  // the core: the worker actor gives it a FileNodeLogReader over this file.
  std::string node_log_file;
  // How often Tick logs a "health" line (running, slots, unacknowledged
  // results, time since the coordinator was last heard); 0 = never.
  Millis health_interval{60000};
  // Test hook (fault injection): drop this many DISPATCH messages as if the
  // network lost them. Set from $APOLLO11_TEST_DROP_DISPATCH by apollo11-node.
  int drop_dispatches = 0;
  // The --connect endpoints, comma-separated (transport::ParseEndpointList;
  // an unreadable list is taken as one endpoint): the coordinators the
  // worker follows (CoordinatorFollower), named in the lines that say one
  // cannot be reached and, after them, that it was.
  std::string coordinator_endpoint;
  observability::WorkerMetrics* metrics = nullptr;  // optional; must outlive the core
};

// Applies a --prefetch flag to `w` (its slots set): N >= 0 fixes the depth
// at N; a negative flag makes it adaptive, up to PrefetchCeiling(slots).
inline void SetPrefetchFlag(int flag, WorkerOptions* w) {
  w->adapt_prefetch = flag < 0;
  w->prefetch = flag < 0 ? PrefetchCeiling(w->slots) : static_cast<uint32_t>(flag);
}

class WorkerCore {
 public:
  // `runner`, `clock`, `outbox` and `node_log` must outlive the core. With an
  // outbox, every result is stored there until ACKed, and the results a
  // previous process of this worker left unacknowledged are loaded to be
  // resent. `node_log` answers LOG_REQUEST stream 2 (null: "keeps no log
  // file"); captured stdout/stderr are read through the runner.
  WorkerCore(executor::TaskRunner* runner, const Clock* clock, WorkerOptions options,
             storage::Outbox* outbox = nullptr, const NodeLogReader* node_log = nullptr);

  // Frames to send to the coordinator, oldest first; the actor sends and
  // clears them.
  std::vector<std::string>& outbox() { return outbox_; }
  // WATCH frames for the coordinators it does not follow, each with that
  // coordinator's index in the --connect list, sent at every HELLO and every
  // WatchInterval() (several coordinators only): the one that leads, or becomes
  // leader, learns where this worker is and tells it at once. The actor
  // sends them on those connections and clears them.
  std::vector<std::pair<size_t, std::string>>& watch_outbox() { return watch_outbox_; }

  // (Re)introduces the worker: HELLO with the executions it holds, then
  // CREDIT for its free slots. Call after (re)connecting.
  void Hello();
  // A frame from coordinator `from` (an index into the --connect list).
  // Garbage is counted and dropped; what a coordinator other than the
  // current one sends is filtered by CoordinatorFollower::OnFrame.
  void OnFrame(const void* data, size_t size, size_t from = 0);
  // The coordinators (the --connect list) and the one every frame in
  // outbox() is for: the leader as far as the worker knows.
  const CoordinatorFollower& coordinators() const { return follower_; }
  // Attempts the runner finished.
  void OnFinished(std::vector<executor::ExecOutcome>& finished);
  // Writes what this turn batched: the outbox erasures of the results ACKed
  // since the last call, in one transaction. Call once per turn, after the
  // frames were read (until then an ACKed result would only be resent after
  // a restart, which the coordinator ignores).
  void EndTurn();
  // Periodic work: heartbeat, resend unacknowledged results. Returns true
  // when the coordinator has been silent for `liveness` heartbeats (measured
  // on Clock::Steady, so a wall-clock step moves none of this): the caller
  // should reconnect with a fresh socket and call Hello().
  bool Tick();
  // When Tick next has something to do, on the steady clock.
  Micros NextTick() const;

  // Stops taking work: tells the coordinator it has no slots (so no credit)
  // while it finishes what it holds. Drained() is true once nothing runs and
  // every result is acknowledged; then the actor says BYE and leaves.
  void StartDrain();
  bool Drained() const;
  void Bye();

  size_t unacked_results() const;
  size_t running() const { return runner_->running(); }
  // Executions held but not started: waiting for a slot.
  size_t queued() const { return queue_.size(); }
  uint64_t dropped_frames() const { return dropped_frames_; }
  // "Not the leader" refusals dropped as older than the newest term seen.
  uint64_t stale_refusals() const { return stale_refusals_; }
  uint64_t epoch_seen() const { return epoch_seen_; }
  // True from Hello() until the coordinator is first heard after it.
  bool awaiting_hello_reply() const { return !heard_since_hello_; }
  // Why the coordinator refused this worker (REFUSED: its id is taken, its
  // key may not act as a worker, ...); empty until then. The actor stops.
  const std::string& refusal() const { return refusal_; }

 private:
  struct Entry {
    bool finished = false;
    transport::ResultMsg result;
    Micros last_sent = 0;     // steady clock
    bool log_events = false;  // not a noop: its start and end are logged
  };
  using Key = std::pair<std::string, uint32_t>;
  // A DISPATCH waiting for a slot.
  struct Queued {
    Key key;
    executor::ExecRequest request;
    std::string trace_id;
  };

  template <class T>
  void Send(transport::MsgType type, const T& body);
  // One handler per message a coordinator sends (OnFrame's table); each
  // returns false when the body does not decode, and never throws.
  bool OnDispatchFrame(const transport::Envelope& envelope);
  bool OnCancelFrame(const transport::Envelope& envelope);
  bool OnAckFrame(const transport::Envelope& envelope);
  bool OnHeartbeatFrame(const transport::Envelope& envelope);
  bool OnProbeFrame(const transport::Envelope& envelope);
  bool OnLogRequestFrame(const transport::Envelope& envelope);
  bool OnRefusedFrame(const transport::Envelope& envelope);
  // worker_follow.cc: the sender of the frame being handled says it is not
  // the leader and names `leader` ("" unknown): follow it (HELLO at once, or
  // after a heartbeat when no other coordinator is named).
  void FollowLeader(const std::string& leader);
  // Queues a WATCH for every coordinator but the current one.
  void WatchOthers();
  // How often WATCHes go out: every heartbeat, at least every second, so a
  // coordinator that just (re)started knows this worker before it can be
  // elected (the announcement reaches only workers it knows).
  Micros WatchInterval() const;
  static constexpr Micros kMaxWatchInterval = kMicrosPerSecond;
  // The current coordinator is silent past the liveness timeout, or did not
  // answer a HELLO within a heartbeat: the next one becomes current (several
  // coordinators only).
  void FollowNext();
  // Logs the counts of the lines log_folder_ held back whose floods ended.
  void LogFolded(Micros now);
  // worker_follow.cc: coordinator `from` speaks another protocol version
  // (`why`: the decoder's error, or the REFUSED that says so). Logged once
  // per coordinator (until it speaks this version); nothing else changes:
  // it is not heard, so the worker keeps saying HELLO, quietly, and moves
  // on through its list as from a silent coordinator.
  void OnOtherVersion(size_t from, const std::string& why);
  // True (after OnOtherVersion) when `envelope`, from coordinator `from`,
  // is a REFUSED naming a protocol mismatch; else false, and a coordinator
  // that speaks this version is no longer taken for one that does not.
  bool RefusedForVersion(const transport::Envelope& envelope, size_t from);
  bool SpeaksOtherVersion(size_t coordinator) const;
  // True for a "not the leader" REFUSED naming a leader of an epoch older
  // than the newest this worker has seen: sent before that term began (by
  // the standby the new leader was), it is dropped, not followed.
  bool StaleRefusal(const transport::Envelope& envelope);
  // A coordinator that was not current spoke in the newest epoch and the
  // frame was handled: it is current now; introduce ourselves unless the
  // frame's handler did (Hello() was called `hellos_before` times before).
  void Followed(uint64_t hellos_before);
  void OnDispatch(transport::Dispatch&& d);
  // Starts `request` on the runner now (the entry for `key` exists, not
  // finished): STARTED for anything but a noop, or a REJECTED result when
  // the runner refuses it.
  void Launch(const Key& key, const executor::ExecRequest& request, const std::string& trace_id);
  // Starts queued executions while a slot is free, oldest first; none while
  // the coordinator has been silent for liveness - 1 heartbeats (at least
  // one): it may be about to declare this worker lost and requeue them.
  void StartQueued();
  // Forgets every queued execution without running it or reporting it: the
  // coordinator declared this worker lost (or is about to), so it requeues
  // them, or hands them back when the next HELLO does not list them.
  void DropQueued(const std::string& why);
  // Removes a queued (not started) execution: a CANCELED result, its credit
  // back. False when it is not queued.
  bool CancelQueued(const Key& key);
  // Executions held and not finished: running or queued.
  uint32_t Held() const;
  // Finishes an attempt that never started (refused by the coordinator, or
  // the runner could not launch it): a REJECTED result with `error`.
  void FinishUnstarted(const Key& key, std::string error, bool retryable);
  // The "exited" (or "killed", "precheck_skipped") event of a finished attempt.
  void LogFinished(const transport::ResultMsg& r) const;
  void LogHealth(Micros now);
  // One warning once the coordinator has been silent for `liveness`
  // heartbeats (unless `reconnecting` says so already), naming the endpoint.
  void WarnIfUnreachable(Micros now, bool reconnecting);
  // Credit for `freed` executions given back, less what a shallower queue
  // withholds, plus what a deeper one adds (QueueDepth::OnFreed).
  void GrantCredit(uint32_t freed);
  void SendCredit(uint32_t n);
  // Queues the RESULTs of these finished entries and stores them in the
  // outbox (one transaction) until they are ACKed.
  void Report(const std::vector<Key>& keys);
  static std::string OutboxKey(const Key& key);

  executor::TaskRunner* runner_;
  const Clock* clock_;
  storage::Outbox* store_;
  LogSlices logs_;  // LOG_REQUEST answers
  WorkerOptions options_;
  std::vector<std::string> outbox_;
  std::vector<std::pair<size_t, std::string>> watch_outbox_;
  Micros last_watch_ = 0;           // the last WatchOthers (Steady())
  std::map<Key, Entry> entries_;    // queued, running or finished-but-unacknowledged
  std::deque<Queued> queue_;        // held, waiting for a slot, oldest first
  std::vector<std::string> acked_;  // outbox keys of ACKed results, erased by EndTurn
  uint32_t run_slots_;  // slots tasks run in (unlike options_.slots, kept while draining)
  QueueDepth depth_;    // how deep the queue is, and the credit that follows
  uint64_t epoch_seen_ = 0;
  // Steady-clock times (liveness, heartbeat and resend timers).
  Micros last_heard_ = 0;
  Micros last_heartbeat_ = 0;
  Micros last_hello_ = 0;
  // When the coordinator last sent a frame (or the core started): unlike
  // last_heard_, not reset by Hello, so silence since start is measured.
  Micros last_frame_ = 0;
  bool unreachable_said_ = false;  // warned, and not heard from since
  bool heard_since_hello_ = false;
  // Queued executions may start: false from the moment the worker changes
  // coordinator, finds its coordinator silent or sees a new term, until a
  // coordinator answers its HELLO (a heartbeat with answers_hello, or any
  // registered one of its term, or a DISPATCH). So a queue kept across a
  // failover never starts an execution the coordinator has meanwhile given
  // to another worker: the CANCEL for it comes before that answer.
  bool hello_answered_ = false;
  bool switching_ = false;  // the frame being handled made its sender current
  bool draining_ = false;   // HELLO may be lost if sent before the coordinator was up
  uint64_t dropped_frames_ = 0;
  uint64_t stale_refusals_ = 0;
  std::string refusal_;
  Micros next_health_ = 0;  // 0: not yet started
  CoordinatorFollower follower_;
  size_t frame_from_ = 0;  // the sender of the frame OnFrame is handling
  uint64_t hellos_ = 0;    // Hello() calls so far
  // FollowLeader moved on without saying HELLO: Tick says it a heartbeat
  // later to that coordinator rather than passing it over.
  bool hello_deferred_ = false;
  // Per coordinator (by index): the protocol mismatch logged, "" if none.
  std::vector<std::string> other_version_;
  // Following lines ("is not the leader", "is silent") repeat around a
  // failover: each is logged once per 10 s, with a count.
  LogFolder log_folder_{10 * kMicrosPerSecond};
};

}  // namespace apollo11::actors
