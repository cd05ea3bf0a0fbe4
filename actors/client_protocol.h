#pragma once
// The client protocol: what `apollo11` (the CLI) and the HTTP API send the
// coordinator's scheduler over its client ROUTER, and what it answers. This
// is the coordinator's public protocol (the messages between its own actors
// are actors/internal_messages.h, which nothing outside actors/ includes).
// Frames are msgpack through transport's codec, with the types below.

#include <cstdint>
#include <map>
#include <msgpack.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "transport/codec.h"

namespace apollo11::actors {

// A pipeline snapshot or an answer (a run's status, logs) is one string and
// may be tens of megabytes for very large DAGs. Both directions of the
// client link (the scheduler's ROUTER and the CLI's DEALER, ZMQ_MAXMSGSIZE)
// decode with these, and ClientSessions checks every reply against them.
inline transport::DecodeLimits ClientLimits() {
  transport::DecodeLimits l;
  l.max_frame = size_t{64} << 20;
  l.str = size_t{64} << 20;
  return l;
}

// Message types of the client link. The numbers are the wire's: a client
// of another release must still be told it speaks another version.
enum class ClientType : uint16_t {
  kSubmitRun = 96,
  kSubmitReply = 97,
  kCancelRun = 98,
  kRunProgress = 99,
  kRunFinished = 100,
  // 101 was the node's drain message before it became internal.
  kQuery = 102,  // read-only question: status, history, runs, workers, explain
  kQueryReply = 103,
  kConfirmExec = 104,  // the operator's answer to a slow flag: kill or keep
  kConfirmReply = 105,
  kRegistry = 106,  // pipelines add/rm, pause/unpause, trigger, backfill
  kRegistryReply = 107,
  kRerunRun = 108,   // a new run of a finished run's snapshot; answered with kSubmitReply
  kAuditNote = 109,  // a node's record of what it did or refused itself; answered kConfirmReply
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
  if (code == 0 || code > static_cast<uint8_t>(StatusCode::kConflict)) {
    return Status::Internal(error);
  }
  return Status::Error(static_cast<StatusCode>(code), error);
}
// `s` as a reply's code.
inline uint8_t ReplyCode(const Status& s) { return static_cast<uint8_t>(s.code()); }

// Who a changing request is for, when a node's HTTP API sends it for a
// caller it authenticated (an API token): the coordinator journals that
// caller in the audit trail and the run's history instead of the sending
// key. Appended to every changing request (an older client's decodes with
// it empty: the request is the sender's own). Trusted only where the sender
// may do anything itself: an admin key under CURVE (a node's own key is
// one), or any client without CURVE (where nothing is authenticated); from
// any other key a request that names someone is refused.
struct OnBehalf {
  std::string principal;   // "alice"; empty: nobody (the sender itself)
  std::string role;        // "operator": the role it was checked against
  std::string transport;   // "http"
  std::string source;      // the caller's address, "10.0.0.7"
  std::string request_id;  // the HTTP request's X-Request-Id
  bool empty() const { return principal.empty(); }
  MSGPACK_DEFINE(principal, role, transport, source, request_id);
};

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
  std::string reserved;  // field 5: see above; always empty
  OnBehalf on_behalf;
  MSGPACK_DEFINE(version, pipeline_json, pipeline_hash, params, reserved, on_behalf);
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
  OnBehalf on_behalf;
  MSGPACK_DEFINE(version, run_id, failed, from_task, downstream, on_behalf);
};
struct CancelRun {
  CancelRun() = default;
  CancelRun(std::string run, std::string why) : run_id(std::move(run)), reason(std::move(why)) {}
  uint16_t version = kClientProtocolVersion;
  std::string run_id;
  std::string reason;
  OnBehalf on_behalf;
  MSGPACK_DEFINE(version, run_id, reason, on_behalf);
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
  kAudit,             // the audit trail (admin): see AuditQuery
  // A page of the whole run history: `arg` a JSON filter {"pipeline",
  // "states": [...], "since", "until" (wall micros), "cursor"}, `limit` the
  // page size (1..1000). Answers {"runs": [...], "next_cursor", "complete"}
  // (storage/run_page.h).
  kRunsPage,
  // The runs changed since `arg`, a position "FEED:SEQ" ("" = where the
  // feed is now), long-polled: answered at once when there is something
  // newer, else at the next commit that changes a run or after `limit`
  // milliseconds (at most 25 s). Answers actors/scheduler/change_feed.h's
  // JSON.
  kChanges,
};
inline constexpr uint8_t kQueryKindLast = static_cast<uint8_t>(QueryKind::kChanges);

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
    {"audit", QueryKind::kAudit},
    {"runs_page", QueryKind::kRunsPage},
    {"changes", QueryKind::kChanges},
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
// `apollo11 confirm EXEC_ID --kill|--keep`: the operator's decision about an
// execution flagged slow.
struct ConfirmExec {
  ConfirmExec() = default;
  ConfirmExec(std::string exec, bool kill_it) : exec_id(std::move(exec)), kill(kill_it) {}
  uint16_t version = kClientProtocolVersion;
  std::string exec_id;
  bool kill = false;  // false: keep it running
  OnBehalf on_behalf;
  MSGPACK_DEFINE(version, exec_id, kill, on_behalf);
};
// What was done (`text`), or why nothing was: `error` with its StatusCode
// (kNotFound / kInvalidInput are the operator's mistakes).
struct ConfirmReply {
  uint8_t code = 0;  // StatusCode
  std::string error;
  std::string text;
  MSGPACK_DEFINE(code, error, text);
};

// What a node did or refused itself, for the audit trail: its HTTP API's
// refusals (a wrong token, a role that may not, a rate limit), a resign it
// was asked for, a reload on SIGHUP. `on_behalf` names the caller (never
// empty) and is trusted as in any request (OnBehalf). Answered with a
// ConfirmReply once journaled. A standby refuses it as any change (the
// node's link follows to the leader, which records it).
struct AuditNote {
  uint16_t version = kClientProtocolVersion;
  std::string action;  // "resign", "reload", or an ActionRules name ("cancel")
  std::string target;
  bool ok = false;
  std::string outcome;
  OnBehalf on_behalf;
  MSGPACK_DEFINE(version, action, target, ok, outcome, on_behalf);
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
  OnBehalf on_behalf;
  // kTrigger: the client follows the run (`trigger --wait`): its progress
  // and end are pushed to it, as to the client that submits a run.
  bool follow = false;
  // kBackfill: only say which times it would queue; queue nothing.
  bool dry_run = false;
  // Appended fields: a request of an older client decodes with them zero.
  MSGPACK_DEFINE(version, op, name, ref, pipeline_json, pipeline_hash, errors, params, key, actor,
                 from, to, max_active, on_behalf, follow, dry_run);
};
// `json`: kAdd {name, version, hash, label, unchanged}; kTrigger {run_id,
// name, version, existing}; kBackfill {name, queued}, or with dry_run
// {name, dry_run, would_queue, times (the first 1000, RFC 3339 UTC)}; the
// others {name, active, paused}.
struct RegistryReply {
  uint8_t code = 0;  // StatusCode
  std::string error;
  std::string json;
  MSGPACK_DEFINE(code, error, json);
};

// The client protocol version a request declares: its body's first field,
// 1 when that is not an unsigned integer (version 1 requests had no version
// field and began with a string).
inline uint64_t ClientRequestVersion(const msgpack::object& body) {
  if (body.type != msgpack::type::ARRAY || body.via.array.size == 0) return 1;
  const msgpack::object& first = body.via.array.ptr[0];
  return first.type == msgpack::type::POSITIVE_INTEGER ? first.via.u64 : 1;
}

}  // namespace apollo11::actors

// A QueryKind travels as its number; the scheduler checks the range (a peer
// may send any value).
MSGPACK_ADD_ENUM(apollo11::actors::QueryKind);
