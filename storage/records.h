#pragma once
// The records the journal stores. Plain values: the scheduler fills them, the
// journal encodes them compactly (msgpack arrays, see record_codec.h) and
// hands back copies on read.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/rare.h"
#include "engine/task_state.h"

namespace apollo11::storage {

// One state change of one execution. `seq` is assigned by Journal::Commit and
// is gap-free and increasing across the whole journal.
struct TransitionRecord {
  uint64_t seq = 0;
  Micros ts = 0;
  std::string run_id, task_id, exec_id;
  uint32_t attempt = 0;
  TaskState from = TaskState::kPending, to = TaskState::kPending;
  std::string reason;  // a human sentence: "dependency data_clean succeeded"
  std::string actor;   // which actor or user caused it
  // True for an event that is not a state change (a slow flag, an operator's
  // decision about it): from == to, and the transition table does not apply.
  // It is journaled in the same sequence so history shows it in order.
  bool note = false;
  // The worker an attempt was placed on, set on its READY -> RUNNING
  // transition; empty otherwise and in records written before it existed.
  std::string worker_id;
};

// The worker that ran `attempt` according to an execution's `history`: the
// worker_id of its -> RUNNING transition, or for records written before that
// field the worker its reason names ("dispatched to worker W"). Empty when the
// attempt was never placed. The last placement wins.
std::string WorkerOfAttempt(const std::vector<TransitionRecord>& history, uint32_t attempt);

// Where an execution stands with respect to slow-task detection. It describes
// the current attempt only: it is reset when the attempt leaves RUNNING.
enum class SlowFlag : uint8_t {
  kNone = 0,
  kFlagged,  // running longer than its threshold; waits for `apollo11 confirm`
  kKept,     // flagged, then kept by the operator: not flagged again this attempt
};
inline const char* ToString(SlowFlag f) {
  switch (f) {
    case SlowFlag::kFlagged:
      return "flagged";
    case SlowFlag::kKept:
      return "kept";
    default:
      return "none";
  }
}

// The current state of one execution ("<run_id>.<task_id>"), overwritten in
// the same write transaction as the transition that changed it.
struct ExecutionRecord {
  // Empty in the scheduler's records in memory (SchedulerRun::ExecId makes
  // it); a record read from a store always has it.
  std::string exec_id;
  // Boxed, as trace_id below: the scheduler's records in memory leave both
  // empty (its run holds them once), 8 bytes each instead of 32.
  Rare<std::string> run_id;
  std::string task_id;
  uint32_t attempt = 0;
  TaskState state = TaskState::kPending;
  SlowFlag slow = SlowFlag::kNone;  // beside state: 16 bytes of padding less
  int exit_code = 0;
  std::string worker_id;
  Micros ready_at = 0, started_at = 0, finished_at = 0, next_retry_at = 0, deadline = 0;
  uint32_t retries_used = 0, requeues = 0;
  Rare<std::string> error;
  Rare<std::string> output;  // stdout tail, capped by the caller
  Rare<std::string> trace_id;
  Rare<std::string> slow_reason;  // why it was flagged, for status and explain
  Micros flagged_at = 0;
  // Why this attempt's log files are incomplete (a write failed on the
  // worker: disk full); empty when they are whole.
  Rare<std::string> logs_truncated;
  // The JSON result of the attempt that succeeded ($APOLLO11_OUTPUT, a db
  // task's rows), written with the SUCCESS transition; empty = none.
  Rare<std::string> task_output;
  // A foreach instance's item (its task_id is "ID[i]"), written with the
  // expansion; empty for a task.
  Rare<std::string> item;
};

// One run of a pipeline snapshot (`pipeline_hash` names the immutable spec).
struct RunRecord {
  std::string run_id, pipeline_name, pipeline_hash;
  RunStatus status = RunStatus::kPending;
  Micros created_at = 0, started_at = 0, finished_at = 0;
  uint32_t task_count = 0;
  std::string reason;  // why it ended
  std::map<std::string, std::string> params;
  // registry: the registered version (NAME@VERSION) the run is pinned to; 0
  // for a run of a pipeline submitted as a file, not from the registry.
  uint32_t pipeline_version = 0;
  // The run this one reruns (`apollo11 rerun`); empty for any other run and
  // in records written before it existed.
  std::string rerun_of;
  // Tasks that ended FAILED or TIMEOUT in a run that ended SUCCESS: a
  // dependent's `on: failure`, `on: timeout` or `on: done` handled each. 0 for every
  // other run and in records written before it existed.
  uint32_t handled_failures = 0;
};

// registry: one registered version of a pipeline, NAME@VERSION, its snapshot
// stored by `hash` in the pipeline snapshots. Immutable once stored.
struct PipelineVersionRecord {
  std::string name;
  uint32_t version = 0;  // 1, 2, ... per name; never reused, also after rm
  std::string hash;      // content hash of the resolved snapshot
  Micros added_at = 0;
  std::string added_by;  // "cli", "http", ...
};

// registry: where one registered pipeline name stands.
struct PipelineStateRecord {
  std::string name;
  uint32_t active = 0;  // the version new runs use by default; 0 = removed
  uint32_t latest = 0;  // the highest version ever assigned
  bool paused = false;  // no new scheduled or triggered runs while set
  Micros changed_at = 0;
  std::string paused_by;  // who paused it (empty when not paused)
};

// registry: the run an idempotency (trigger) key of a pipeline started.
struct TriggerKeyRecord {
  std::string name, key, run_id;
  Micros at = 0;
};

}  // namespace apollo11::storage
