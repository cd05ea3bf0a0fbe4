#include "actors/queries/run_views.h"

#include <optional>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/json_dump.h"

namespace apollo11::actors {
namespace {

bool EndedByItself(TaskState s) {
  return s == TaskState::kSuccess || s == TaskState::kFailed || s == TaskState::kTimeout ||
         s == TaskState::kRetrying;
}

}  // namespace

namespace {

// A task's journaled JSON output as a JSON value; null when there is none
// (or, never expected, when the journal holds text that does not parse).
// A failed or timed-out task of a run that ended SUCCESS: a dependent's
// on: branch handled it (DagRun::Outcome).
bool HandledFailure(const storage::RunRecord& run, const storage::ExecutionRecord& e) {
  return run.status == RunStatus::kSuccess &&
         (e.state == TaskState::kFailed || e.state == TaskState::kTimeout);
}

nlohmann::json TaskOutputJson(const std::string& text) {
  if (text.empty()) return nullptr;
  nlohmann::json doc = ParseJsonBounded(text);
  return doc.is_discarded() ? nlohmann::json(nullptr) : doc;
}

}  // namespace

nlohmann::json RunTaskJson(const storage::RunRecord& run, const storage::ExecutionRecord& e) {
  nlohmann::json t = {
      {"state", ToString(e.state)}, {"attempts", e.attempt}, {"exec_id", e.exec_id}};
  // An exit code only when an attempt ended by itself: a task canceled
  // (killed) or that never ran has none, and a 0 would read as a success.
  if (EndedByItself(e.state)) t["exit_code"] = e.exit_code;
  if (!e.error.empty()) t["error"] = e.error;
  if (!e.worker_id.empty()) t["worker"] = e.worker_id;
  if (!e.logs_truncated.empty()) t["logs_truncated"] = e.logs_truncated;
  if (!e.task_output.empty()) t["output"] = TaskOutputJson(e.task_output);
  if (!e.item.empty()) t["item"] = e.item;  // a foreach instance's
  if (HandledFailure(run, e)) t["handled"] = true;
  // A rerun's task that never ran in it: only a reused one ends SUCCESS
  // at attempt 0.
  if (!run.rerun_of.empty() && e.state == TaskState::kSuccess && e.attempt == 0) {
    t["reused_from"] = run.rerun_of;
  }
  // The worker's clock, in µs: when the process started and was reaped
  // (bench/harness.py measures dependency hops from these).
  if (e.started_at) t["started_at_us"] = e.started_at;
  if (e.finished_at) t["finished_at_us"] = e.finished_at;
  if (e.slow != storage::SlowFlag::kNone) {
    t["slow"] = storage::ToString(e.slow);
    t["slow_reason"] = e.slow_reason;
    t["flagged_at"] = FormatTimestamp(e.flagged_at);
  }
  return t;
}

namespace {

// An object's members appended as SafeJsonDump prints them: compact when
// `indent` < 0, else as dump(2) of an object whose every line after the
// first is shifted right by `indent` spaces (where WriteRunSummaryJson puts
// a task). Keys must come in std::map order, values already JSON.
class MemberWriter {
 public:
  MemberWriter(std::string* out, int indent) : out_(out), indent_(indent) { out_->push_back('{'); }
  void Member(std::string_view key, std::string_view value) {
    if (!first_) out_->push_back(',');
    first_ = false;
    if (indent_ >= 0) out_->append("\n").append(static_cast<size_t>(indent_) + 2, ' ');
    out_->append("\"").append(key).append(indent_ >= 0 ? "\": " : "\":").append(value);
  }
  void Quoted(std::string_view key, std::string_view text) {
    // Appended, not `"\"" + ...`: GCC 12 at -O3 warns (-Wrestrict) inside
    // std::string for that, a known false positive.
    std::string quoted(1, '"');
    quoted.append(text).push_back('"');
    Member(key, quoted);
  }
  void Number(std::string_view key, int64_t n) { Member(key, std::to_string(n)); }
  void Close() {
    if (indent_ >= 0 && !first_) out_->append("\n").append(static_cast<size_t>(indent_), ' ');
    out_->push_back('}');
  }

 private:
  std::string* out_;
  int indent_;
  bool first_ = true;
};

// `key` as a JSON string, written directly when it is plain.
std::string QuotedKey(std::string_view key) {
  if (!IsPlainJsonText(key)) return SafeJsonDump(nlohmann::json(key));
  std::string out;
  out.reserve(key.size() + 2);
  out.append("\"").append(key).append("\"");
  return out;
}

}  // namespace

std::optional<std::string> PlainRunTaskJson(const storage::RunRecord& run,
                                            const storage::ExecutionRecord& e, int indent) {
  const bool reused = !run.rerun_of.empty() && e.state == TaskState::kSuccess && e.attempt == 0;
  if (!e.logs_truncated.empty() || !e.task_output.empty() || !e.item.empty() ||
      e.slow != storage::SlowFlag::kNone || !IsPlainJsonText(e.exec_id) ||
      !IsPlainJsonText(e.error.get()) || !IsPlainJsonText(e.worker_id) ||
      (reused && !IsPlainJsonText(run.rerun_of))) {
    return std::nullopt;
  }
  std::string out;
  out.reserve(160);
  MemberWriter w(&out, indent);
  w.Number("attempts", e.attempt);
  if (!e.error.empty()) w.Quoted("error", e.error.get());
  w.Quoted("exec_id", e.exec_id);
  if (EndedByItself(e.state)) w.Number("exit_code", e.exit_code);
  if (e.finished_at) w.Number("finished_at_us", e.finished_at);
  if (HandledFailure(run, e)) w.Member("handled", "true");
  if (reused) w.Quoted("reused_from", run.rerun_of);
  if (e.started_at) w.Number("started_at_us", e.started_at);
  w.Quoted("state", ToString(e.state));
  if (!e.worker_id.empty()) w.Quoted("worker", e.worker_id);
  w.Close();
  return out;
}

nlohmann::json RunHeaderJson(const storage::RunRecord& run) {
  nlohmann::json doc = {{"run_id", run.run_id},
                        {"pipeline", run.pipeline_name},
                        {"pipeline_hash", run.pipeline_hash},
                        {"state", ToString(run.status)},
                        {"created_at", FormatTimestamp(run.created_at)}};
  if (run.finished_at) {
    doc["finished_at"] = FormatTimestamp(run.finished_at);
    doc["duration_ms"] = (run.finished_at - run.started_at) / kMicrosPerMilli;
  }
  if (!run.reason.empty()) doc["reason"] = run.reason;
  if (run.pipeline_version) doc["pipeline_version"] = run.pipeline_version;  // registry
  if (!run.params.empty()) doc["params"] = run.params;
  if (!run.rerun_of.empty()) doc["rerun_of"] = run.rerun_of;
  if (run.handled_failures) doc["handled_failures"] = run.handled_failures;
  return doc;
}

nlohmann::json RunSummaryJson(const storage::RunRecord& run,
                              const std::vector<storage::ExecutionRecord>& execs) {
  nlohmann::json tasks = nlohmann::json::object();
  for (const storage::ExecutionRecord& e : execs) tasks[e.task_id] = RunTaskJson(run, e);
  nlohmann::json doc = RunHeaderJson(run);
  doc["tasks"] = std::move(tasks);
  return doc;
}

Result<std::string> RunSummaryText(const storage::RunRecord& run, storage::RunReader* journal,
                                   size_t max_bytes) {
  std::string header = SafeJsonDump(RunHeaderJson(run));
  header.pop_back();  // the header's closing brace: "tasks" goes last
  // Room for the header, the omitted count and the closing braces.
  const size_t budget = max_bytes > header.size() + 64 ? max_bytes - header.size() - 64 : 0;
  std::string tasks;
  uint64_t omitted = 0;
  // An execution's key is RUN.TASK (MakeExecId), so the journal yields each
  // task once and in task id order, as RunSummaryJson's map does; the id is
  // taken from the key, which the journal's order rests on.
  const size_t id_at = run.run_id.size() + 1;
  std::string one;
  APOLLO11_RETURN_IF_ERROR(
      journal->ForEachExecutionOfRun(run.run_id, [&](storage::ExecutionRecord& e) {
        if (omitted > 0) {
          ++omitted;
          return Status::Ok();
        }
        one = QuotedKey(e.exec_id.substr(id_at));
        one += ':';
        if (auto plain = PlainRunTaskJson(run, e, -1)) {
          one += *plain;
        } else {
          one += SafeJsonDump(RunTaskJson(run, e));
        }
        if (tasks.size() + one.size() + 1 > budget) {
          omitted = 1;
          return Status::Ok();
        }
        if (!tasks.empty()) tasks += ',';
        tasks += one;
        return Status::Ok();
      }));
  std::string out = std::move(header);
  if (omitted > 0) out += ",\"tasks_omitted\":" + std::to_string(omitted);
  out += ",\"tasks\":{";
  out += tasks;
  out += "}}";
  return out;
}

Status WriteRunSummaryJson(const storage::RunRecord& run, storage::RunReader* journal,
                           const std::function<void(std::string_view)>& write) {
  // The header printed whole, its closing "\n}" cut to add "tasks" last.
  std::string piece = SafeJsonDump(RunHeaderJson(run), 2);
  if (!piece.ends_with("\n}")) return Status::Internal("cannot serialize the run " + run.run_id);
  piece.resize(piece.size() - 2);
  piece += ",\n  \"tasks\": {";
  write(piece);
  // Each task as its own document, indented to sit two levels deep; its key
  // is taken from the exec id, as RunSummaryText does.
  const size_t id_at = run.run_id.size() + 1;
  bool any = false;
  APOLLO11_RETURN_IF_ERROR(
      journal->ForEachExecutionOfRun(run.run_id, [&](storage::ExecutionRecord& e) {
        piece = any ? ",\n    " : "\n    ";
        piece += QuotedKey(e.exec_id.substr(id_at));
        piece += ": ";
        if (auto plain = PlainRunTaskJson(run, e, 4)) {
          piece += *plain;
        } else {
          for (char c : SafeJsonDump(RunTaskJson(run, e), 2)) {
            piece += c;
            if (c == '\n') piece.append(4, ' ');
          }
        }
        write(piece);
        any = true;
        return Status::Ok();
      }));
  write(any ? "\n  }\n}" : "}\n}");
  return Status::Ok();
}

nlohmann::json TransitionJson(const storage::TransitionRecord& r) {
  nlohmann::json j = {{"seq", r.seq},         {"ts", FormatTimestamp(r.ts)},
                      {"ts_us", r.ts},        {"run_id", r.run_id},
                      {"task_id", r.task_id}, {"exec_id", r.exec_id},
                      {"attempt", r.attempt}, {"from", ToString(r.from)},
                      {"to", ToString(r.to)}, {"reason", r.reason},
                      {"actor", r.actor}};
  // A note (slow flag, operator decision) is an event, not a state change.
  if (r.note) j["note"] = true;
  if (!r.worker_id.empty()) j["worker"] = r.worker_id;
  return j;
}

nlohmann::json RunLineJson(const storage::RunRecord& r) {
  nlohmann::json j = {{"run_id", r.run_id},
                      {"pipeline", r.pipeline_name},
                      {"state", ToString(r.status)},
                      {"tasks", r.task_count},
                      {"created_at", FormatTimestamp(r.created_at)}};
  if (r.finished_at) j["duration_ms"] = (r.finished_at - r.started_at) / kMicrosPerMilli;
  if (r.pipeline_version) j["pipeline_version"] = r.pipeline_version;  // registry
  if (!r.rerun_of.empty()) j["rerun_of"] = r.rerun_of;
  if (r.handled_failures) j["handled_failures"] = r.handled_failures;
  return j;
}

nlohmann::json ExecutionJson(const storage::ExecutionRecord& e) {
  nlohmann::json j = {{"exec_id", e.exec_id},   {"run_id", e.run_id},
                      {"task_id", e.task_id},   {"state", ToString(e.state)},
                      {"attempt", e.attempt},   {"retries_used", e.retries_used},
                      {"requeues", e.requeues}, {"trace_id", e.trace_id}};
  // Only an attempt that ended by itself has an exit code (not a RUNNING,
  // READY or CANCELED one), as in the run's status.
  if (EndedByItself(e.state)) j["exit_code"] = e.exit_code;
  auto stamp = [&](const char* key, Micros t) {
    if (t) j[key] = FormatTimestamp(t);
  };
  stamp("ready_at", e.ready_at);
  stamp("started_at", e.started_at);
  stamp("finished_at", e.finished_at);
  stamp("next_retry_at", e.next_retry_at);
  if (!e.worker_id.empty()) j["worker"] = e.worker_id;
  if (!e.error.empty()) j["error"] = e.error;
  if (!e.output.empty()) j["output_tail"] = e.output;
  if (!e.logs_truncated.empty()) j["logs_truncated"] = e.logs_truncated;
  if (!e.task_output.empty()) j["output"] = TaskOutputJson(e.task_output);
  if (!e.item.empty()) j["item"] = e.item;
  return j;
}

}  // namespace apollo11::actors
