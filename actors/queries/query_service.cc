#include "actors/queries/query_service.h"

#include <algorithm>
#include <chrono>
#include <exception>
#include <map>
#include <optional>

#include "actors/client_protocol.h"
#include "actors/queries/run_views.h"
#include "common/json_dump.h"
#include "common/log_event.h"
#include "common/log_scan.h"
#include "common/utf8.h"
#include "dsl/credentials.h"
#include "dsl/pipeline_json.h"
#include "storage/records.h"

namespace apollo11::actors {
namespace {

// How far back the pipeline queries look, in runs (newest first): the journal
// indexes runs by time, not by pipeline name.
constexpr size_t kPipelineListWindow = 1000;
constexpr size_t kPipelineFindWindow = 10000;
// sched: how many of its newest fires `pipelines show NAME` lists.
constexpr size_t kShownFires = 20, kMaxShownFires = 1000;
// A trace_log reply keeps the newest lines up to this size.
constexpr size_t kMaxTraceReply = 4u << 20;

// Refusals quote what the client sent (an id, a stream name): never more
// than this much of it comes back.
constexpr size_t kMaxErrorBytes = 512;
// `runs` lists at most this many, whatever limit the client asks for.
constexpr uint32_t kMaxRunsListed = 1000;

std::string CapError(std::string error) {
  if (error.size() > kMaxErrorBytes) {
    const size_t cut = error.size() - kMaxErrorBytes;
    error.resize(kMaxErrorBytes);
    error += "... (" + std::to_string(cut) + " more bytes)";
  }
  return error;
}

QueryReply Fail(const Status& s) {
  QueryReply reply;
  reply.code = ReplyCode(s);
  reply.error = CapError(s.message());
  return reply;
}

QueryReply Json(const nlohmann::json& doc) {
  QueryReply reply;
  reply.json = SafeJsonDump(doc);
  return reply;
}

// While the journal cannot be written, every answer says so, and a run's
// status (or an explanation) carries it as `journal_error`: what is shown is
// the last durable state.
void AddJournalHealth(const Query& q, const JournalHealth& health, Micros now, QueryReply* reply) {
  if (!health.failing()) return;
  reply->journal_error = health.Summary(now);
  const bool annotated = q.kind == QueryKind::kStatus || q.kind == QueryKind::kExplain;
  if (!annotated || !reply->error.empty()) return;
  auto doc = ParseJsonBounded(reply->json);
  if (!doc.is_object()) return;
  if (q.kind == QueryKind::kExplain) {
    doc["explain"] = doc.value("explain", "") +
                     "; held: nothing is promoted or placed while the journal cannot be written";
  }
  doc["journal_error"] = health.ToJson(now);
  reply->json = SafeJsonDump(doc);
}

}  // namespace

QueryReply QueryFailure(const Status& s) { return Fail(s); }

const std::array<QueryService::Handler, kQueryKindLast + 1> QueryService::kHandlers = [] {
  std::array<Handler, kQueryKindLast + 1> h{};
  auto at = [&h](QueryKind k) -> Handler& { return h[static_cast<uint8_t>(k)]; };
  at(QueryKind::kStatus) = &QueryService::AnswerStatus;
  at(QueryKind::kRun) = &QueryService::AnswerRun;
  at(QueryKind::kHistory) = &QueryService::AnswerHistory;
  at(QueryKind::kRuns) = &QueryService::AnswerRuns;
  at(QueryKind::kWorkers) = &QueryService::AnswerWorkers;
  at(QueryKind::kExplain) = &QueryService::AnswerExplain;
  at(QueryKind::kExecution) = &QueryService::AnswerExecution;
  at(QueryKind::kPipelines) = &QueryService::AnswerPipelines;
  at(QueryKind::kPipeline) = &QueryService::AnswerPipeline;
  at(QueryKind::kHealth) = &QueryService::AnswerHealth;
  at(QueryKind::kLogs) = &QueryService::AnswerLogs;
  at(QueryKind::kTraceLog) = &QueryService::AnswerTraceLog;
  at(QueryKind::kPipelineVersions) = &QueryService::AnswerPipelineVersions;  // registry
  at(QueryKind::kAudit) = &QueryService::AnswerAudit;
  at(QueryKind::kRunsPage) = &QueryService::AnswerRunsPage;
  at(QueryKind::kChanges) = &QueryService::AnswerChanges;
  return h;
}();

QueryService::QueryService(storage::StoreReaders stores, std::string log_file)
    : journal_(stores.runs),
      registry_(stores.registry),
      schedules_(stores.schedules),
      audit_(stores.audit),
      log_file_(std::move(log_file)) {}

QueryReply QueryService::AnswerChanges(const Query&, const QueryContext&) const {
  return Fail(Status::Unsupported("the changes query is answered by a coordinator's scheduler"));
}

QueryReply QueryService::Answer(const Query& q, const QueryContext& ctx) const noexcept {
  const auto index = static_cast<uint8_t>(q.kind);
  QueryReply reply;
  try {
    if (index == 0 || index > kQueryKindLast) {
      reply = Fail(Status::InvalidInput("unknown query kind " + std::to_string(index) +
                                        " (client protocol version " +
                                        std::to_string(kClientProtocolVersion) + ")"));
    } else {
      reply = (this->*kHandlers[index])(q, ctx);
    }
    if (ctx.health != nullptr) AddJournalHealth(q, *ctx.health, ctx.now, &reply);
  } catch (const std::exception& e) {
    reply = Fail(
        Status::Internal(std::string("query ") + QueryKindName(q.kind) + " failed: " + e.what()));
  } catch (...) {
    reply = Fail(Status::Internal(std::string("query ") + QueryKindName(q.kind) + " failed"));
  }
  return reply;
}

QueryReply QueryService::AnswerStatus(const Query& q, const QueryContext&) const {
  auto run = journal_->GetRun(q.id);
  if (!run.ok()) return Fail(run.status());
  if (!run->has_value()) return Fail(Status::NotFound("no run " + q.id));
  // What fits a client frame, with room for the reply's other fields.
  const size_t budget = ClientLimits().max_frame - (size_t{1} << 20);
  auto text = RunSummaryText(**run, journal_, budget);
  if (!text.ok()) return Fail(text.status());
  QueryReply reply;
  reply.json = std::move(text).value();
  return reply;
}

// One run's record without its tasks: what `status --wait` polls, so a
// client waiting on a 100k-task run does not make the scheduler read every
// execution five times a second.
QueryReply QueryService::AnswerRun(const Query& q, const QueryContext&) const {
  auto run = journal_->GetRun(q.id);
  if (!run.ok()) return Fail(run.status());
  if (!run->has_value()) return Fail(Status::NotFound("no run " + q.id));
  return Json(RunLineJson(**run));
}

QueryReply QueryService::AnswerHistory(const Query& q, const QueryContext&) const {
  const bool is_exec = q.id.find('.') != std::string::npos;
  auto records = is_exec ? journal_->HistoryOfExecution(q.id) : journal_->HistoryOfRun(q.id);
  if (!records.ok()) return Fail(records.status());
  if (records->empty()) {
    return Fail(Status::NotFound(std::string("no ") + (is_exec ? "execution " : "run ") + q.id));
  }
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : *records) out.push_back(TransitionJson(r));
  return Json(out);
}

QueryReply QueryService::AnswerRuns(const Query& q, const QueryContext&) const {
  auto runs = journal_->ListRuns(q.limit ? std::min(q.limit, kMaxRunsListed) : 20);
  if (!runs.ok()) return Fail(runs.status());
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : *runs) out.push_back(RunLineJson(r));
  return Json(out);
}

QueryReply QueryService::AnswerWorkers(const Query&, const QueryContext& ctx) const {
  nlohmann::json out = nlohmann::json::array();
  if (ctx.workers == nullptr) return Json(out);
  for (const WorkerInfo& w : ctx.workers->workers) {
    // The dispatcher counts the executions a worker holds: it runs up to its
    // slots of them and queues the rest (--prefetch); a draining worker
    // (0 slots) runs what it holds.
    const uint32_t running = w.slots == 0 ? w.running : std::min(w.running, w.slots);
    out.push_back({{"id", w.id},
                   {"group", w.group},
                   {"slots", w.slots},
                   {"running", running},
                   {"queued", w.running - running},
                   {"credits", w.credits},
                   {"last_heartbeat", FormatTimestamp(w.last_seen)},
                   {"connected_since", FormatTimestamp(w.joined_at)},
                   {"losses", w.losses},
                   {"labels", w.labels},
                   {"state", "connected"}});
  }
  return Json(out);
}

QueryReply QueryService::AnswerExplain(const Query& q, const QueryContext& ctx) const {
  if (ctx.core == nullptr) return Fail(Status::Internal("explain: no scheduler state"));
  static const WorkersSnapshot kNoWorkers;
  auto text = ctx.core->Explain(q.id, q.arg, ctx.workers ? *ctx.workers : kNoWorkers);
  if (text.ok()) return Json({{"run_id", q.id}, {"task_id", q.arg}, {"explain", *text}});
  if (text.status().code() != StatusCode::kNotFound) return Fail(text.status());
  // Not active: the journal knows how it ended.
  auto history = journal_->HistoryOfExecution(q.id + "." + q.arg);
  if (!history.ok()) return Fail(history.status());
  if (history->empty()) return Fail(Status::NotFound("no task " + q.arg + " in run " + q.id));
  const auto& last = history->back();
  return Json(
      {{"run_id", q.id},
       {"task_id", q.arg},
       {"explain", std::string(ToString(last.to)) + ": " + last.reason + " (run finished)"}});
}

QueryReply QueryService::AnswerExecution(const Query& q, const QueryContext&) const {
  auto exec = journal_->GetExecution(q.id);
  if (!exec.ok()) return Fail(exec.status());
  if (!exec->has_value()) return Fail(Status::NotFound("no execution " + q.id));
  auto history = journal_->HistoryOfExecution(q.id);
  if (!history.ok()) return Fail(history.status());
  nlohmann::json out = ExecutionJson(**exec);
  out["history"] = nlohmann::json::array();
  for (const auto& r : *history) out["history"].push_back(TransitionJson(r));
  return Json(out);
}

// Every pipeline seen in the newest runs, with its newest snapshot.
QueryReply QueryService::AnswerPipelines(const Query&, const QueryContext& ctx) const {
  auto runs = journal_->ListRuns(kPipelineListWindow);
  if (!runs.ok()) return Fail(runs.status());
  nlohmann::json out = nlohmann::json::array();
  std::map<std::string, size_t> index;
  for (const auto& r : *runs) {
    auto [it, fresh] = index.emplace(r.pipeline_name, out.size());
    if (fresh) {
      out.push_back({{"name", r.pipeline_name},
                     {"hash", r.pipeline_hash},
                     {"last_run_id", r.run_id},
                     {"last_run_state", ToString(r.status)},
                     {"last_run_at", FormatTimestamp(r.created_at)},
                     {"runs", 0}});
    }
    out[it->second]["runs"] = out[it->second]["runs"].get<int>() + 1;
  }
  Status registered = AddRegistered(&out);
  if (!registered.ok()) return Fail(registered);
  AddSchedules(ctx, &out);
  return Json(out);
}

QueryReply QueryService::AnswerPipelineVersions(const Query& q, const QueryContext&) const {
  auto doc = PipelineVersionsJson(q.id);
  if (!doc.ok()) return Fail(doc.status());
  return Json(*doc);
}

// The newest snapshot of pipeline `id`, for triggering a run of it. A
// pipeline is usually found among the newest few runs: widen the look back
// only when needed (this runs on the scheduler's thread).
QueryReply QueryService::AnswerPipeline(const Query& q, const QueryContext&) const {
  auto registered = RegisteredPipeline(q);
  if (!registered.ok()) return Fail(registered.status());
  if (registered->has_value()) {
    nlohmann::json& out = **registered;
    const size_t shown = q.limit == 0 ? kShownFires : std::min<size_t>(q.limit, kMaxShownFires);
    auto fires = RecentFires(out.value("name", ""), shown);
    if (!fires.ok()) return Fail(fires.status());
    if (!fires->empty()) out["fires"] = std::move(*fires);
    return Json(out);
  }
  std::optional<storage::RunRecord> run;
  for (size_t window = 100; !run && window <= kPipelineFindWindow; window *= 10) {
    auto runs = journal_->ListRuns(window);
    if (!runs.ok()) return Fail(runs.status());
    for (auto& r : *runs) {
      if (r.pipeline_name == q.id) {
        run = std::move(r);
        break;
      }
    }
    if (runs->size() < window) break;  // that was all of them
  }
  if (!run) return Fail(Status::NotFound("no pipeline " + q.id + " in the journal"));
  auto snapshot = journal_->GetPipeline(run->pipeline_hash);
  if (!snapshot.ok()) return Fail(snapshot.status());
  if (!snapshot->has_value()) {
    return Fail(Status::NotFound("no snapshot " + run->pipeline_hash + " of pipeline " + q.id));
  }
  const bool full = q.arg == "full";
  if (full && FirstInvalidUtf8(**snapshot) == std::string_view::npos) {
    // Splice the stored canonical JSON in as it is: no parse of a snapshot
    // that may be megabytes.
    QueryReply reply =
        Json({{"name", q.id}, {"hash", run->pipeline_hash}, {"last_run_id", run->run_id}});
    reply.json.pop_back();
    reply.json += ",\"snapshot\":" + **snapshot + "}";
    return reply;
  }
  auto doc = ParseJsonBounded(**snapshot);
  if (doc.is_discarded()) {
    return Fail(Status::Corrupt("snapshot " + run->pipeline_hash + " is not JSON"));
  }
  if (!full) {
    dsl::HideEnvValues(&doc);
    dsl::RedactCredentials(&doc);
  }
  return Json({{"name", q.id},
               {"hash", run->pipeline_hash},
               {"last_run_id", run->run_id},
               {"snapshot", doc}});
}

QueryReply QueryService::AnswerHealth(const Query&, const QueryContext& ctx) const {
  return Json({{"ready", true},
               {"journal_writable", ctx.health == nullptr || !ctx.health->failing()},
               {"active_runs", ctx.core ? ctx.core->active_runs() : 0},
               {"backlog", ctx.core ? ctx.core->in_flight() : 0}});
}

QueryReply QueryService::AnswerLogs(const Query&, const QueryContext&) const {
  return Fail(Status::Internal("logs are fetched from the worker, not answered here"));
}

// The coordinator's log lines that mention the execution (the newest
// kLogScanBytes of its log files), for `apollo11 trace`: reply.data holds
// them, one per line; reply.json says how long the scan took. NotFound for
// an id neither the logs nor the journal know. Runs on the
// scheduler thread: bounded so that it stalls scheduling for tens of ms at
// most.
QueryReply QueryService::AnswerTraceLog(const Query& q, const QueryContext&) const {
  if (log_file_.empty()) {
    return Fail(Status::Unsupported("this coordinator keeps no log file"));
  }
  const auto start = std::chrono::steady_clock::now();
  auto lines = ScanLogLines(log_file_, q.id);
  if (!lines.ok()) return Fail(lines.status());
  if (lines->empty()) {
    // No line about it: an id the journal does not know is a NotFound (an
    // execution whose run retention removed may still have lines).
    auto rec = journal_->GetExecution(q.id);
    if (!rec.ok()) return Fail(rec.status());
    if (!rec->has_value()) return Fail(Status::NotFound("no execution " + q.id));
  }
  // The newest lines when there are very many: one reply stays small.
  size_t first = lines->size(), bytes = 0;
  while (first > 0 && bytes + (*lines)[first - 1].size() + 1 <= kMaxTraceReply) {
    bytes += (*lines)[--first].size() + 1;
  }
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  QueryReply reply = Json({{"lines", lines->size() - first},
                           {"dropped", first},
                           {"scan_ms", static_cast<double>(us) / 1000.0}});
  for (size_t i = first; i < lines->size(); ++i) reply.data += (*lines)[i] + "\n";
  return reply;
}

Result<LogFetchPlan> QueryService::PlanLogFetch(const Query& q) const noexcept {
  try {
    auto plan = PlanLogFetchOrThrow(q);
    if (!plan.ok()) return Status::Error(plan.status().code(), CapError(plan.status().message()));
    return plan;
  } catch (const std::exception& e) {
    return Status::Internal(std::string("logs query failed: ") + e.what());
  } catch (...) {
    return Status::Internal("logs query failed");
  }
}

Result<LogFetchPlan> QueryService::PlanLogFetchOrThrow(const Query& q) const {
  auto rec = journal_->GetExecution(q.id);
  if (!rec.ok()) return rec.status();
  if (!rec->has_value()) return Status::NotFound("no execution " + q.id);
  const storage::ExecutionRecord& e = **rec;
  const uint32_t attempt = q.attempt ? q.attempt : e.attempt;
  if (attempt == 0) return Status::NotFound(q.id + " never ran: it has no logs");
  std::string worker = attempt == e.attempt ? e.worker_id : "";
  if (attempt != e.attempt) {
    // An older attempt: its worker is on its READY -> RUNNING transition.
    auto history = journal_->HistoryOfExecution(q.id);
    if (!history.ok()) return history.status();
    worker = storage::WorkerOfAttempt(*history, attempt);
  }
  if (worker.empty()) {
    return Status::NotFound(q.id + " attempt " + std::to_string(attempt) +
                            " was never placed on a worker: it has no logs");
  }
  if (q.arg != "out" && q.arg != "err" && q.arg != "events") {
    return Status::InvalidInput("stream must be out, err or events, not '" + q.arg + "'");
  }
  LogFetchPlan plan;
  plan.fetch.worker_id = worker;
  plan.fetch.request.exec_id = q.id;
  plan.fetch.request.attempt = attempt;
  plan.fetch.request.stream = q.arg == "err"      ? 1
                              : q.arg == "events" ? transport::kLogStreamEvents
                                                  : 0;
  plan.fetch.request.offset = q.offset;
  plan.fetch.request.max_bytes = q.limit;
  plan.meta = {{"exec_id", q.id},
               {"attempt", attempt},
               {"latest_attempt", e.attempt},
               {"worker", worker},
               {"stream", q.arg},
               {"offset", q.offset},
               {"state", ToString(e.state)},
               {"final", IsFinal(e.state)}};
  return plan;
}

QueryReply QueryService::LogReply(nlohmann::json meta, transport::LogReply fetched) noexcept {
  QueryReply reply;
  if (!fetched.error.empty()) {
    // The worker could not be asked or could not read the file.
    reply.code = static_cast<uint8_t>(StatusCode::kIo);
    reply.error = std::move(fetched.error);
    return reply;
  }
  meta["size"] = fetched.size;
  meta["running"] = fetched.running;
  meta["bytes"] = fetched.data.size();
  reply.json = SafeJsonDump(meta);
  reply.data = std::move(fetched.data);
  return reply;
}

}  // namespace apollo11::actors
