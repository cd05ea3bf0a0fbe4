#pragma once
// The wire messages between the dispatcher and workers (DESIGN §3). Each is a
// plain struct encoded positionally with MSGPACK_DEFINE: append new fields at
// the end only, and give every member a default so an older peer's shorter
// array still decodes.

#include <cstdint>
#include <map>
#include <msgpack.hpp>
#include <string>
#include <vector>

#include "common/status.h"

namespace apollo11::transport {

// Bumped on any incompatible change to the envelope or a message's layout.
// 2: dropped the fields no peer read (Hello.worker_id and epoch_seen,
// TaskPayload's db_host, sql, run_id and task_id, Dispatch.idempotency_key and
// deadline, Started.pid, Heartbeat's running, load and sent_at, Probe.epoch,
// Bye.worker_id); a peer of version 1 is refused, not misread.
// 3: TaskPayload.inputs carries parameters and upstream outputs (no longer in
// env) and TaskPayload.refusal; a worker of version 2 would run tasks
// without them, so it is refused.
// 4: ResultMsg.task_output (the task's $APOLLO11_OUTPUT JSON), appended
// last; TaskPayload carries a db task's db_host, sql, sql_params and
// db_password_env, and every task's secrets (references a worker resolves at
// launch), appended; a worker of version 3 could run neither.
// 5: TaskPayload.code, a python task's source (its script is now a file
// name); a worker of version 4 would look for the script on its own disk.
inline constexpr uint32_t kProtocolVersion = 5;
// The first version whose ResultMsg has today's layout (see DecodeStoredResult).
inline constexpr uint32_t kResultLayoutSince = 1;

// The `type` element of every frame. 1..59 are wire messages, 60..63 are the
// actor runtime's own pipe messages, 64.. are coordinator-internal messages
// defined by the actors (they use the same codec).
enum class MsgType : uint16_t {
  kHello = 1,
  kCredit,
  kDispatch,
  kStarted,
  kResult,
  kAck,
  kHeartbeat,
  kProbe,
  kProbeReply,
  kCancel,
  kBye,
  kLogRequest,  // D->W: a slice of an execution's captured output
  kLogReply,    // W->D: the slice
  kRefused,     // D->W: your HELLO is refused for good (Refused); a worker stops
  // W->D, to every coordinator but the one it follows: "I am connected to you"
  // (Watch). A coordinator that leads answers with a HEARTBEAT of its term,
  // and a new leader announces itself to the workers that watch it. An older
  // coordinator takes it as an unknown type (upgrade coordinators first).
  kWatch,
  // Actor runtime (transport/actor.h); never sent over the network.
  kActorReady = 61,
  kActorDone = 62,
  kTerm = 63,
  kFirstInternal = 64,
};

// The numeric value of `t`, for Encode and comparisons with Envelope::type.
constexpr uint16_t ToWire(MsgType t) { return static_cast<uint16_t>(t); }

// "HELLO", "DISPATCH", ... or "UNKNOWN" for a type this build does not know
// (including 64.. which the transport layer does not name). Never null.
const char* MsgTypeName(uint16_t type);

// One execution attempt: the key workers deduplicate DISPATCH by.
struct ExecRef {
  std::string exec_id;
  uint32_t attempt = 0;
  bool operator==(const ExecRef&) const = default;
  MSGPACK_DEFINE(exec_id, attempt);
};

// What a task reads besides its own fields: a run parameter or an upstream's
// output. The worker gives it to the task as a file in $APOLLO11_INPUTS_DIR
// and, when small, as an environment variable (executor/task_inputs.h).
enum class InputKind : uint8_t { kParam = 0, kOutput = 1 };
struct TaskInput {
  uint8_t kind = 0;  // InputKind
  std::string name;  // the parameter's name or the upstream task's id
  std::string value;
  bool operator==(const TaskInput&) const = default;
  MSGPACK_DEFINE(kind, name, value);
};

// Everything a worker needs to run one task; `type` is a dsl::TaskType value.
// The members named like dsl::TaskSpec's are the kWire fields of
// APOLLO11_TASK_FIELDS (dsl/task_fields.h), copied by dsl::CopyWireFields.
struct TaskPayload {
  uint8_t type = 0;
  std::string command, workdir, script;
  std::vector<std::string> args;
  std::string url, method;
  std::map<std::string, std::string> headers;
  std::string body;
  std::vector<int32_t> expect_status;
  std::map<std::string, std::string> env;
  int64_t timeout_ms = 0;  // 0 = none
  int64_t kill_grace_ms = 2000;
  std::string precheck;
  bool run_precheck = false;
  // Parameters, then upstream outputs in dependency order (shell, python, db
  // tasks only); their sizes are bounded by construction (common/wire_limits.h).
  std::vector<TaskInput> inputs;
  // Not empty: the coordinator could not build a DISPATCH that fits the
  // worker link; the worker reports the attempt failed with this reason,
  // not retryable, and runs nothing.
  std::string refusal;
  // db: the connection URL (no password), the SQL, its bound parameters and
  // the variable naming the password.
  std::string db_host, sql;
  std::vector<std::string> sql_params;
  std::string db_password_env;
  // Variable name -> secret reference (dsl/secret_ref.h); never a value.
  std::map<std::string, std::string> secrets;
  // python: the source to run, written to a file named `script` (task.py
  // when empty) in the attempt's own directory; unused when `script` is an
  // absolute path, a path on the worker.
  std::string code;
  bool operator==(const TaskPayload&) const = default;
  MSGPACK_DEFINE(type, command, workdir, script, args, url, method, headers, body, expect_status,
                 env, timeout_ms, kill_grace_ms, precheck, run_precheck, inputs, refusal, db_host,
                 sql, sql_params, db_password_env, secrets, code);
};

// W→D: join or rejoin, listing the executions the worker still holds.
// `slots` 0 means draining. `worker_id` names the worker; its socket identity
// is WORKER_ID/NONCE, one per worker process, so two processes claiming one
// id are told apart. Empty (an older worker): the socket identity is the id.
struct Hello {
  std::string group;
  uint32_t slots = 0;
  std::vector<std::string> labels;
  std::vector<ExecRef> running;
  std::string worker_id;
  // Executions it queues beyond its slots (credit = slots + prefetch); 0 from
  // a worker that predates queues.
  uint32_t prefetch = 0;
  // True: `running` and `finished` together list every attempt the worker
  // holds, so what the journal says it runs and neither lists it does not
  // hold (handed back at once). False from a worker that predates them: it
  // lists only unfinished ones, and its RESULTs claim the rest.
  bool lists_finished = false;
  // Attempts that finished and whose RESULT (resent right after this HELLO)
  // is not acknowledged: they take no slot.
  std::vector<ExecRef> finished = {};
  bool operator==(const Hello&) const = default;
  MSGPACK_DEFINE(group, slots, labels, running, worker_id, prefetch, lists_finished, finished);
};

// W→D: the worker `worker_id` is connected to this coordinator but follows
// another; the newest epoch it has seen.
struct Watch {
  std::string worker_id;
  uint64_t epoch_seen = 0;
  bool operator==(const Watch&) const = default;
  MSGPACK_DEFINE(worker_id, epoch_seen);
};

// D→W: the coordinator refuses this worker (its id is taken by a live worker,
// its key may not act as a worker, its HELLO is malformed). Not transient:
// the worker logs `reason` and stops, rather than run tasks beside another.
struct Refused {
  std::string reason;
  // A standby's "not the leader" refusal: the epoch of the leader it names
  // (0: none known, or an older coordinator). A worker that has seen a newer
  // epoch drops it: it was sent before that term began (a frame from the
  // standby a coordinator was before it led, delivered late).
  uint64_t epoch = 0;
  bool operator==(const Refused&) const = default;
  MSGPACK_DEFINE(reason, epoch);
};

// W→D: `credits` more executions may be sent.
struct Credit {
  uint32_t credits = 0;
  bool operator==(const Credit&) const = default;
  MSGPACK_DEFINE(credits);
};

// D→W: run this attempt (at-least-once; workers dedupe by exec_id+attempt).
struct Dispatch {
  std::string exec_id;
  uint32_t attempt = 0;
  TaskPayload task;
  std::string trace_id;
  uint64_t epoch = 0;
  bool operator==(const Dispatch&) const = default;
  MSGPACK_DEFINE(exec_id, attempt, task, trace_id, epoch);
};

// W→D: the attempt is RUNNING.
struct Started {
  std::string exec_id;
  uint32_t attempt = 0;
  int64_t started_at = 0;
  bool operator==(const Started&) const = default;
  MSGPACK_DEFINE(exec_id, attempt, started_at);
};

// How an attempt ended; carried as uint8 in ResultMsg::outcome.
enum class Outcome : uint8_t {
  kSuccess = 0,
  kFailed,
  kTimeout,
  kCanceled,
  kAlreadyDone,  // precheck exit 3
  kRejected,     // worker could not start it
};

// W→D: the attempt finished; resent until ACK.
struct ResultMsg {
  std::string exec_id;
  uint32_t attempt = 0;
  uint8_t outcome = 0;  // Outcome
  int32_t exit_code = 0;
  bool retryable = true;
  std::string output;  // stdout tail
  std::string error;   // human sentence
  int64_t started_at = 0, finished_at = 0;
  // Last bytes of stderr (executor: stderr_tail_bytes), for alerts. Appended
  // last: a RESULT from an older worker or outbox decodes with it empty.
  std::string stderr_tail;
  // Why the attempt's log files are incomplete (a write failed: disk full);
  // empty when they are whole. Appended last, like stderr_tail.
  std::string logs_truncated;
  // The task's result as compact JSON ($APOLLO11_OUTPUT, a db task's rows);
  // empty = none. Appended last, like stderr_tail.
  std::string task_output;
  // Every byte the task printed to stdout (http: the body's size); more than
  // output.size() when `output` is only its tail. 0 = unknown (a worker
  // before this field). Appended last, like stderr_tail.
  uint64_t output_bytes = 0;
  bool operator==(const ResultMsg&) const = default;
  MSGPACK_DEFINE(exec_id, attempt, outcome, exit_code, retryable, output, error, started_at,
                 finished_at, stderr_tail, logs_truncated, task_output, output_bytes);
};

// D→W: the RESULT is durable; stop resending it.
struct Ack {
  std::string exec_id;
  uint32_t attempt = 0;
  bool operator==(const Ack&) const = default;
  MSGPACK_DEFINE(exec_id, attempt);
};

// Both ways: liveness. The worker's epoch is the newest it has seen.
struct Heartbeat {
  uint64_t epoch = 0;
  // Coordinator -> worker only: false when the coordinator does not know this
  // worker (its HELLO was lost, or the coordinator restarted): say HELLO again.
  bool registered = true;
  // Coordinator -> worker: this heartbeat answers a HELLO; the CANCELs of
  // what the coordinator does not leave to the worker came before it (a
  // worker starts its queue only then). False from an older coordinator.
  bool answers_hello = false;
  bool operator==(const Heartbeat&) const = default;
  MSGPACK_DEFINE(epoch, registered, answers_hello);
};

// D→W: are these attempts still running?
struct Probe {
  std::vector<ExecRef> execs;
  bool operator==(const Probe&) const = default;
  MSGPACK_DEFINE(execs);
};

// One answer in a PROBE_REPLY.
struct ProbeState {
  std::string exec_id;
  uint32_t attempt = 0;
  uint8_t state = 0;  // 0 unknown, 1 running, 2 finished (result will be resent)
  bool operator==(const ProbeState&) const = default;
  MSGPACK_DEFINE(exec_id, attempt, state);
};

// W→D: answers to a PROBE, one per asked attempt.
struct ProbeReply {
  std::vector<ProbeState> states;
  bool operator==(const ProbeReply&) const = default;
  MSGPACK_DEFINE(states);
};

// D→W: kill this attempt.
struct Cancel {
  std::string exec_id;
  uint32_t attempt = 0;
  uint64_t epoch = 0;
  bool operator==(const Cancel&) const = default;
  MSGPACK_DEFINE(exec_id, attempt, epoch);
};

// D→W: bytes [offset, offset + max_bytes) of one attempt's captured stdout
// (stream 0) or stderr (stream 1), for `apollo11 logs`. Not fenced by epoch:
// it reads, never changes anything.
// LogRequest::stream: 0 stdout, 1 stderr, 2 the worker's own JSON log lines
// that mention the execution (all attempts), for `apollo11 trace`.
inline constexpr uint8_t kLogStreamEvents = 2;
struct LogRequest {
  uint64_t request_id = 0;
  std::string exec_id;
  uint32_t attempt = 0;
  uint8_t stream = 0;
  uint64_t offset = 0;
  uint32_t max_bytes = 0;
  bool operator==(const LogRequest&) const = default;
  MSGPACK_DEFINE(request_id, exec_id, attempt, stream, offset, max_bytes);
};

// W→D: the slice, the stream's current size, and whether the attempt is
// still running (more may come). `error` is set when there is no such log.
struct LogReply {
  uint64_t request_id = 0;
  std::string data;
  uint64_t size = 0;
  bool running = false;
  std::string error;
  bool operator==(const LogReply&) const = default;
  MSGPACK_DEFINE(request_id, data, size, running, error);
};

// W→D: clean leave (the worker is known by its socket identity).
struct Bye {
  bool operator==(const Bye&) const = default;
  MSGPACK_DEFINE();
};

}  // namespace apollo11::transport
