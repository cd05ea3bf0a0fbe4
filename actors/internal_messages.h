#pragma once
// Messages between the coordinator's own actors (scheduler, dispatcher,
// reconciler) and between the scheduler and whoever submits runs (the CLI in
// embedded mode, the API actor in a cluster). They travel over inproc sockets
// as msgpack frames through the same codec as the wire protocol, with type
// codes from 64 up so the two ranges never collide.

#include <cstdint>
#include <msgpack.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "transport/messages.h"

namespace apollo11::actors {

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
  kStaleResult,   // informational: a result for an attempt no longer current
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
  // client (CLI / API) <-> scheduler
  kSubmitRun = 96,
  kSubmitReply,
  kCancelRun,
  kRunProgress,
  kRunFinished,
  kDrain,  // node -> worker actor: drain; worker actor -> node: drained
  kQuery,  // read-only question: status, history, runs, workers, explain
  kQueryReply,
  kConfirmExec,  // the operator's answer to a slow flag: kill or keep
  kConfirmReply,
  kRegistry,       // registry: pipelines add/rm, pause/unpause, trigger
  kRegistryReply,  // registry
  kRerunRun,       // rerun: a new run of a finished run's snapshot; answered with kSubmitReply
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

// ---- The client protocol (kSubmitRun and up) -----------------------------
//
// Every request (SubmitRun, CancelRun, Query, ConfirmExec) starts with the
// protocol version its client speaks; the scheduler refuses any other
// version with a reply saying so (version 1 had no version field). Every
// reply carries a StatusCode (`code`, 0 = Ok) beside its error sentence.
//
// Versions: 1, the first (no version field); 2, requests begin with their
// version, replies carry `code`, Query.kind is a QueryKind, SubmitRun has
// no requested_run_id; 3, a SubmitRun's snapshot may be packed.
inline constexpr uint16_t kClientProtocolVersion = 3;

// A reply's code and error as a Status; an unknown code reads as kInternal.
inline Status ReplyStatus(uint8_t code, const std::string& error) {
  if (code == 0 && error.empty()) return Status::Ok();
  if (code == 0 || code > static_cast<uint8_t>(StatusCode::kNotLeader)) {
    return Status::Internal(error);
  }
  return Status::Error(static_cast<StatusCode>(code), error);
}
// `s` as a reply's code.
inline uint8_t ReplyCode(const Status& s) { return static_cast<uint8_t>(s.code()); }

// A run submission: the resolved pipeline as canonical JSON (the snapshot the
// run keeps), its content hash (of the JSON), and run parameters. The JSON
// may be sent packed (storage::PackSnapshot, from version 3): a 1M-task
// snapshot is 180 MB of JSON, and a client frame holds 64 MiB. The run id
// is always the coordinator's: field 5 is reserved, since older clients
// sent the run id they wanted there (usually empty), and a submission with
// a non-empty string in it is refused (SubmissionNamesRunId).
struct SubmitRun {
  uint16_t version = kClientProtocolVersion;
  std::string pipeline_json;
  std::string pipeline_hash;
  std::map<std::string, std::string> params;
  MSGPACK_DEFINE(version, pipeline_json, pipeline_hash, params);
};
// True when a decoded SubmitRun body names the run id it wants (a non-empty
// string as its fifth field, as older clients could send).
inline bool SubmissionNamesRunId(const msgpack::object& body) {
  return body.type == msgpack::type::ARRAY && body.via.array.size > 4 &&
         body.via.array.ptr[4].type == msgpack::type::STR && body.via.array.ptr[4].via.str.size > 0;
}
struct SubmitReply {
  uint8_t code = 0;   // StatusCode
  std::string error;  // empty on success
  std::string run_id;
  MSGPACK_DEFINE(code, error, run_id);
};
// `apollo11 rerun RUN_ID`: a new run of the same snapshot and params as
// finished run `run_id`, reusing the SUCCESS and outputs of every task not
// selected (engine/rerun_selection.h: `failed`, else `from_task` and, with
// `downstream`, what depends on it). Answered with a SubmitReply naming the
// new run once it is journaled.
struct RerunRun {
  uint16_t version = kClientProtocolVersion;
  std::string run_id;
  bool failed = true;
  std::string from_task;
  bool downstream = false;
  MSGPACK_DEFINE(version, run_id, failed, from_task, downstream);
};
struct CancelRun {
  CancelRun() = default;
  CancelRun(std::string run, std::string why) : run_id(std::move(run)), reason(std::move(why)) {}
  uint16_t version = kClientProtocolVersion;
  std::string run_id;
  std::string reason;
  MSGPACK_DEFINE(version, run_id, reason);
};
struct RunProgress {
  std::string run_id;
  std::vector<uint32_t> counts;  // indexed by TaskState
  MSGPACK_DEFINE(run_id, counts);
};
struct RunFinished {
  std::string run_id;
  uint8_t status = 0;  // RunStatus
  std::string reason;
  MSGPACK_DEFINE(run_id, status, reason);
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

// What a Query asks. kStatus (id = run), kRun (id = run: its record alone,
// without tasks, cheap to poll), kHistory (id = run or execution), kRuns
// (limit), kWorkers, kExplain (id = run, arg = task), kExecution (id =
// execution: its record and history), kPipelines (those seen in recent
// runs), kPipeline (id = name: its newest snapshot; tasks' env values are
// replaced by their names unless arg = "full", which Trigger asks), kHealth (is the
// scheduler serving, is the journal writable), kTraceLog (id = execution:
// the coordinator's log lines about it, in data).
//
// kLogs: id = execution, arg = "out", "err" or "events", attempt (0 = the
// latest), offset and limit (max bytes): a slice of the captured output,
// fetched from the worker that ran it. The reply's json has exec_id,
// attempt, worker, stream, offset, size and running; the bytes are in data.
enum class QueryKind : uint8_t {
  kStatus = 1,
  kRun,
  kHistory,
  kRuns,
  kWorkers,
  kExplain,
  kExecution,
  kPipelines,
  kPipeline,
  kHealth,
  kLogs,
  kTraceLog,
  kPipelineVersions,  // registry: id = name: its registered versions and state
};
inline constexpr uint8_t kQueryKindLast = static_cast<uint8_t>(QueryKind::kPipelineVersions);

// The kinds by name, as the CLI and the HTTP API spell them.
inline constexpr std::pair<const char*, QueryKind> kQueryKindNames[] = {
    {"status", QueryKind::kStatus},
    {"run", QueryKind::kRun},
    {"history", QueryKind::kHistory},
    {"runs", QueryKind::kRuns},
    {"workers", QueryKind::kWorkers},
    {"explain", QueryKind::kExplain},
    {"execution", QueryKind::kExecution},
    {"pipelines", QueryKind::kPipelines},
    {"pipeline", QueryKind::kPipeline},
    {"health", QueryKind::kHealth},
    {"logs", QueryKind::kLogs},
    {"trace_log", QueryKind::kTraceLog},
    {"pipeline_versions", QueryKind::kPipelineVersions},  // registry
};
// The kind named `name`; InvalidInput when there is none.
inline Result<QueryKind> ParseQueryKind(std::string_view name) {
  for (const auto& [n, kind] : kQueryKindNames) {
    if (name == n) return kind;
  }
  return Status::InvalidInput("unknown query '" + std::string(name) + "'");
}
// The name of `kind`; "?" for a value outside the enum (from a peer).
inline const char* QueryKindName(QueryKind kind) {
  for (const auto& [n, k] : kQueryKindNames) {
    if (k == kind) return n;
  }
  return "?";
}

struct Query {
  uint16_t version = kClientProtocolVersion;
  QueryKind kind = QueryKind::kStatus;
  std::string id;
  std::string arg;
  uint32_t limit = 20;
  uint64_t offset = 0;
  uint32_t attempt = 0;
  MSGPACK_DEFINE(version, kind, id, arg, limit, offset, attempt);
};
// The answer: a JSON document, or an error sentence with its code.
// `journal_error` is set on every answer while the coordinator cannot write
// its journal (disk full), so every client can warn about it.
struct QueryReply {
  uint8_t code = 0;  // StatusCode
  std::string error;
  std::string json;
  std::string data;  // raw bytes (logs)
  std::string journal_error;
  MSGPACK_DEFINE(code, error, json, data, journal_error);
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
// `apollo11 confirm EXEC_ID --kill|--keep`: the operator's decision about an
// execution flagged slow.
struct ConfirmExec {
  ConfirmExec() = default;
  ConfirmExec(std::string exec, bool kill_it) : exec_id(std::move(exec)), kill(kill_it) {}
  uint16_t version = kClientProtocolVersion;
  std::string exec_id;
  bool kill = false;  // false: keep it running
  MSGPACK_DEFINE(version, exec_id, kill);
};
// What was done (`text`), or why nothing was: `error` with its StatusCode
// (kNotFound / kInvalidInput are the operator's mistakes).
struct ConfirmReply {
  uint8_t code = 0;  // StatusCode
  std::string error;
  std::string text;
  MSGPACK_DEFINE(code, error, text);
};

// registry: what a RegistryRequest asks.
enum class RegistryOp : uint8_t {
  kAdd = 1,  // register pipeline_json (hash pipeline_hash) as the next version of `name`
  kReject,   // `name`'s new version failed validation (`errors`): alert, change nothing
  kRemove,   // no version of `name` active any more
  kPause,    // no new scheduled or triggered runs of `name`
  kUnpause,
  kTrigger,   // start a run of name@ref with `params`, idempotent on `key`
  kBackfill,  // one fire of `name`'s schedule per scheduled time in [from, to]
};
inline constexpr uint8_t kRegistryOpLast = static_cast<uint8_t>(RegistryOp::kBackfill);

// registry: a change to the pipeline registry, or a trigger. Answered with a
// RegistryReply once the change is journaled (a refusal at once).
struct RegistryRequest {
  uint16_t version = kClientProtocolVersion;
  uint8_t op = 0;  // RegistryOp; checked by the scheduler
  std::string name;
  std::string ref;                            // kTrigger: the version ("" = active)
  std::string pipeline_json, pipeline_hash;   // kAdd
  std::string errors;                         // kReject: the positioned errors
  std::map<std::string, std::string> params;  // kTrigger
  std::string key;                            // kTrigger: idempotency key ("" = none)
  std::string actor;                          // "cli", "http": for the record and the log
  int64_t from = 0, to = 0;                   // kBackfill: wall Micros, inclusive
  int32_t max_active = 0;                     // kBackfill: 0 = the schedule's max_active_runs
  // Appended fields: a request of an older client decodes with them zero.
  MSGPACK_DEFINE(version, op, name, ref, pipeline_json, pipeline_hash, errors, params, key, actor,
                 from, to, max_active);
};
// `json`: kAdd {name, version, hash, label, unchanged}; kTrigger {run_id,
// name, version, existing}; kBackfill {name, queued}; the others {name,
// active, paused}.
struct RegistryReply {
  uint8_t code = 0;  // StatusCode
  std::string error;
  std::string json;
  MSGPACK_DEFINE(code, error, json);
};

}  // namespace apollo11::actors

// A QueryKind travels as its number; the scheduler checks the range (a peer
// may send any value).
MSGPACK_ADD_ENUM(apollo11::actors::QueryKind);
