#pragma once
// Messages between the coordinator's own actors (scheduler, dispatcher,
// reconciler) and between a node and its worker actor. They travel over
// inproc PAIR links as msgpack frames through the same codec as the wire
// protocol, with type codes from 64 up so they never collide with the
// worker protocol (transport/messages.h); the client protocol (96 and up)
// is actors/client_protocol.h. Nothing outside the process sees them, so
// their layout may change between releases.

#include <cstdint>
#include <msgpack.hpp>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "transport/codec.h"
#include "transport/messages.h"

namespace apollo11::actors {

// Links between this process's own actors: trusted peers, but batches can be
// large (a 100k-task snapshot, thousands of results with their output tails
// in one frame). SchedulerTurn splits large Enqueue batches by it.
inline transport::DecodeLimits InternalLimits() {
  transport::DecodeLimits l;
  l.max_frame = size_t{1} << 30;
  l.array = 10'000'000;
  l.map = 1'000'000;
  l.str = size_t{256} << 20;
  l.bin = size_t{256} << 20;
  return l;
}

enum class InternalType : uint16_t {
  // scheduler -> dispatcher
  kEnqueue = 64,  // executions that went READY, to be placed
  kAckResults,    // results now durable: ACK them to their workers
  kCancelExecs,   // kill these executions wherever they are
  // dispatcher -> scheduler
  kPlaced,        // executions sent to a worker (READY -> RUNNING)
  kStartedBatch,  // workers confirmed STARTED
  kResultBatch,   // workers reported RESULTs
  kWorkerGone,    // a worker left or was declared lost: its executions
  // dispatcher -> reconciler
  kWorkersSeen,  // every connected worker and when it was last heard (a full snapshot)
  // reconciler -> dispatcher
  kWorkerLost,  // declare a worker lost
  // scheduler -> reconciler
  kWatchDeadlines,  // executions to time out from the coordinator side
  kUnwatch,         // executions that finished
  // reconciler -> scheduler
  kDeadlineExceeded,
  // dispatcher -> scheduler, every heartbeat: who is there (for queries and explain)
  kWorkersSnapshot,
  // scheduler -> dispatcher, once after recovery: executions the journal says
  // are RUNNING, to be claimed by their workers or handed back
  kAdoptRunning,
  // scheduler -> dispatcher -> worker and back: `apollo11 logs`
  kLogFetch,
  kLogFetched,
  // scheduler -> dispatcher: these placements are journaled (READY ->
  // RUNNING): send their DISPATCH now
  kReleaseDispatch,
  // scheduler -> dispatcher: journal commits fail (disk full): place nothing
  // new until they succeed again
  kPausePlacement,
  // dispatcher -> reconciler: one worker left (BYE, or its connection is
  // gone): stop tracking it, and only it
  kWorkerLeft,
  // node -> worker actor: drain; worker actor -> node: drained
  kDrain,
};

// One READY execution and everything a worker needs to run it.
struct QueuedExec {
  std::string group;
  int32_t priority = 0;
  int64_t ready_at = 0;
  int64_t expected_ms = 1000;  // P50 estimate used for placement
  transport::Dispatch dispatch;
  std::vector<std::string> labels;  // placed only on a worker having all of them
  MSGPACK_DEFINE(group, priority, ready_at, expected_ms, dispatch, labels);
};

// `ticket` != 0: the scheduler sent this before committing the executions'
// READY and waits (briefly) for the Placed that echoes the ticket, so that
// their READY -> RUNNING joins the same commit: one fsync per dependency hop
// instead of two.
struct Enqueue {
  std::vector<QueuedExec> execs;
  uint64_t ticket = 0;
  MSGPACK_DEFINE(execs, ticket);
};

struct WorkerExecRef {
  std::string worker_id;
  std::string exec_id;
  uint32_t attempt = 0;
  MSGPACK_DEFINE(worker_id, exec_id, attempt);
};

// Placements whose READY -> RUNNING is committed. A DISPATCH leaves only
// then, so every execution a worker may be running is RUNNING in the journal.
struct ReleaseDispatch {
  std::vector<transport::ExecRef> execs;
  MSGPACK_DEFINE(execs);
};

struct AckResults {
  std::vector<WorkerExecRef> acks;
  MSGPACK_DEFINE(acks);
};

struct CancelExecs {
  std::vector<transport::ExecRef> execs;
  std::string reason;
  MSGPACK_DEFINE(execs, reason);
};

// Sent when something was placed, and always in answer to an Enqueue with a
// ticket (then `ticket` is the newest one the dispatcher has taken, placed or
// not: the scheduler stops waiting).
struct Placed {
  std::vector<WorkerExecRef> placed;
  int64_t at = 0;
  uint64_t ticket = 0;
  MSGPACK_DEFINE(placed, at, ticket);
};

struct StartedFrom {
  std::string worker_id;
  transport::Started started;
  MSGPACK_DEFINE(worker_id, started);
};
struct StartedBatch {
  std::vector<StartedFrom> items;
  MSGPACK_DEFINE(items);
};

struct ResultFrom {
  std::string worker_id;
  transport::ResultMsg result;
  MSGPACK_DEFINE(worker_id, result);
};
struct ResultBatch {
  std::vector<ResultFrom> items;
  MSGPACK_DEFINE(items);
};

struct WorkerGone {
  std::string worker_id;
  std::string reason;  // "worker w3 lost: no heartbeat for 300ms", "worker w3 left (BYE)"
  std::vector<transport::ExecRef> execs;  // executions it held
  MSGPACK_DEFINE(worker_id, reason, execs);
};

// One execution the journal says is RUNNING on `worker_id`, recovered after a
// coordinator restart.
struct AdoptExec {
  std::string exec_id;
  uint32_t attempt = 0;
  std::string worker_id;
  int64_t expected_ms = 1000;
  MSGPACK_DEFINE(exec_id, attempt, worker_id, expected_ms);
};

// Recovered RUNNING executions. A worker that lists one in its HELLO (or
// reports its result) keeps it; the ones nobody claims by `claim_until` are
// handed back to the scheduler as lost (WorkerGone), to be requeued.
struct AdoptRunning {
  std::vector<AdoptExec> execs;
  int64_t claim_until = 0;  // Steady()
  MSGPACK_DEFINE(execs, claim_until);
};

struct WorkerSeen {
  std::string worker_id;
  int64_t last_seen = 0;
  MSGPACK_DEFINE(worker_id, last_seen);
};
// A full snapshot: every worker the dispatcher knows. One it does not list
// is gone (it left or was declared lost).
struct WorkersSeen {
  std::vector<WorkerSeen> workers;
  MSGPACK_DEFINE(workers);
};
// A delta: this one worker left; what is known of the others is unchanged.
struct WorkerLeft {
  std::string worker_id;
  MSGPACK_DEFINE(worker_id);
};

struct WorkerLost {
  std::string worker_id;
  std::string reason;
  MSGPACK_DEFINE(worker_id, reason);
};

struct Deadline {
  std::string exec_id;
  uint32_t attempt = 0;
  int64_t deadline = 0;  // Steady(): a wall-clock step neither fires nor delays it
  int64_t timeout_ms = 0;
  MSGPACK_DEFINE(exec_id, attempt, deadline, timeout_ms);
};
struct WatchDeadlines {
  std::vector<Deadline> deadlines;
  MSGPACK_DEFINE(deadlines);
};
struct Unwatch {
  std::vector<transport::ExecRef> execs;
  MSGPACK_DEFINE(execs);
};
struct DeadlineExceeded {
  std::vector<Deadline> exceeded;
  MSGPACK_DEFINE(exceeded);
};

struct WorkerInfo {
  std::string id, group;
  uint32_t slots = 0, credits = 0, running = 0;
  int64_t last_seen = 0;
  int64_t expected_busy_ms = 0;
  std::vector<std::string> labels;
  int64_t joined_at = 0;  // this connection's first HELLO
  uint32_t losses = 0;    // times declared lost since the coordinator started
  MSGPACK_DEFINE(id, group, slots, credits, running, last_seen, expected_busy_ms, labels, joined_at,
                 losses);
};
struct WorkersSnapshot {
  std::vector<WorkerInfo> workers;
  uint64_t epoch = 0;
  // Queue health since the previous snapshot, for the periodic health line:
  // gaps between frames from any one worker (0 when none), executions queued
  // for placement and how long the oldest has been READY (dispatch lag).
  int64_t min_gap_us = 0, max_gap_us = 0;
  uint64_t queued = 0;
  int64_t oldest_ready_age_us = 0;
  MSGPACK_DEFINE(workers, epoch, min_gap_us, max_gap_us, queued, oldest_ready_age_us);
};

// scheduler -> dispatcher: ask `worker_id` for a log slice.
struct LogFetch {
  std::string worker_id;
  transport::LogRequest request;
  MSGPACK_DEFINE(worker_id, request);
};
// dispatcher -> scheduler: the worker's answer (or the dispatcher's error
// when the worker is not connected).
struct LogFetched {
  transport::LogReply reply;
  MSGPACK_DEFINE(reply);
};

struct PausePlacement {
  bool paused = false;
  std::string reason;
  MSGPACK_DEFINE(paused, reason);
};

}  // namespace apollo11::actors
