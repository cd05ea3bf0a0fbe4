#pragma once
// The scheduler's answers to read-only client questions (Query), from the
// journal (readers never block the writer) and the scheduler's in-memory
// state. One handler per QueryKind. Socket-free: it takes a Query and
// returns the QueryReply; every JSON document it writes goes through
// SafeJsonDump, so task output or file names that are not UTF-8 are
// replaced, never thrown on.

#include <array>
#include <nlohmann/json.hpp>
#include <string>

#include "actors/client_protocol.h"
#include "actors/internal_messages.h"
#include "actors/scheduler/journal_health.h"
#include "actors/scheduler/scheduler_core.h"
#include "actors/schedules/schedule_core.h"
#include "common/clock.h"
#include "storage/run_store.h"

namespace apollo11::actors {

// What a query reads besides the journal, all owned by the scheduler loop
// and valid for the duration of one call.
struct QueryContext {
  const SchedulerCore* core = nullptr;
  const WorkersSnapshot* workers = nullptr;  // the dispatcher's latest
  const JournalHealth* health = nullptr;
  const ScheduleCore* schedules = nullptr;  // sched: next fire times (null: none shown)
  Micros now = 0;                           // Clock::Steady(), as JournalHealth takes it
};

// Where a kLogs query must go: the worker that ran the attempt, and the
// reply's JSON before the worker's figures are added.
struct LogFetchPlan {
  LogFetch fetch;
  nlohmann::json meta;
};

// A reply that carries `s`, its error capped as every answer's is; for the
// handlers in other files (query_audit.cc).
QueryReply QueryFailure(const Status& s);

// The most runs one page of the history holds (QueryKind::kRunsPage).
inline constexpr uint32_t kMaxRunsPage = 1000;
// The filter of a kRunsPage query: `text` its JSON (query_runs_page.cc),
// `limit` the page size (0 = 50; at most kMaxRunsPage). InvalidInput names
// an unknown field, an unknown state or a cursor no page gave.
Result<storage::RunFilter> RunFilterFromJson(std::string_view text, uint32_t limit);
// A page as the kRunsPage query answers it: {"runs", "next_cursor" (null
// when complete), "complete"}.
nlohmann::json RunsPageJson(const storage::RunPage& page);

// An audit record as the audit query answers it (`apollo11 audit --json`,
// GET /api/audit).
nlohmann::json AuditRecordJson(const storage::AuditRecord& r);

class QueryService {
 public:
  // The most records one audit answer holds.
  static constexpr size_t kMaxAuditAnswer = 10000;

  // The stores must outlive the service. `log_file`: this node's JSON log
  // (kTraceLog reads it); empty when none is kept.
  QueryService(storage::StoreReaders stores, std::string log_file);

  // The answer to `q`. Never throws: a failure (a journal error, an unknown
  // kind, anything thrown below) is a reply with `code` and `error` set.
  // While the journal cannot be written, `journal_error` is set and a run's
  // status or explanation says so. kLogs is not answered here (PlanLogFetch).
  QueryReply Answer(const Query& q, const QueryContext& ctx) const noexcept;

  // For a kLogs query: the worker to ask and what to ask it (request_id
  // left 0 for the caller to set), from the journal. NotFound /
  // InvalidInput for the client's mistakes. Never throws.
  Result<LogFetchPlan> PlanLogFetch(const Query& q) const noexcept;

  // The reply to a kLogs query once the worker answered `fetched` (its
  // figures added to `meta`).
  static QueryReply LogReply(nlohmann::json meta, transport::LogReply fetched) noexcept;

 private:
  using Handler = QueryReply (QueryService::*)(const Query&, const QueryContext&) const;

  QueryReply AnswerStatus(const Query& q, const QueryContext& ctx) const;
  QueryReply AnswerRun(const Query& q, const QueryContext& ctx) const;
  QueryReply AnswerHistory(const Query& q, const QueryContext& ctx) const;
  QueryReply AnswerRuns(const Query& q, const QueryContext& ctx) const;
  QueryReply AnswerWorkers(const Query& q, const QueryContext& ctx) const;
  QueryReply AnswerExplain(const Query& q, const QueryContext& ctx) const;
  QueryReply AnswerExecution(const Query& q, const QueryContext& ctx) const;
  QueryReply AnswerPipelines(const Query& q, const QueryContext& ctx) const;
  QueryReply AnswerPipeline(const Query& q, const QueryContext& ctx) const;
  QueryReply AnswerHealth(const Query& q, const QueryContext& ctx) const;
  QueryReply AnswerLogs(const Query& q, const QueryContext& ctx) const;
  QueryReply AnswerTraceLog(const Query& q, const QueryContext& ctx) const;
  Result<LogFetchPlan> PlanLogFetchOrThrow(const Query& q) const;
  // registry (query_registry.cc): adds the registered pipelines' versions
  // and pause state to a kPipelines answer.
  Status AddRegistered(nlohmann::json* pipelines) const;
  // The entry of pipeline `name` in a pipelines answer, appended if absent.
  static nlohmann::json& EntryOf(nlohmann::json* pipelines, const std::string& name);
  // sched: each schedule's cron, zone and next and last fire (query_schedules.cc).
  static void AddSchedules(const QueryContext& ctx, nlohmann::json* pipelines);
  // sched: the newest fires (at most `limit`) of pipeline `name`, newest first.
  Result<nlohmann::json> RecentFires(const std::string& name, size_t limit) const;
  // registry: the snapshot of registered NAME[@VERSION] with its version;
  // nullopt when NAME (without @) is not registered.
  Result<std::optional<nlohmann::json>> RegisteredPipeline(const Query& q) const;
  // registry: the versions of `name`; NotFound when not registered.
  Result<nlohmann::json> PipelineVersionsJson(const std::string& name) const;
  QueryReply AnswerPipelineVersions(const Query& q, const QueryContext& ctx) const;
  // The audit trail (query_audit.cc).
  QueryReply AnswerAudit(const Query& q, const QueryContext& ctx) const;
  // A page of the run history (query_runs_page.cc).
  QueryReply AnswerRunsPage(const Query& q, const QueryContext& ctx) const;
  // kChanges is long-polled by the scheduler's client sessions, never
  // answered here: an error if it reaches this service.
  QueryReply AnswerChanges(const Query& q, const QueryContext& ctx) const;

  // Handlers indexed by QueryKind (entry 0 is unused).
  static const std::array<Handler, kQueryKindLast + 1> kHandlers;

  storage::RunReader* journal_;
  storage::RegistryStore* registry_;
  storage::ScheduleStore* schedules_;
  storage::AuditStore* audit_;
  std::string log_file_;
};

}  // namespace apollo11::actors
