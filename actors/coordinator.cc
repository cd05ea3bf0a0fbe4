#include "actors/coordinator.h"

#include <spdlog/spdlog.h>

#include <map>
#include <memory>
#include <optional>

#include "actors/actor_loop.h"
#include "actors/coordinator_health.h"
#include "actors/dispatcher_core.h"
#include "actors/journal_health.h"
#include "actors/run_views.h"
#include "common/log_event.h"
#include "common/log_scan.h"

namespace apollo11::actors {
namespace {

using std::chrono::milliseconds;
using transport::ActorPipe;
using transport::Envelope;
using SocketPtr = std::shared_ptr<zmq::socket_t>;

template <class T>
bool Decode(const Envelope& env, T* out, const char* actor) {
  auto body = transport::BodyAs<T>(env);
  if (!body.ok()) {
    spdlog::warn("{}: {}", actor, body.status().message());
    return false;
  }
  *out = std::move(*body);
  return true;
}

template <class T>
void Reply(zmq::socket_t& router, const std::string& identity, InternalType type, const T& body) {
  std::string frame;
  transport::Encode(static_cast<uint16_t>(type), body, &frame);
  Status s = transport::SendTo(router, identity, frame, /*dontwait=*/true);
  if (!s.ok()) spdlog::debug("scheduler: client gone: {}", s.message());
}

// Configures a ROUTER the outside world connects to (CURVE server when keys
// are given; options must be set before bind) and binds it, reporting the
// endpoint actually bound.
Status BindRouter(zmq::socket_t& router, const transport::SocketOptions& options,
                  const std::optional<transport::CurveKeyPair>& curve, const std::string& endpoint,
                  std::string* bound) {
  APOLLO11_RETURN_IF_ERROR(transport::ConfigureRouter(router, options));
  if (curve)
    APOLLO11_RETURN_IF_ERROR(transport::ConfigureCurveServer(router, *curve, kCurveDomain));
  auto result = transport::Bind(router, endpoint);
  if (!result.ok()) return result.status();
  *bound = *result;
  return Status::Ok();
}

// ---- scheduler -------------------------------------------------------------

// Answers a read-only client question from the journal (readers never block
// the writer) and the scheduler's in-memory state.
// How far back the pipeline queries look, in runs (newest first): the journal
// indexes runs by time, not by pipeline name.
// How long a turn waits for the dispatcher to place what it is about to
// commit. The answer normally takes tens of µs (an inproc round trip); the
// bound only matters when the dispatcher is busy with a large turn.
constexpr Micros kPlaceBeforeCommitWait = 1000;

constexpr size_t kPipelineListWindow = 1000;
constexpr size_t kPipelineFindWindow = 10000;

// The coordinator's log lines that mention `exec_id` (the newest
// kLogScanBytes of its log files), for `apollo11 trace`: reply.data holds
// them, one per line; reply.json says how long the scan took. Runs on the
// scheduler thread: bounded so that it stalls scheduling for tens of ms at most.
QueryReply TraceLogLines(const std::string& exec_id, const std::string& log_file) {
  QueryReply reply;
  if (log_file.empty()) {
    reply.error = "this coordinator keeps no log file";
    return reply;
  }
  const auto start = std::chrono::steady_clock::now();
  auto lines = ScanLogLines(log_file, exec_id);
  if (!lines.ok()) {
    reply.error = lines.status().message();
    return reply;
  }
  // The newest lines when there are very many: one reply stays small.
  constexpr size_t kMaxReply = 4u << 20;
  size_t first = lines->size(), bytes = 0;
  while (first > 0 && bytes + (*lines)[first - 1].size() + 1 <= kMaxReply) {
    bytes += (*lines)[--first].size() + 1;
  }
  for (size_t i = first; i < lines->size(); ++i) reply.data += (*lines)[i] + "\n";
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  reply.json = nlohmann::json{{"lines", lines->size() - first},
                              {"dropped", first},
                              {"scan_ms", static_cast<double>(us) / 1000.0}}
                   .dump();
  return reply;
}

QueryReply AnswerQuery(const Query& q, storage::Journal* journal, const SchedulerCore& core,
                       const WorkersSnapshot& workers, bool journal_ok,
                       const std::string& log_file) {
  QueryReply reply;
  auto fail = [&](const Status& s) {
    reply.error = s.message();
    return reply;
  };
  if (q.kind == "status") {
    auto run = journal->GetRun(q.id);
    if (!run.ok()) return fail(run.status());
    if (!run->has_value()) return fail(Status::NotFound("no run " + q.id));
    auto execs = journal->ExecutionsOfRun(q.id);
    if (!execs.ok()) return fail(execs.status());
    reply.json = RunSummaryJson(**run, *execs).dump();
  } else if (q.kind == "run") {
    // One run's record without its tasks: what `status --wait` polls, so a
    // client waiting on a 100k-task run does not make the scheduler read
    // every execution five times a second.
    auto run = journal->GetRun(q.id);
    if (!run.ok()) return fail(run.status());
    if (!run->has_value()) return fail(Status::NotFound("no run " + q.id));
    reply.json = RunLineJson(**run).dump();
  } else if (q.kind == "history") {
    const bool is_exec = q.id.find('.') != std::string::npos;
    auto records = is_exec ? journal->HistoryOfExecution(q.id) : journal->HistoryOfRun(q.id);
    if (!records.ok()) return fail(records.status());
    if (records->empty()) {
      return fail(Status::NotFound(std::string("no ") + (is_exec ? "execution " : "run ") + q.id));
    }
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : *records) out.push_back(TransitionJson(r));
    reply.json = out.dump();
  } else if (q.kind == "runs") {
    auto runs = journal->ListRuns(q.limit ? q.limit : 20);
    if (!runs.ok()) return fail(runs.status());
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : *runs) out.push_back(RunLineJson(r));
    reply.json = out.dump();
  } else if (q.kind == "workers") {
    nlohmann::json out = nlohmann::json::array();
    for (const WorkerInfo& w : workers.workers) {
      out.push_back({{"id", w.id},
                     {"group", w.group},
                     {"slots", w.slots},
                     {"running", w.running},
                     {"credits", w.credits},
                     {"last_heartbeat", FormatTimestamp(w.last_seen)},
                     {"connected_since", FormatTimestamp(w.joined_at)},
                     {"losses", w.losses},
                     {"labels", w.labels},
                     {"state", "connected"}});
    }
    reply.json = out.dump();
  } else if (q.kind == "explain") {
    auto text = core.Explain(q.id, q.arg, workers);
    if (text.ok()) {
      reply.json = nlohmann::json{{"run_id", q.id}, {"task_id", q.arg}, {"explain", *text}}.dump();
    } else if (text.status().code() == StatusCode::kNotFound) {
      // Not active: the journal knows how it ended.
      auto history = journal->HistoryOfExecution(q.id + "." + q.arg);
      if (!history.ok()) return fail(history.status());
      if (history->empty()) return fail(Status::NotFound("no task " + q.arg + " in run " + q.id));
      const auto& last = history->back();
      reply.json = nlohmann::json{{"run_id", q.id},
                                  {"task_id", q.arg},
                                  {"explain", std::string(ToString(last.to)) + ": " + last.reason +
                                                  " (run finished)"}}
                       .dump();
    } else {
      return fail(text.status());
    }
  } else if (q.kind == "execution") {
    auto exec = journal->GetExecution(q.id);
    if (!exec.ok()) return fail(exec.status());
    if (!exec->has_value()) return fail(Status::NotFound("no execution " + q.id));
    auto history = journal->HistoryOfExecution(q.id);
    if (!history.ok()) return fail(history.status());
    nlohmann::json out = ExecutionJson(**exec);
    out["history"] = nlohmann::json::array();
    for (const auto& r : *history) out["history"].push_back(TransitionJson(r));
    reply.json = out.dump();
  } else if (q.kind == "pipelines") {
    // Every pipeline seen in the newest runs, with its newest snapshot.
    auto runs = journal->ListRuns(kPipelineListWindow);
    if (!runs.ok()) return fail(runs.status());
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
    reply.json = out.dump();
  } else if (q.kind == "pipeline") {
    // The newest snapshot of pipeline `id`, for triggering a run of it. A
    // pipeline is usually found among the newest few runs: widen the look
    // back only when needed (this runs on the scheduler's thread).
    std::optional<storage::RunRecord> run;
    for (size_t window = 100; !run && window <= kPipelineFindWindow; window *= 10) {
      auto runs = journal->ListRuns(window);
      if (!runs.ok()) return fail(runs.status());
      for (auto& r : *runs) {
        if (r.pipeline_name == q.id) {
          run = std::move(r);
          break;
        }
      }
      if (runs->size() < window) break;  // that was all of them
    }
    if (!run) return fail(Status::NotFound("no pipeline " + q.id + " in the journal"));
    auto snapshot = journal->GetPipeline(run->pipeline_hash);
    if (!snapshot.ok()) return fail(snapshot.status());
    if (!snapshot->has_value()) {
      return fail(Status::NotFound("no snapshot " + run->pipeline_hash + " of pipeline " + q.id));
    }
    std::string doc =
        nlohmann::json{{"name", q.id}, {"hash", run->pipeline_hash}, {"last_run_id", run->run_id}}
            .dump();
    doc.pop_back();  // splice the stored canonical JSON in as it is
    reply.json = doc + ",\"snapshot\":" + **snapshot + "}";
  } else if (q.kind == "health") {
    reply.json = nlohmann::json{{"ready", true},
                                {"journal_writable", journal_ok},
                                {"active_runs", core.active_runs()},
                                {"backlog", core.in_flight()}}
                     .dump();
  } else if (q.kind == "trace_log") {
    return TraceLogLines(q.id, log_file);
  } else {
    reply.error = "unknown query '" + q.kind + "'";
  }
  return reply;
}

// A `logs` query waiting for the worker's answer.
struct PendingLog {
  std::string identity;  // the client
  nlohmann::json meta;   // exec_id, attempt, worker, stream, offset
  Micros deadline = 0;
};

// Where a `logs` query must go: the worker that ran the attempt asked for
// (the latest by default), from the journal. Fills `fetch` and `meta`.
Status PrepareLogFetch(const Query& q, storage::Journal* journal, uint64_t request_id,
                       LogFetch* fetch, nlohmann::json* meta) {
  auto rec = journal->GetExecution(q.id);
  if (!rec.ok()) return rec.status();
  if (!rec->has_value()) return Status::NotFound("no execution " + q.id);
  const storage::ExecutionRecord& e = **rec;
  const uint32_t attempt = q.attempt ? q.attempt : e.attempt;
  if (attempt == 0) return Status::NotFound(q.id + " never ran: it has no logs");
  std::string worker = attempt == e.attempt ? e.worker_id : "";
  if (attempt != e.attempt) {
    // An older attempt: its worker is on its READY -> RUNNING transition.
    auto history = journal->HistoryOfExecution(q.id);
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
  fetch->worker_id = worker;
  fetch->request.request_id = request_id;
  fetch->request.exec_id = q.id;
  fetch->request.attempt = attempt;
  fetch->request.stream = q.arg == "err" ? 1 : q.arg == "events" ? transport::kLogStreamEvents : 0;
  fetch->request.offset = q.offset;
  fetch->request.max_bytes = q.limit;
  *meta = {{"exec_id", q.id},
           {"attempt", attempt},
           {"latest_attempt", e.attempt},
           {"worker", worker},
           {"stream", q.arg},
           {"offset", q.offset},
           {"state", ToString(e.state)},
           {"final", IsFinal(e.state)}};
  return Status::Ok();
}

// Raised on every failed commit; the Notifier folds the retries of one
// outage into one delivery per fold window.
alerts::AlertEvent JournalErrorAlert(std::string summary, Micros now) {
  alerts::AlertEvent a;
  a.type = alerts::AlertType::kJournalError;
  a.ts = now;
  a.reason = "journal commit failed: " + std::move(summary);
  return a;
}

struct SchedulerParams {
  zmq::context_t* ctx;
  storage::Journal* journal;
  const Clock* clock;
  SchedulerOptions options;
  std::string client_endpoint;
  SocketPtr disp, recon;
  std::string* bound_client;
  std::optional<transport::CurveKeyPair> curve;
  RecoveryReport* recovery;
  RetentionOptions retention;
  std::string log_file;
  Millis health_interval;
};

// While the journal cannot be written, every answer says so, and a run's
// status (or an explanation) carries it as `journal_error`: what is shown is
// the last durable state.
void AddJournalHealth(const Query& q, const JournalHealth& health, Micros now, QueryReply* reply) {
  if (!health.failing()) return;
  reply->journal_error = health.Summary(now);
  if ((q.kind != "status" && q.kind != "explain") || !reply->error.empty()) return;
  auto doc = nlohmann::json::parse(reply->json, nullptr, false);
  if (!doc.is_object()) return;
  if (q.kind == "explain") {
    doc["explain"] = doc.value("explain", "") +
                     "; held: nothing is promoted or placed while the journal cannot be written";
  }
  doc["journal_error"] = health.ToJson(now);
  reply->json = doc.dump();
}

void SchedulerBody(ActorPipe& pipe, SchedulerParams p) {
  zmq::socket_t client(*p.ctx, zmq::socket_type::router);
  transport::SocketOptions client_options;
  client_options.max_msg_size = static_cast<int64_t>(ClientLimits().max_frame);
  Status s = BindRouter(client, client_options, p.curve, p.client_endpoint, p.bound_client);
  if (!s.ok()) {
    pipe.SignalReady(s);
    return;
  }
  SchedulerCore core(p.journal, p.clock, p.options);
  JournalHealth health(p.journal->dir());
  Retention retention(p.journal, p.retention);

  std::map<std::string, std::string> subscribers;  // run id -> client identity
  WorkersSnapshot workers;                         // refreshed by the dispatcher every heartbeat
  CoordinatorHealth queue_health(p.options.max_backlog, p.health_interval);
  SchedulerOutbox out;
  Envelope env;
  std::string scratch;
  std::vector<std::pair<std::string, SubmitReply>> accepted;  // replies held until the commit
  std::map<uint64_t, PendingLog> pending_logs;                // by request id
  uint64_t next_log_request = 1;
  // An operator's decision, answered once it is journaled.
  std::vector<std::pair<std::string, ConfirmReply>> confirmed;

  // Messages from the dispatcher; also read while a turn waits for the
  // placement of what it is about to commit (place_before_commit).
  uint64_t placed_ticket = 0;  // newest Enqueue ticket the dispatcher answered
  auto from_dispatcher = [&](const Envelope& e) {
    switch (static_cast<InternalType>(e.type)) {
      case InternalType::kPlaced: {
        Placed m;
        if (!Decode(e, &m, "scheduler")) break;
        core.OnPlaced(m);
        placed_ticket = std::max(placed_ticket, m.ticket);
        break;
      }
      case InternalType::kStartedBatch: {
        StartedBatch m;
        if (Decode(e, &m, "scheduler")) core.OnStarted(m);
        break;
      }
      case InternalType::kResultBatch: {
        ResultBatch m;
        if (Decode(e, &m, "scheduler")) core.OnResults(m);
        break;
      }
      case InternalType::kWorkerGone: {
        WorkerGone m;
        if (Decode(e, &m, "scheduler")) core.OnWorkerGone(m);
        break;
      }
      case InternalType::kWorkersSnapshot:
        if (Decode(e, &workers, "scheduler")) {
          queue_health.OnSnapshot(workers, core.in_flight(), core.backlog_paused(), p.clock->Now());
        }
        break;
      case InternalType::kLogFetched: {
        LogFetched m;
        if (!Decode(e, &m, "scheduler")) break;
        auto pending = pending_logs.find(m.reply.request_id);
        if (pending == pending_logs.end()) break;  // answered late: already timed out
        QueryReply reply;
        if (m.reply.error.empty()) {
          nlohmann::json meta = std::move(pending->second.meta);
          meta["size"] = m.reply.size;
          meta["running"] = m.reply.running;
          meta["bytes"] = m.reply.data.size();
          reply.json = meta.dump();
          reply.data = std::move(m.reply.data);
        } else {
          reply.error = m.reply.error;
        }
        Reply(client, pending->second.identity, InternalType::kQueryReply, reply);
        pending_logs.erase(pending);
        break;
      }
      default:
        spdlog::warn("scheduler: unexpected message type {} from dispatcher", e.type);
    }
  };

  // Sends the turn's READY executions to the dispatcher before the commit and
  // waits up to kPlaceBeforeCommitWait for its answer, so that the placements
  // it makes at once (READY -> RUNNING) are journaled in the same commit as
  // the READY and the results that caused it: one fsync per dependency hop
  // instead of two. Whatever is placed later joins a later commit, as before.
  uint64_t next_ticket = 0;
  Enqueue early;
  auto place_before_commit = [&] {
    core.TakeEnqueue(&early);
    if (early.execs.empty()) return;
    early.ticket = ++next_ticket;
    SendInternal(*p.disp, InternalType::kEnqueue, early, &scratch);
    const Micros until = p.clock->Now() + kPlaceBeforeCommitWait;
    zmq::pollitem_t disp_item[] = {{p.disp->handle(), 0, ZMQ_POLLIN, 0}};
    while (placed_ticket < early.ticket) {
      const Micros left = until - p.clock->Now();
      if (left <= 0) break;
      const Micros wait_ms = std::max<Micros>(1, (left + kMicrosPerMilli - 1) / kMicrosPerMilli);
      auto polled = transport::Poll(disp_item, milliseconds(wait_ms));
      if (!polled.ok() || !DrainSocket(*p.disp, "scheduler", &env, from_dispatcher)) return;
    }
  };

  // Commits what the turn staged, then releases its messages. False when the
  // commit failed: nothing left, and it is retried with backoff.
  auto flush = [&](Micros now, bool place_early = true) {
    if (place_early) place_before_commit();
    Status flushed = core.Flush(&out);
    if (!flushed.ok()) {
      // Nothing was released; the staged work is retried. A full disk stops
      // progress (no promotion, no placement), never loses what is already
      // journaled, and queries keep being answered meanwhile.
      if (!health.failing()) {
        SendInternal(*p.disp, InternalType::kPausePlacement,
                     PausePlacement{true, flushed.message()}, &scratch);
      }
      health.OnFailure(flushed, core.staged_transitions(), now);
      if (p.options.alerts) p.options.alerts->Emit(JournalErrorAlert(health.Summary(now), now));
      return false;
    }
    if (health.failing()) {
      health.OnSuccess(now);
      SendInternal(*p.disp, InternalType::kPausePlacement, PausePlacement{false, ""}, &scratch);
    }
    for (const auto& [identity, reply] : accepted) {
      Reply(client, identity, InternalType::kSubmitReply, reply);
    }
    accepted.clear();
    for (const auto& [identity, reply] : confirmed) {
      Reply(client, identity, InternalType::kConfirmReply, reply);
    }
    confirmed.clear();
    if (!out.enqueue.execs.empty())
      SendInternal(*p.disp, InternalType::kEnqueue, out.enqueue, &scratch);
    if (!out.adopt.execs.empty())
      SendInternal(*p.disp, InternalType::kAdoptRunning, out.adopt, &scratch);
    if (!out.release.execs.empty())
      SendInternal(*p.disp, InternalType::kReleaseDispatch, out.release, &scratch);
    if (!out.acks.acks.empty())
      SendInternal(*p.disp, InternalType::kAckResults, out.acks, &scratch);
    if (!out.cancels.execs.empty()) {
      SendInternal(*p.disp, InternalType::kCancelExecs, out.cancels, &scratch);
    }
    if (!out.watch.deadlines.empty()) {
      SendInternal(*p.recon, InternalType::kWatchDeadlines, out.watch, &scratch);
    }
    if (!out.unwatch.execs.empty())
      SendInternal(*p.recon, InternalType::kUnwatch, out.unwatch, &scratch);
    for (const RunProgress& progress : out.progress) {
      auto sub = subscribers.find(progress.run_id);
      if (sub != subscribers.end())
        Reply(client, sub->second, InternalType::kRunProgress, progress);
    }
    for (const RunFinished& finished : out.finished) {
      auto sub = subscribers.find(finished.run_id);
      if (sub == subscribers.end()) continue;
      Reply(client, sub->second, InternalType::kRunFinished, finished);
      subscribers.erase(sub);
    }
    out.Clear();
    return true;
  };

  // Recovery before serving: what it stages reaches the dispatcher before the
  // dispatcher starts taking workers' HELLOs (it is started after this
  // actor is ready and reads our messages first).
  *p.recovery = core.Recover();
  const RecoveryReport& r = *p.recovery;
  if (r.runs > 0 || r.failed_runs > 0) {
    spdlog::info(
        "recovered {} unfinished runs ({} tasks: {} RUNNING left for their workers to claim, {} "
        "READY, {} waiting to retry; {} could not be rebuilt) in {:.1f} ms",
        r.runs, r.tasks, r.running, r.ready, r.retrying, r.failed_runs,
        static_cast<double>(r.elapsed_us) / 1000.0);
  }
  // The dispatcher starts after this actor is ready: nothing would answer an
  // early placement yet.
  flush(p.clock->Now(), /*place_early=*/false);
  pipe.SignalReady(Status::Ok());
  zmq::pollitem_t items[] = {pipe.PollItem(),
                             {client.handle(), 0, ZMQ_POLLIN, 0},
                             {p.disp->handle(), 0, ZMQ_POLLIN, 0},
                             {p.recon->handle(), 0, ZMQ_POLLIN, 0}};
  for (;;) {
    Micros now = p.clock->Now();
    Micros wake = core.NextTimer();
    for (Micros other : {health.retry_at(), health.failing() ? 0 : retention.NextDue()}) {
      if (other && (wake == 0 || other < wake)) wake = other;
    }
    auto polled = transport::Poll(items, UntilMs(now, wake, milliseconds(1000)));
    if (!polled.ok()) return;

    bool term = false;
    if (!DrainSocket(pipe.socket(), "scheduler", &env,
                     [&](const Envelope& e) { term = term || pipe.IsTerm(e); })) {
      return;
    }
    if (term) return;

    for (int i = 0; i < kMaxFramesPerTurn; ++i) {
      auto msg = transport::RecvFrom(client, /*dontwait=*/true);
      if (!msg.ok()) break;
      Status decoded = transport::DecodeEnvelopeInto(msg->payload.data(), msg->payload.size(), &env,
                                                     ClientLimits());
      if (!decoded.ok()) {
        // Say so: a client waiting for a reply must not wait forever.
        spdlog::warn("scheduler: refused a client message ({} bytes): {}", msg->payload.size(),
                     decoded.message());
        SubmitReply reply;
        reply.error = "request refused: " + decoded.message();
        Reply(client, msg->identity, InternalType::kSubmitReply, reply);
        continue;
      }
      switch (static_cast<InternalType>(env.type)) {
        case InternalType::kSubmitRun: {
          SubmitRun submit;
          SubmitReply reply;
          if (health.failing()) {
            // It could not be journaled: refuse it rather than hold it in memory.
            reply.error = "new runs are refused while the coordinator cannot write its journal: " +
                          health.Summary(p.clock->Now());
          } else if (Decode(env, &submit, "scheduler")) {
            // The decoded frame holds a copy of the snapshot in the
            // envelope's zone: let it go before the run is built.
            env.body = msgpack::object();
            env.zone.clear();
            auto run_id = core.Submit(std::move(submit));
            if (run_id.ok()) {
              reply.run_id = *run_id;
              subscribers[*run_id] = msg->identity;
              // Answered once the run is in the journal: a client that asks
              // about it right away must find it, and a run id handed out
              // survives a crash.
              accepted.emplace_back(msg->identity, std::move(reply));
              break;
            }
            reply.error = run_id.status().message();
          } else {
            reply.error = "malformed submission";
          }
          Reply(client, msg->identity, InternalType::kSubmitReply, reply);
          break;
        }
        case InternalType::kQuery: {
          Query query;
          QueryReply reply;
          if (!Decode(env, &query, "scheduler")) {
            reply.error = "malformed query";
          } else if (query.kind == "logs") {
            // Answered when the worker that holds the file replies.
            LogFetch fetch;
            nlohmann::json meta;
            const uint64_t id = next_log_request++;
            Status s = PrepareLogFetch(query, p.journal, id, &fetch, &meta);
            if (s.ok()) {
              pending_logs[id] = {msg->identity, std::move(meta),
                                  p.clock->Now() + 5 * kMicrosPerSecond};
              SendInternal(*p.disp, InternalType::kLogFetch, fetch, &scratch);
              break;
            }
            reply.error = s.message();
          } else {
            reply = AnswerQuery(query, p.journal, core, workers, !health.failing(), p.log_file);
            AddJournalHealth(query, health, p.clock->Now(), &reply);
          }
          Reply(client, msg->identity, InternalType::kQueryReply, reply);
          break;
        }
        case InternalType::kConfirmExec: {
          ConfirmExec confirm;
          ConfirmReply reply;
          if (Decode(env, &confirm, "scheduler")) {
            auto done = core.Confirm(confirm.exec_id, confirm.kill, "user");
            if (done.ok()) {
              reply.text = *done;
            } else {
              reply.error = done.status().message();
              reply.code = static_cast<uint8_t>(done.status().code());
            }
          } else {
            reply.error = "malformed confirmation";
            reply.code = static_cast<uint8_t>(StatusCode::kInvalidInput);
          }
          if (reply.error.empty()) {
            confirmed.emplace_back(msg->identity, std::move(reply));
          } else {
            Reply(client, msg->identity, InternalType::kConfirmReply, reply);
          }
          break;
        }
        case InternalType::kCancelRun: {
          CancelRun cancel;
          if (Decode(env, &cancel, "scheduler")) {
            Status c = core.Cancel(cancel.run_id, cancel.reason, "user");
            if (!c.ok()) spdlog::warn("cancel of {}: {}", cancel.run_id, c.message());
          }
          break;
        }
        default:
          spdlog::warn("scheduler: dropped a client message of unknown type {}", env.type);
      }
    }

    if (!DrainSocket(*p.disp, "scheduler", &env, from_dispatcher)) return;
    if (!DrainSocket(*p.recon, "scheduler", &env, [&](const Envelope& e) {
          DeadlineExceeded m;
          if (static_cast<InternalType>(e.type) == InternalType::kDeadlineExceeded &&
              Decode(e, &m, "scheduler")) {
            core.OnDeadlineExceeded(m);
          }
        })) {
      return;
    }
    core.OnTimers();

    now = p.clock->Now();
    for (auto it = pending_logs.begin(); it != pending_logs.end();) {
      if (it->second.deadline > now) {
        ++it;
        continue;
      }
      QueryReply reply;
      reply.error = "worker " + it->second.meta.value("worker", std::string("?")) +
                    " did not answer the log request within 5s";
      Reply(client, it->second.identity, InternalType::kQueryReply, reply);
      it = pending_logs.erase(it);
    }
    if (!health.RetryDue(now)) continue;
    if (flush(now)) retention.RunDue(now);
  }
}

// ---- dispatcher ------------------------------------------------------------

struct DispatcherParams {
  zmq::context_t* ctx;
  const Clock* clock;
  DispatcherOptions options;
  milliseconds heartbeat;
  milliseconds reconcile_interval;
  std::string worker_endpoint;
  SocketPtr sched, recon;
  std::string* bound_workers;
  std::optional<transport::CurveKeyPair> curve;
};

void DispatcherBody(ActorPipe& pipe, DispatcherParams p) {
  DispatcherCore core(p.clock, p.options);
  DispatcherOutput out;
  Envelope env;
  std::string scratch;
  uint64_t answer_ticket = 0;  // an Enqueue the scheduler waits on (see Enqueue::ticket)
  auto from_scheduler = [&](const Envelope& e) {
    switch (static_cast<InternalType>(e.type)) {
      case InternalType::kEnqueue: {
        Enqueue m;
        if (!Decode(e, &m, "dispatcher")) break;
        answer_ticket = std::max(answer_ticket, m.ticket);
        core.OnEnqueue(std::move(m));
        break;
      }
      case InternalType::kAdoptRunning: {
        AdoptRunning m;
        if (Decode(e, &m, "dispatcher")) core.OnAdopt(m);
        break;
      }
      case InternalType::kAckResults: {
        AckResults m;
        if (Decode(e, &m, "dispatcher")) core.OnAcks(m, &out);
        break;
      }
      case InternalType::kCancelExecs: {
        CancelExecs m;
        if (Decode(e, &m, "dispatcher")) core.OnCancel(m, &out);
        break;
      }
      case InternalType::kReleaseDispatch: {
        ReleaseDispatch m;
        if (Decode(e, &m, "dispatcher")) core.OnRelease(m, &out);
        break;
      }
      case InternalType::kLogFetch: {
        LogFetch m;
        if (Decode(e, &m, "dispatcher")) core.OnLogFetch(m, &out);
        break;
      }
      case InternalType::kPausePlacement: {
        PausePlacement m;
        if (Decode(e, &m, "dispatcher")) core.SetPlacementPaused(m.paused);
        break;
      }
      default:
        spdlog::warn("dispatcher: unexpected message type {} from scheduler", e.type);
    }
  };
  // What the scheduler recovered from the journal is already waiting: take
  // it before any worker can say HELLO, so rejoining workers find their
  // executions known.
  if (!DrainSocket(*p.sched, "dispatcher", &env, from_scheduler)) {
    pipe.SignalReady(Status::Internal("dispatcher: context terminated at start"));
    return;
  }
  zmq::socket_t router(*p.ctx, zmq::socket_type::router);
  Status s = BindRouter(router, {}, p.curve, p.worker_endpoint, p.bound_workers);
  if (!s.ok()) {
    pipe.SignalReady(s);
    return;
  }
  pipe.SignalReady(Status::Ok());

  const Micros interval = p.heartbeat.count() * kMicrosPerMilli;
  const Micros probe_interval = p.reconcile_interval.count() * kMicrosPerMilli;
  Micros next_beat = p.clock->Now() + interval;
  Micros next_probe = p.clock->Now() + probe_interval;
  zmq::pollitem_t items[] = {pipe.PollItem(),
                             {router.handle(), 0, ZMQ_POLLIN, 0},
                             {p.sched->handle(), 0, ZMQ_POLLIN, 0},
                             {p.recon->handle(), 0, ZMQ_POLLIN, 0}};
  for (;;) {
    Micros wake = std::min(next_beat, next_probe);
    if (core.GaugesDue() != 0) wake = std::min(wake, core.GaugesDue());
    auto polled = transport::Poll(items, UntilMs(p.clock->Now(), wake, milliseconds(1000)));
    if (!polled.ok()) return;
    bool term = false;
    if (!DrainSocket(pipe.socket(), "dispatcher", &env,
                     [&](const Envelope& e) { term = term || pipe.IsTerm(e); })) {
      return;
    }
    if (term) return;

    for (int i = 0; i < kMaxFramesPerTurn; ++i) {
      auto msg = transport::RecvFrom(router, /*dontwait=*/true);
      if (!msg.ok()) {
        if (msg.status().code() == StatusCode::kBusy) break;
        continue;  // a multi-frame message was dropped; keep serving
      }
      core.OnWorkerFrame(msg->identity, msg->payload.data(), msg->payload.size(), &out);
    }
    if (!DrainSocket(*p.sched, "dispatcher", &env, from_scheduler)) return;
    if (!DrainSocket(*p.recon, "dispatcher", &env, [&](const Envelope& e) {
          WorkerLost m;
          if (static_cast<InternalType>(e.type) == InternalType::kWorkerLost &&
              Decode(e, &m, "dispatcher")) {
            core.OnWorkerLost(m, &out);
          }
        })) {
      return;
    }
    const Micros now = p.clock->Now();
    if (now >= next_beat) {
      core.Heartbeat(&out);
      SendInternal(*p.recon, InternalType::kWorkersSeen, core.Seen(), &scratch);
      WorkersSnapshot snapshot;
      snapshot.epoch = p.options.epoch;
      for (const WorkerSnapshot& w : core.Snapshot()) {
        snapshot.workers.push_back({w.id, w.group, w.slots, w.credits, w.running, w.last_seen,
                                    w.expected_busy_ms, w.labels, w.joined_at, w.losses});
      }
      core.TakeHealth(now, &snapshot);
      SendInternal(*p.sched, InternalType::kWorkersSnapshot, snapshot, &scratch);
      next_beat = now + interval;
    }
    if (now >= next_probe) {
      core.Probe(&out);
      next_probe = now + probe_interval;
    }
    core.Place(&out);
    core.PublishGauges();

    // Frames to workers. A peer that is gone fails the send (ROUTER_MANDATORY)
    // and is handed to the core, which may produce more frames: loop.
    for (size_t i = 0; i < out.to_workers.size(); ++i) {
      auto& [identity, frame] = out.to_workers[i];
      Status sent = transport::SendTo(router, identity, frame, /*dontwait=*/true);
      if (!sent.ok()) {
        spdlog::warn("dispatcher: send to worker failed: {}", sent.message());
        std::string gone = identity;
        core.OnSendFailed(gone, &out);
      }
    }
    // Placed first: the scheduler must see an execution RUNNING before any
    // loss report that names it.
    if (!out.placed.placed.empty() || answer_ticket != 0) {
      out.placed.ticket = answer_ticket;
      answer_ticket = 0;
      SendInternal(*p.sched, InternalType::kPlaced, out.placed, &scratch);
    }
    if (!out.started.items.empty()) {
      SendInternal(*p.sched, InternalType::kStartedBatch, out.started, &scratch);
    }
    if (!out.results.items.empty()) {
      SendInternal(*p.sched, InternalType::kResultBatch, out.results, &scratch);
    }
    for (const LogFetched& fetched : out.logs) {
      SendInternal(*p.sched, InternalType::kLogFetched, fetched, &scratch);
    }
    for (const WorkerGone& gone : out.gone) {
      SendInternal(*p.sched, InternalType::kWorkerGone, gone, &scratch);
      if (core.HasWorker(gone.worker_id)) continue;  // executions handed back; it stays
      WorkersSeen left;
      left.workers.push_back({gone.worker_id, 0, false});
      SendInternal(*p.recon, InternalType::kWorkersSeen, left, &scratch);
    }
    out.Clear();
  }
}

// ---- reconciler ------------------------------------------------------------

struct ReconcilerParams {
  const Clock* clock;
  ReconcilerOptions options;
  SocketPtr sched, disp;
};

void ReconcilerBody(ActorPipe& pipe, ReconcilerParams p) {
  ReconcilerCore core(p.options);
  pipe.SignalReady(Status::Ok());
  Envelope env;
  std::string scratch;
  zmq::pollitem_t items[] = {
      pipe.PollItem(), {p.sched->handle(), 0, ZMQ_POLLIN, 0}, {p.disp->handle(), 0, ZMQ_POLLIN, 0}};
  const milliseconds tick = p.options.heartbeat;
  for (;;) {
    auto polled = transport::Poll(items, UntilMs(p.clock->Now(), core.NextDeadline(), tick));
    if (!polled.ok()) return;
    bool term = false;
    if (!DrainSocket(pipe.socket(), "reconciler", &env,
                     [&](const Envelope& e) { term = term || pipe.IsTerm(e); })) {
      return;
    }
    if (term) return;
    if (!DrainSocket(*p.sched, "reconciler", &env, [&](const Envelope& e) {
          if (static_cast<InternalType>(e.type) == InternalType::kWatchDeadlines) {
            WatchDeadlines m;
            if (Decode(e, &m, "reconciler")) core.OnWatch(m);
          } else if (static_cast<InternalType>(e.type) == InternalType::kUnwatch) {
            Unwatch m;
            if (Decode(e, &m, "reconciler")) core.OnUnwatch(m);
          }
        })) {
      return;
    }
    if (!DrainSocket(*p.disp, "reconciler", &env, [&](const Envelope& e) {
          WorkersSeen m;
          if (static_cast<InternalType>(e.type) == InternalType::kWorkersSeen &&
              Decode(e, &m, "reconciler")) {
            core.OnWorkersSeen(m);
          }
        })) {
      return;
    }
    const Micros now = p.clock->Now();
    for (const WorkerLost& lost : core.LostWorkers(now)) {
      spdlog::warn("reconciler: {}", lost.reason);
      SendInternal(*p.disp, InternalType::kWorkerLost, lost, &scratch);
    }
    DeadlineExceeded expired = core.Expired(now);
    if (!expired.exceeded.empty()) {
      SendInternal(*p.sched, InternalType::kDeadlineExceeded, expired, &scratch);
    }
  }
}

Result<std::pair<SocketPtr, SocketPtr>> Link(zmq::context_t& ctx, const std::string& name) {
  auto pair = transport::MakeInprocPair(ctx, name);
  if (!pair.ok()) return pair.status();
  return std::make_pair(std::make_shared<zmq::socket_t>(std::move(pair->first)),
                        std::make_shared<zmq::socket_t>(std::move(pair->second)));
}

}  // namespace

Result<std::unique_ptr<Coordinator>> Coordinator::Start(zmq::context_t& ctx,
                                                        storage::Journal* journal,
                                                        const Clock* clock,
                                                        CoordinatorConfig config) {
  std::unique_ptr<Coordinator> c(new Coordinator());
  // Workers get as long to claim what they held before a restart as it takes
  // to declare one lost, plus one heartbeat for their HELLO to arrive.
  config.scheduler.claim_window = config.reconciler.heartbeat * (config.reconciler.liveness + 1);
  config.scheduler.metrics = config.metrics;
  config.reconciler.metrics = config.metrics;
  config.scheduler.alerts = config.alerts;
  const std::string prefix = "a11-" + config.instance + "-";
  auto sched_disp = Link(ctx, prefix + "sched-disp");
  if (!sched_disp.ok()) return sched_disp.status();
  auto sched_recon = Link(ctx, prefix + "sched-recon");
  if (!sched_recon.ok()) return sched_recon.status();
  auto disp_recon = Link(ctx, prefix + "disp-recon");
  if (!disp_recon.ok()) return disp_recon.status();

  auto scheduler = transport::Actor::Start(
      ctx, "scheduler",
      [p = SchedulerParams{&ctx, journal, clock, config.scheduler, config.client_endpoint,
                           sched_disp->first, sched_recon->first, &c->client_endpoint_,
                           config.curve, &c->recovery_, config.retention, config.log_file,
                           config.health_interval}](ActorPipe& pipe) { SchedulerBody(pipe, p); });
  if (!scheduler.ok()) return scheduler.status();
  c->scheduler_ = std::move(*scheduler);

  DispatcherOptions dispatcher_options;
  dispatcher_options.epoch = config.epoch;
  dispatcher_options.metrics = config.metrics;
  dispatcher_options.alerts = config.alerts;
  auto dispatcher = transport::Actor::Start(
      ctx, "dispatcher",
      [p = DispatcherParams{&ctx, clock, dispatcher_options, config.reconciler.heartbeat,
                            config.reconcile_interval, config.worker_endpoint, sched_disp->second,
                            disp_recon->first, &c->worker_endpoint_,
                            config.curve}](ActorPipe& pipe) { DispatcherBody(pipe, p); });
  if (!dispatcher.ok()) return dispatcher.status();
  c->dispatcher_ = std::move(*dispatcher);

  auto reconciler = transport::Actor::Start(
      ctx, "reconciler",
      [p = ReconcilerParams{clock, config.reconciler, sched_recon->second, disp_recon->second}](
          ActorPipe& pipe) { ReconcilerBody(pipe, p); });
  if (!reconciler.ok()) return reconciler.status();
  c->reconciler_ = std::move(*reconciler);
  return c;
}

Coordinator::~Coordinator() { Stop(); }

void Coordinator::Stop() {
  for (auto* actor : {&dispatcher_, &reconciler_, &scheduler_}) {
    if (*actor) {
      Status s = (*actor)->Stop(milliseconds(5000));
      if (!s.ok()) spdlog::error("stopping {}: {}", (*actor)->name(), s.message());
      actor->reset();
    }
  }
}

}  // namespace apollo11::actors
