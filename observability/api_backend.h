#pragma once
// What the HTTP JSON API asks of the coordinator. The node implements it as a
// client of the coordinator's client endpoint (cli/coordinator_api.h), the
// same protocol the `apollo11` CLI speaks, so the HTTP server shares no state
// with the actors. Calls come from the HTTP server's threads one at a time
// (the server serializes them).

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "common/clock.h"
#include "common/status.h"
#include "observability/http_access.h"
#include "storage/audit_records.h"

namespace apollo11::observability {

class ApiBackend {
 public:
  virtual ~ApiBackend() = default;
  // Names the caller the next mutating calls act for (until the next
  // ActAs): the coordinator journals it in the audit trail (name, role,
  // address, request id) and as the actor of what it changes
  // ("http:alice"). Called under the same lock as the calls.
  virtual void ActAs(const Principal& caller) { (void)caller; }
  // Records in the audit trail what `caller` did or was refused on this
  // node itself (a resign, a refusal by the HTTP API): the coordinator's
  // AuditNote. Ok once journaled. Unsupported unless the backend does it.
  struct Note {
    std::string action, target;
    bool ok = false;
    std::string outcome;
  };
  virtual Status Record(const Principal& caller, const Note& note) {
    (void)caller, (void)note;
    return Status::Unsupported("the audit trail is not served by this backend");
  }
  // The audit trail: {"records": [...]}, newest first (the coordinator's
  // audit query). Unsupported unless the backend implements it.
  virtual Result<nlohmann::json> Audit(const storage::AuditFilter& filter) {
    (void)filter;
    return Status::Unsupported("the audit trail is not served by this backend");
  }
  // A read-only question, a kind named as actors::kQueryKindNames spells it
  // ("runs", "status", "history", "execution", "workers", "pipelines",
  // "health"). Errors carry the coordinator's StatusCode (NotFound for an
  // unknown id), which the HTTP server maps to its status.
  virtual Result<nlohmann::json> Query(const std::string& kind, const std::string& id,
                                       uint32_t limit) = 0;
  // Starts a run of the newest journaled snapshot of pipeline `name`;
  // `params` override the pipeline's declared defaults (an undeclared one is
  // InvalidInput). Returns the run id.
  // A page of the run history (QueryKind::kRunsPage): `filter_json` as
  // that query's arg, `limit` the page size. {"runs", "next_cursor",
  // "complete"}.
  virtual Result<nlohmann::json> RunsPage(const std::string& filter_json, uint32_t limit) {
    (void)filter_json;
    (void)limit;
    return Status::Unsupported("this node cannot page the run history");
  }
  // The runs changed since position `since` (actors/scheduler/change_feed.h:
  // "" asks where the feed is now), waiting up to `wait_ms` for one.
  // Unsupported unless the backend implements it.
  virtual Result<nlohmann::json> Changes(const std::string& since, uint32_t wait_ms) {
    (void)since, (void)wait_ms;
    return Status::Unsupported("live changes are not served by this backend");
  }
  virtual Result<std::string> Trigger(const std::string& name,
                                      const std::map<std::string, std::string>& params) = 0;
  // registry: a trigger of a registered pipeline: NAME@version ("" = the
  // active one), params over the declared defaults, and an idempotency key
  // ("" = none; the same key twice answers the first run). Returns {run_id,
  // version, existing}. By default, Trigger of the name (no version or key).
  struct TriggerSpec {
    std::string name, version, key;
    std::map<std::string, std::string> params;
  };
  virtual Result<nlohmann::json> TriggerRun(const TriggerSpec& t) {
    if (!t.version.empty() || !t.key.empty()) {
      return Status::Unsupported("versions and idempotency keys are not served by this backend");
    }
    auto run_id = Trigger(t.name, t.params);
    if (!run_id.ok()) return run_id.status();
    return nlohmann::json{{"run_id", *run_id}};
  }
  // registry: registers the pipeline YAML `yaml` (named `label` in its
  // diagnostics: "request body:3:11: error: ...") as a new version; nothing
  // is read from this machine's disk for it. Returns {name, version, label,
  // unchanged}; InvalidInput with the positioned errors when it does not
  // validate (the coordinator then raises pipeline_rejected).
  virtual Result<nlohmann::json> Register(const std::string& yaml, const std::string& label) {
    (void)yaml, (void)label;
    return Status::Unsupported("the pipeline registry is not served by this backend");
  }
  // registry and sched: "pause", "unpause" or "remove" pipeline `name`, or "backfill"
  // its schedule: one fire per scheduled time in [from, to] (wall Micros),
  // `max_active` at once (0: the schedule's max_active_runs). Returns the
  // coordinator's answer ({name, active, paused} or {name, queued}).
  struct RegistryChange {
    std::string op, name;
    Micros from = 0, to = 0;
    int max_active = 0;
    bool dry_run = false;  // backfill: the times it would queue, nothing queued
  };
  virtual Result<nlohmann::json> ChangeRegistry(const RegistryChange& c) {
    (void)c;
    return Status::Unsupported("pause and backfill are not served by this backend");
  }
  // Cancels an active run. NotFound when the run is unknown.
  virtual Status Cancel(const std::string& run_id, const std::string& reason) = 0;
  // Starts a rerun of finished run `run_id` (as `apollo11 rerun`): `from`
  // empty reruns what failed, else task `from` and, with `downstream`, what
  // depends on it. Returns the new run's id. Unsupported unless the backend
  // implements it.
  virtual Result<std::string> Rerun(const std::string& run_id, const std::string& from,
                                    bool downstream) {
    (void)run_id, (void)from, (void)downstream;
    return Status::Unsupported("reruns are not served by this backend");
  }
  // Answers a slow-task flag on `exec_id`: kill the execution or keep it
  // running (as `apollo11 confirm`). Returns the coordinator's sentence.
  // Unsupported unless the backend implements it.
  virtual Result<std::string> Confirm(const std::string& exec_id, bool kill) {
    (void)exec_id, (void)kill;
    return Status::Unsupported("slow-task answers are not served by this backend");
  }
  // A slice of an execution's captured output: `stream` "out" or "err",
  // `attempt` 0 = the latest, at most `max_bytes` from `offset`, fetched from
  // the worker that ran it. Returns the coordinator's description (exec_id,
  // attempt, worker, stream, offset, size, running) and sets `data` to the
  // bytes. Unsupported unless the backend implements it.
  virtual Result<nlohmann::json> Logs(const std::string& exec_id, const std::string& stream,
                                      uint32_t attempt, uint64_t offset, uint32_t max_bytes,
                                      std::string* data) {
    (void)exec_id, (void)stream, (void)attempt, (void)offset, (void)max_bytes, (void)data;
    return Status::Unsupported("task logs are not served by this backend");
  }
  // The coordinator's log lines about an execution (as `apollo11 trace`
  // shows them), in `data`; returns their description. Unsupported unless
  // the backend implements it.
  virtual Result<nlohmann::json> TraceLog(const std::string& exec_id, std::string* data) {
    (void)exec_id, (void)data;
    return Status::Unsupported("trace lines are not served by this backend");
  }
};

}  // namespace apollo11::observability
