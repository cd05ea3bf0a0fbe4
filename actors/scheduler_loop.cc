#include "actors/scheduler_loop.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <csignal>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <tuple>
#include <utility>

#include "actors/actor_loop.h"
#include "actors/client_sessions.h"
#include "actors/coordinator_health.h"
#include "actors/core_fire_starter.h"
#include "actors/journal_health.h"
#include "actors/query_service.h"
#include "actors/schedule_core.h"
#include "actors/scheduler_turn.h"
#include "actors/spec_handoff.h"
#include "common/log_limiter.h"
#include "dsl/pipeline_json.h"
#include "ha/not_leader.h"
#include "storage/snapshot_pack.h"

namespace apollo11::actors {
namespace {

using std::chrono::milliseconds;
using transport::Envelope;

class SchedulerLoop {
 public:
  static constexpr const char* kName = "scheduler";

  explicit SchedulerLoop(SchedulerLoopParams p)
      : p_(std::move(p)),
        client_(*p_.ctx, zmq::socket_type::router),
        core_(p_.journal, p_.clock, p_.options),
        health_(p_.journal->dir()),
        retention_(p_.journal, p_.retention),
        queries_(p_.journal, p_.log_file),
        turn_(&core_, &health_, &sessions_, p_.options.alerts),
        starter_(&core_),
        schedule_(p_.journal, p_.clock, &starter_),
        queue_health_(p_.options.max_backlog, p_.health_interval) {}

  Status Run(transport::ActorPipe& pipe);

 private:
  using ClientHandler = void (SchedulerLoop::*)(const std::string& identity, Envelope& env);
  struct ClientRoute {
    InternalType type;
    ClientHandler handle;
  };
  static const std::array<ClientRoute, 6> kClientRoutes;
  static const std::array<Route<SchedulerLoop>, 6> kDispatcherRoutes;
  static const std::array<Route<SchedulerLoop>, 1> kReconcilerRoutes;

  Status Start(transport::ActorPipe& pipe);
  Micros NextWake() const;
  void OnClientFrame(const std::string& identity, const transport::PeerAuth& peer,
                     const zmq::message_t& payload);
  // Under CURVE, true when the caller's key role allows a request of `type`
  // (key_roles.h); else answers it with a refusal and returns false.
  bool Permitted(const std::string& identity, const transport::PeerAuth& peer, uint16_t type);
  void RefuseVersion(const std::string& identity, const Envelope& env, uint64_t version);
  // The reply a refused request of type `t` waits for, with `code` and `why`.
  void ReplyRefusal(const std::string& identity, InternalType t, StatusCode code,
                    const std::string& why);
  // election: a standby's answer to anything but a query.
  void RefuseNotLeader(const std::string& identity, InternalType t);

  // Client requests.
  void OnSubmit(const std::string& identity, Envelope& env);
  void OnQuery(const std::string& identity, Envelope& env);
  void OnConfirm(const std::string& identity, Envelope& env);
  void OnCancel(const std::string& identity, Envelope& env);
  void OnRegistry(const std::string& identity, Envelope& env);  // registry
  void OnRerun(const std::string& identity, Envelope& env);
  // The reply to a request that starts a run (submit, rerun): refused with
  // kFull while commits fail (the run could not be journaled), else none
  // and false.
  bool RefuseWhileFailing(const std::string& identity);
  // From the dispatcher.
  void OnPlaced(Placed m) { turn_.OnPlaced(m); }
  void OnStarted(StartedBatch m) { core_.OnStarted(m); }
  void OnResults(ResultBatch m) { core_.OnResults(m); }
  void OnWorkerGone(WorkerGone m) { core_.OnWorkerGone(m); }
  void OnWorkersSnapshot(WorkersSnapshot m);
  void OnLogFetched(LogFetched m) { sessions_.OnLogFetched(std::move(m)); }
  // From the reconciler.
  void OnDeadlineExceeded(DeadlineExceeded m) { core_.OnDeadlineExceeded(m); }

  // Registers the schedule of a submitted pipeline that has one; `run_id`
  // is the run the submission started.
  void RegisterSchedule(const std::string& snapshot, const std::string& hash,
                        const std::string& run_id);
  // Fires what is due; $APOLLO11_TEST_FAULT=sched-before-commit kills the
  // process once a fire's run is staged and not yet committed.
  void TickSchedules();
  // registry: a backfill request, answered from the schedules.
  Result<std::string> Backfill(const RegistryRequest& r);
  // registry: after version `reply` of r.name was added, its schedule (if
  // any) replaces the pipeline's, and a version without one removes it.
  void FollowRegisteredSchedule(const RegistryRequest& r, const std::string& reply);
  // Place before commit (waiting up to kPlaceBeforeCommitWait), commit,
  // send what the commit released. False when the commit failed.
  bool Flush(Micros now, bool place_early);
  bool DrainDispatcher();
  void SendOut();

  SchedulerLoopParams p_;
  zmq::socket_t client_;
  SchedulerCore core_;
  JournalHealth health_;
  Retention retention_;
  ClientSessions sessions_;
  QueryService queries_;
  SchedulerTurn turn_;
  CoreFireStarter starter_;
  ScheduleCore schedule_;
  CoordinatorHealth queue_health_;
  WorkersSnapshot workers_;  // refreshed by the dispatcher every heartbeat
  InternalFrames frames_;
  LogLimiter refusal_log_{10, kMicrosPerSecond};  // refused client requests
  Envelope env_;
  std::string scratch_;
};

const std::array<SchedulerLoop::ClientRoute, 6> SchedulerLoop::kClientRoutes = {{
    {InternalType::kSubmitRun, &SchedulerLoop::OnSubmit},
    {InternalType::kRegistry, &SchedulerLoop::OnRegistry},
    {InternalType::kRerunRun, &SchedulerLoop::OnRerun},
    {InternalType::kQuery, &SchedulerLoop::OnQuery},
    {InternalType::kConfirmExec, &SchedulerLoop::OnConfirm},
    {InternalType::kCancelRun, &SchedulerLoop::OnCancel},
}};

const std::array<Route<SchedulerLoop>, 6> SchedulerLoop::kDispatcherRoutes = {{
    {InternalType::kPlaced, &Decoded<SchedulerLoop, Placed, &SchedulerLoop::OnPlaced>},
    {InternalType::kStartedBatch, &Decoded<SchedulerLoop, StartedBatch, &SchedulerLoop::OnStarted>},
    {InternalType::kResultBatch, &Decoded<SchedulerLoop, ResultBatch, &SchedulerLoop::OnResults>},
    {InternalType::kWorkerGone, &Decoded<SchedulerLoop, WorkerGone, &SchedulerLoop::OnWorkerGone>},
    {InternalType::kWorkersSnapshot,
     &Decoded<SchedulerLoop, WorkersSnapshot, &SchedulerLoop::OnWorkersSnapshot>},
    {InternalType::kLogFetched, &Decoded<SchedulerLoop, LogFetched, &SchedulerLoop::OnLogFetched>},
}};

const std::array<Route<SchedulerLoop>, 1> SchedulerLoop::kReconcilerRoutes = {{
    {InternalType::kDeadlineExceeded,
     &Decoded<SchedulerLoop, DeadlineExceeded, &SchedulerLoop::OnDeadlineExceeded>},
}};

Status SchedulerLoop::Start(transport::ActorPipe& pipe) {
  transport::SocketOptions client_options;
  client_options.max_msg_size = static_cast<int64_t>(ClientLimits().max_frame);
  Status s = BindRouter(client_, client_options, p_.curve, p_.client_endpoint, p_.bound_client);
  if (!s.ok()) {
    pipe.SignalReady(s);  // Coordinator::Start returns it as it is
    return s;
  }
  // Recovery before serving: what it stages reaches the dispatcher before
  // the dispatcher starts taking workers' HELLOs (it is started after this
  // actor is ready and reads our messages first).
  // A standby recovers when it leads (the node starts it anew).
  if (!p_.standby) *p_.recovery = core_.Recover();
  const RecoveryReport& r = *p_.recovery;
  if (r.runs > 0 || r.failed_runs > 0) {
    spdlog::info(
        "recovered {} unfinished runs ({} tasks: {} RUNNING left for their workers to claim, {} "
        "READY, {} waiting to retry; {} could not be rebuilt) in {:.1f} ms",
        r.runs, r.tasks, r.running, r.ready, r.retrying, r.failed_runs,
        static_cast<double>(r.elapsed_us) / 1000.0);
  }
  Status loaded = schedule_.Load();
  if (!loaded.ok()) spdlog::error("schedules not loaded: {}", loaded.message());
  // The dispatcher starts after this actor is ready: nothing would answer an
  // early placement yet.
  Flush(p_.clock->Now(), /*place_early=*/false);
  pipe.SignalReady(Status::Ok());
  return Status::Ok();
}

Micros SchedulerLoop::NextWake() const {
  // Steady(). The core's next timer is a wall time, due in (it - wall).
  const Micros steady = p_.clock->Steady(), wall = p_.clock->Now();
  const Micros timer = core_.NextTimer();
  Micros wake = timer == 0 ? 0 : steady + std::max<Micros>(timer - wall, 0);
  const Micros fire = p_.standby ? 0 : schedule_.NextWake();
  if (fire != 0) {
    const Micros at = steady + std::max<Micros>(fire - wall, 0);
    if (wake == 0 || at < wake) wake = at;
  }
  const bool retains = !health_.failing() && !p_.standby;
  for (Micros other :
       {health_.retry_at(), retains ? retention_.NextDue() : 0, sessions_.NextDeadline()}) {
    if (other && (wake == 0 || other < wake)) wake = other;
  }
  return wake;
}

Status SchedulerLoop::Run(transport::ActorPipe& pipe) {
  APOLLO11_RETURN_IF_ERROR(Start(pipe));
  zmq::pollitem_t items[] = {pipe.PollItem(),
                             {client_.handle(), 0, ZMQ_POLLIN, 0},
                             {p_.dispatcher->handle(), 0, ZMQ_POLLIN, 0},
                             {p_.reconciler->handle(), 0, ZMQ_POLLIN, 0}};
  for (;;) {
    auto polled =
        transport::Poll(items, UntilMs(p_.clock->Steady(), NextWake(), milliseconds(1000)));
    if (!polled.ok()) return polled.status();
    bool term = false;
    if (Readable(items[0]) && !DrainSocket(pipe.socket(), kName, &env_, [&](const Envelope& e) {
          term = term || pipe.IsTerm(e);
        })) {
      return ContextTerminated();
    }
    if (term) return Status::Ok();

    for (int i = 0; Readable(items[1]) && i < kMaxFramesPerTurn; ++i) {
      auto msg = transport::RecvFrom(client_, /*dontwait=*/true);
      if (!msg.ok()) break;
      OnClientFrame(msg->identity, msg->peer, msg->payload);
    }
    if (Readable(items[2]) && !DrainDispatcher()) return ContextTerminated();
    if (Readable(items[3]) && !DrainSocket(*p_.reconciler, kName, &env_, [&](const Envelope& e) {
          RouteMessage(*this, kReconcilerRoutes, e);
        })) {
      return ContextTerminated();
    }
    core_.OnTimers();
    // A standby fires nothing: its leader does (and journals the fires).
    if (!health_.failing() && !p_.standby) TickSchedules();
    const Micros now = p_.clock->Now(), steady = p_.clock->Steady();
    sessions_.ExpireLogs(steady);
    // A standby removes nothing: its journal is its leader's copy (or, without
    // replication, waits for its own term).
    if (health_.RetryDue(steady) && Flush(now, /*place_early=*/true) && !p_.standby) {
      retention_.RunDue(now, steady);
    }
    SendOut();
  }
}

bool SchedulerLoop::DrainDispatcher() {
  return DrainSocket(*p_.dispatcher, kName, &env_,
                     [&](const Envelope& e) { RouteMessage(*this, kDispatcherRoutes, e); });
}

void SchedulerLoop::OnClientFrame(const std::string& identity, const transport::PeerAuth& peer,
                                  const zmq::message_t& payload) {
  Status decoded =
      transport::DecodeEnvelopeInto(payload.data(), payload.size(), &env_, ClientLimits());
  if (!decoded.ok()) {
    // Say so: a client waiting for a reply must not wait forever.
    spdlog::warn("scheduler: refused a client message ({} bytes): {}", payload.size(),
                 decoded.message());
    SubmitReply reply;
    reply.code = static_cast<uint8_t>(StatusCode::kInvalidInput);
    reply.error = "request refused: " + decoded.message();
    sessions_.Reply(identity, InternalType::kSubmitReply, reply);
    return;
  }
  for (const ClientRoute& route : kClientRoutes) {
    if (static_cast<uint16_t>(route.type) != env_.type) continue;
    const uint64_t version = ClientRequestVersion(env_);
    if (version != kClientProtocolVersion) return RefuseVersion(identity, env_, version);
    if (!Permitted(identity, peer, env_.type)) return;
    if (p_.standby && route.type != InternalType::kQuery)
      return RefuseNotLeader(identity, route.type);
    return (this->*route.handle)(identity, env_);
  }
  spdlog::warn("scheduler: dropped a client message of unknown type {}", env_.type);
}

bool SchedulerLoop::Permitted(const std::string& identity, const transport::PeerAuth& peer,
                              uint16_t type) {
  if (!p_.curve) return true;  // no keys, no roles: loopback or --insecure
  const auto t = static_cast<InternalType>(type);
  const bool mutating = t == InternalType::kCancelRun || t == InternalType::kConfirmExec;
  // A rerun starts a run: the same roles as a submission.
  const bool starts_run = t == InternalType::kSubmitRun || t == InternalType::kRerunRun;
  const bool allowed = t == InternalType::kQuery ? transport::MayQuery(peer.roles)
                       : starts_run || t == InternalType::kRegistry
                           ? transport::MaySubmit(peer.roles)
                           : transport::MayChangeRuns(peer.roles);
  if (allowed) return true;
  const char* what = t == InternalType::kQuery ? "ask queries (role reader, client or admin)"
                     : starts_run              ? "submit runs or reruns (role client or admin)"
                     : t == InternalType::kRegistry
                         ? "register or trigger pipelines (role client or admin)"
                     : mutating ? "cancel runs or confirm slow tasks (role admin)"
                                : "do this";
  const std::string why = "key " + peer.key +
                          " (roles: " + (peer.roles ? transport::FormatRoles(peer.roles) : "none") +
                          ") may not " + what;
  observability::CoordinatorMetrics* metrics = p_.options.metrics;
  if (metrics == nullptr) metrics = observability::CoordinatorMetrics::Inert();
  metrics->client_requests_refused.Inc();
  uint64_t suppressed = 0;
  if (refusal_log_.Allow(p_.clock->Steady(), &suppressed)) {
    spdlog::warn("scheduler: refused a client request: {}{}", why,
                 suppressed ? " (" + std::to_string(suppressed) + " more not logged)" : "");
  }
  ReplyRefusal(identity, t, StatusCode::kPermissionDenied, why);
  return false;
}

void SchedulerLoop::ReplyRefusal(const std::string& identity, InternalType t, StatusCode status,
                                 const std::string& why) {
  const auto code = static_cast<uint8_t>(status);
  switch (t) {
    case InternalType::kSubmitRun:
    case InternalType::kRerunRun:
      sessions_.Reply(identity, InternalType::kSubmitReply, SubmitReply{code, why, ""});
      break;
    case InternalType::kConfirmExec:
      sessions_.Reply(identity, InternalType::kConfirmReply, ConfirmReply{code, why, ""});
      break;
    case InternalType::kRegistry:
      sessions_.Reply(identity, InternalType::kRegistryReply, RegistryReply{code, why, ""});
      break;
    default:
      // A cancel has no reply of its own: the client follows it with a
      // status query and takes this as that query's answer.
      sessions_.Reply(identity, InternalType::kQueryReply, QueryReply{code, why, "", "", ""});
      break;
  }
}

void SchedulerLoop::RefuseNotLeader(const std::string& identity, InternalType t) {
  const std::string leader = p_.ha ? p_.ha->Current().leader.client_endpoint : "";
  ReplyRefusal(identity, t, StatusCode::kNotLeader, ha::NotLeaderReply(leader));
}

// A client of another protocol version is told so in the reply it waits
// for. A version 1 client decodes replies in the version 1 layout, so its
// refusal is written in that layout.
void SchedulerLoop::RefuseVersion(const std::string& identity, const Envelope& env,
                                  uint64_t version) {
  const std::string why = "this coordinator speaks client protocol version " +
                          std::to_string(kClientProtocolVersion) + ", the client " +
                          std::to_string(version) + ": use apollo11 of the same release";
  spdlog::warn("scheduler: refused a client request: {}", why);
  const auto code = static_cast<uint8_t>(StatusCode::kUnsupported);
  switch (static_cast<InternalType>(env.type)) {
    case InternalType::kSubmitRun:
      if (version == 1) {
        sessions_.Reply(identity, InternalType::kSubmitReply, std::make_tuple(std::string(), why));
      } else {
        sessions_.Reply(identity, InternalType::kSubmitReply, SubmitReply{code, why, ""});
      }
      break;
    case InternalType::kRerunRun:
      sessions_.Reply(identity, InternalType::kSubmitReply, SubmitReply{code, why, ""});
      break;
    case InternalType::kQuery:
      if (version == 1) {
        sessions_.Reply(identity, InternalType::kQueryReply,
                        std::make_tuple(why, std::string(), std::string(), std::string()));
      } else {
        sessions_.Reply(identity, InternalType::kQueryReply, QueryReply{code, why, "", "", ""});
      }
      break;
    case InternalType::kConfirmExec:
      if (version == 1) {
        sessions_.Reply(identity, InternalType::kConfirmReply,
                        std::make_tuple(std::string(), why, code));
      } else {
        sessions_.Reply(identity, InternalType::kConfirmReply, ConfirmReply{code, why, ""});
      }
      break;
    case InternalType::kRegistry:
      sessions_.Reply(identity, InternalType::kRegistryReply, RegistryReply{code, why, ""});
      break;
    default:
      break;  // a cancel has no reply
  }
}

bool SchedulerLoop::RefuseWhileFailing(const std::string& identity) {
  if (!health_.failing()) return false;
  // It could not be journaled: refuse it rather than hold it in memory.
  SubmitReply reply;
  reply.code = static_cast<uint8_t>(StatusCode::kFull);
  reply.error = "new runs are refused while the coordinator cannot write its journal: " +
                health_.Summary(p_.clock->Steady());
  sessions_.Reply(identity, InternalType::kSubmitReply, reply);
  return true;
}

void SchedulerLoop::OnRerun(const std::string& identity, Envelope& env) {
  if (RefuseWhileFailing(identity)) return;
  SubmitReply reply;
  auto rerun = transport::BodyAs<RerunRun>(env);
  if (!rerun.ok()) {
    reply.code = static_cast<uint8_t>(StatusCode::kInvalidInput);
    reply.error = "malformed rerun: " + rerun.status().message();
    return sessions_.Reply(identity, InternalType::kSubmitReply, reply);
  }
  auto run_id = core_.Rerun(*rerun);
  if (!run_id.ok()) {
    reply.code = ReplyCode(run_id.status());
    reply.error = run_id.status().message();
    return sessions_.Reply(identity, InternalType::kSubmitReply, reply);
  }
  sessions_.Accepted(identity, *run_id);  // answered once journaled, as a submission
}

void SchedulerLoop::OnSubmit(const std::string& identity, Envelope& env) {
  if (RefuseWhileFailing(identity)) return;
  SubmitReply reply;
  if (SubmissionNamesRunId(env.body)) {
    reply.code = static_cast<uint8_t>(StatusCode::kInvalidInput);
    reply.error =
        "a submission may not name its run id: run ids are chosen by the coordinator (this "
        "client is older than the coordinator; upgrade it)";
    return sessions_.Reply(identity, InternalType::kSubmitReply, reply);
  }
  auto submit = transport::BodyAs<SubmitRun>(env);
  // The decoded frame holds a copy of the snapshot in the envelope's zone:
  // let it go before the run is built.
  env.body = msgpack::object();
  env.zone.clear();
  // From a client in this process: the model it encoded, so no decoding.
  std::optional<dsl::PipelineSpec> handed;
  if (submit.ok()) handed = SpecHandoff::Take(submit->pipeline_hash);
  std::string packed;  // as it arrived, journaled as it is once checked
  if (submit.ok() && (!handed || !handed->schedule.empty()) &&
      storage::IsPackedSnapshot(submit->pipeline_json)) {
    auto text = storage::UnpackSnapshot(submit->pipeline_json);
    if (text.ok()) {
      packed = std::exchange(submit->pipeline_json, std::move(*text));
    } else {
      submit = text.status();
    }
  }
  if (!submit.ok()) {
    reply.code = static_cast<uint8_t>(StatusCode::kInvalidInput);
    reply.error = "malformed submission: " + submit.status().message();
    return sessions_.Reply(identity, InternalType::kSubmitReply, reply);
  }
  std::string scheduled;  // the snapshot, when the pipeline has a schedule
  if (handed ? !handed->schedule.empty()
             : submit->pipeline_json.find("\"schedule\":\"\"") == std::string::npos) {
    scheduled = submit->pipeline_json;
  }
  const std::string hash = submit->pipeline_hash;
  // A handed model's snapshot was unpacked only for its schedule: the
  // packed bytes go on to the journal as they came (StartRun keeps them).
  if (handed && !packed.empty()) submit->pipeline_json = std::move(packed);
  auto run_id = handed ? core_.SubmitParsed(std::move(*submit), std::move(*handed))
                       : core_.Submit(std::move(*submit), std::move(packed));
  if (!run_id.ok()) {
    reply.code = ReplyCode(run_id.status());
    reply.error = run_id.status().message();
    return sessions_.Reply(identity, InternalType::kSubmitReply, reply);
  }
  if (!scheduled.empty()) RegisterSchedule(scheduled, hash, *run_id);
  // Answered once the run is in the journal: a client that asks about it
  // right away must find it, and a run id handed out survives a crash.
  sessions_.Accepted(identity, *run_id);
}

void SchedulerLoop::OnQuery(const std::string& identity, Envelope& env) {
  if (p_.test_fault == "scheduler-query") {
    // The one throw out of a handler, on purpose: $APOLLO11_TEST_FAULT.
    throw std::runtime_error("test fault APOLLO11_TEST_FAULT=scheduler-query");
  }
  auto query = transport::BodyAs<Query>(env);
  if (!query.ok()) {
    QueryReply reply;
    reply.code = static_cast<uint8_t>(StatusCode::kInvalidInput);
    reply.error = "malformed query: " + query.status().message();
    return sessions_.Reply(identity, InternalType::kQueryReply, reply);
  }
  // No id or argument is this long: refused before any handler copies it
  // into a message (a 60 MB id cost five times its size in copies).
  constexpr size_t kMaxQueryField = 4096;
  if (query->id.size() > kMaxQueryField || query->arg.size() > kMaxQueryField) {
    QueryReply reply;
    reply.code = static_cast<uint8_t>(StatusCode::kInvalidInput);
    reply.error = "query refused: its id (" + std::to_string(query->id.size()) +
                  " bytes) or argument (" + std::to_string(query->arg.size()) +
                  " bytes) is longer than " + std::to_string(kMaxQueryField) + " bytes";
    return sessions_.Reply(identity, InternalType::kQueryReply, reply);
  }
  if (query->kind != QueryKind::kLogs) {
    QueryContext ctx{&core_, &workers_, &health_, &schedule_, p_.clock->Steady()};
    return sessions_.Reply(identity, InternalType::kQueryReply, queries_.Answer(*query, ctx));
  }
  // Answered when the worker that holds the file replies.
  auto plan = queries_.PlanLogFetch(*query);
  if (!plan.ok()) {
    QueryReply reply;
    reply.code = ReplyCode(plan.status());
    reply.error = plan.status().message();
    return sessions_.Reply(identity, InternalType::kQueryReply, reply);
  }
  plan->fetch.request.request_id = sessions_.AwaitLog(
      identity, std::move(plan->meta), p_.clock->Steady() + ClientSessions::kLogFetchTimeout);
  SendInternal(*p_.dispatcher, InternalType::kLogFetch, plan->fetch, &scratch_);
}

void SchedulerLoop::OnConfirm(const std::string& identity, Envelope& env) {
  ConfirmReply reply;
  auto confirm = transport::BodyAs<ConfirmExec>(env);
  if (!confirm.ok()) {
    reply.code = static_cast<uint8_t>(StatusCode::kInvalidInput);
    reply.error = "malformed confirmation";
    return sessions_.Reply(identity, InternalType::kConfirmReply, reply);
  }
  auto done = core_.Confirm(confirm->exec_id, confirm->kill, "user");
  if (!done.ok()) {
    reply.code = ReplyCode(done.status());
    reply.error = done.status().message();
    return sessions_.Reply(identity, InternalType::kConfirmReply, reply);
  }
  reply.text = *done;
  sessions_.Confirmed(identity, std::move(reply));  // answered once journaled
}

void SchedulerLoop::OnCancel(const std::string&, Envelope& env) {
  auto cancel = transport::BodyAs<CancelRun>(env);
  if (!cancel.ok()) {
    spdlog::warn("scheduler: malformed cancel: {}", cancel.status().message());
    return;
  }
  Status c = core_.Cancel(cancel->run_id, cancel->reason, "user");
  if (!c.ok()) spdlog::warn("cancel of {}: {}", cancel->run_id, c.message());
}

void SchedulerLoop::OnRegistry(const std::string& identity, Envelope& env) {
  RegistryReply reply;
  auto request = transport::BodyAs<RegistryRequest>(env);
  if (!request.ok()) {
    reply.code = static_cast<uint8_t>(StatusCode::kInvalidInput);
    reply.error = "malformed registry request: " + request.status().message();
    return sessions_.Reply(identity, InternalType::kRegistryReply, reply);
  }
  const auto op = static_cast<RegistryOp>(request->op);
  if (health_.failing() && op != RegistryOp::kReject) {
    reply.code = static_cast<uint8_t>(StatusCode::kFull);
    reply.error =
        "registry changes and triggers are refused while the coordinator cannot write "
        "its journal: " +
        health_.Summary(p_.clock->Steady());
    return sessions_.Reply(identity, InternalType::kRegistryReply, reply);
  }
  auto done = op == RegistryOp::kBackfill ? Backfill(*request) : core_.ApplyRegistry(*request);
  if (!done.ok()) {
    reply.code = ReplyCode(done.status());
    reply.error = done.status().message();
    return sessions_.Reply(identity, InternalType::kRegistryReply, reply);
  }
  if (op == RegistryOp::kAdd) FollowRegisteredSchedule(*request, *done);
  if (op == RegistryOp::kRemove) schedule_.Unregister(request->name, "the pipeline was removed");
  reply.json = std::move(*done);
  sessions_.Registered(identity, std::move(reply));  // answered once journaled
}

Result<std::string> SchedulerLoop::Backfill(const RegistryRequest& r) {
  auto queued = schedule_.Backfill(r.name, r.from, r.to, r.max_active);
  if (!queued.ok()) return queued.status();
  spdlog::info("backfill of {} from {} to {} by {}: {} scheduled time(s) queued", r.name,
               FormatTimestamp(r.from), FormatTimestamp(r.to), r.actor.substr(0, 64), *queued);
  return nlohmann::json{{"name", r.name}, {"queued", *queued}}.dump();
}

void SchedulerLoop::FollowRegisteredSchedule(const RegistryRequest& r, const std::string& reply) {
  auto added = nlohmann::json::parse(reply, nullptr, false);
  auto spec = dsl::PipelineFromJsonText(r.pipeline_json);
  if (added.is_discarded() || !spec.ok()) return;  // ApplyRegistry parsed both already
  const std::string hash = added.value("hash", "");
  const std::string label = added.value("label", "");
  if (spec->schedule.empty()) {
    if (schedule_.Has(r.name)) {
      schedule_.Unregister(r.name, "version " + label + " has no schedule");
      spdlog::info("schedule of {} removed: version {} has none", r.name, label);
    }
    return;
  }
  if (schedule_.Fires(r.name, hash)) return;  // the same version again
  Status s = schedule_.Register(r.pipeline_json, hash, *spec);
  if (!s.ok()) {
    spdlog::error("schedule of {}@{} not registered: {}", r.name, label, s.message());
    return;
  }
  spdlog::info("schedule of {}@{} registered: '{}' in {}", r.name, label, spec->schedule,
               spec->timezone.empty() ? "UTC" : spec->timezone);
}

void SchedulerLoop::OnWorkersSnapshot(WorkersSnapshot m) {
  workers_ = std::move(m);
  queue_health_.OnSnapshot(workers_, core_.in_flight(), core_.backlog_paused(), p_.clock->Steady());
}

bool SchedulerLoop::Flush(Micros now, bool place_early) {
  if (place_early && turn_.BeginEarlyPlacement(&frames_)) {
    SendFrames(*p_.dispatcher, &frames_.to_dispatcher);
    const Micros until = p_.clock->Steady() + SchedulerTurn::kPlaceBeforeCommitWait;
    zmq::pollitem_t item[] = {{p_.dispatcher->handle(), 0, ZMQ_POLLIN, 0}};
    while (turn_.AwaitingPlacement()) {
      const Micros left = until - p_.clock->Steady();
      if (left <= 0) break;
      const Micros wait_ms = std::max<Micros>(1, (left + kMicrosPerMilli - 1) / kMicrosPerMilli);
      auto polled = transport::Poll(item, milliseconds(wait_ms));
      if (!polled.ok() || !DrainDispatcher()) break;
    }
  }
  const bool fired = starter_.TakeStarted();
  const bool committed = turn_.Commit(now, p_.clock->Steady(), &frames_);
  if (committed && fired && p_.test_fault == "sched-after-commit") {
    spdlog::warn("test fault: killed after a fire's commit, before its run was dispatched");
    std::raise(SIGKILL);
  }
  for (const std::string& run_id : turn_.TakeFinishedRuns()) schedule_.OnRunFinished(run_id);
  SendOut();
  return committed;
}

void SchedulerLoop::RegisterSchedule(const std::string& snapshot, const std::string& hash,
                                     const std::string& run_id) {
  auto spec = dsl::PipelineFromJsonText(snapshot);
  if (!spec.ok() || spec->schedule.empty()) return;
  schedule_.OnRunStarted(spec->name, run_id);
  Status s = schedule_.Register(snapshot, hash, *spec);
  if (!s.ok()) {
    spdlog::error("schedule of {} not registered: {}", spec->name, s.message());
    return;
  }
  spdlog::info("schedule of {} registered: '{}' in {}", spec->name, spec->schedule,
               spec->timezone.empty() ? "UTC" : spec->timezone);
}

void SchedulerLoop::TickSchedules() {
  const Micros wake = schedule_.NextWake();
  if (wake == 0 || wake > p_.clock->Now()) return;
  if (schedule_.Tick() > 0 && p_.test_fault == "sched-before-commit") {
    spdlog::warn("test fault: killed after a fire was staged, before its commit");
    std::raise(SIGKILL);
  }
}

void SchedulerLoop::SendOut() {
  SendFrames(*p_.dispatcher, &frames_.to_dispatcher);
  SendFrames(*p_.reconciler, &frames_.to_reconciler);
  for (const ClientFrame& f : sessions_.TakeFrames()) {
    Status s = transport::SendTo(client_, f.identity, f.frame, /*dontwait=*/true);
    if (!s.ok()) spdlog::debug("scheduler: client gone: {}", s.message());
  }
}

}  // namespace

Status RunSchedulerLoop(transport::ActorPipe& pipe, SchedulerLoopParams params) {
  SchedulerLoop loop(std::move(params));
  return loop.Run(pipe);
}

}  // namespace apollo11::actors
