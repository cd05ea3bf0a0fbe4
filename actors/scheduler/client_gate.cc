#include "actors/scheduler/client_gate.h"

#include <spdlog/spdlog.h>

#include <optional>
#include <tuple>
#include <utility>

#include "actors/scheduler/spec_handoff.h"
#include "actors/schedules/registry_schedules.h"
#include "common/json_dump.h"
#include "ha/not_leader.h"
#include "storage/snapshot_pack.h"

namespace apollo11::actors {

using transport::Envelope;

const std::array<ClientGate::RouteRow, 7> ClientGate::kRoutes = {{
    {ClientType::kSubmitRun, &ClientGate::OnSubmit},
    {ClientType::kRegistry, &ClientGate::OnRegistry},
    {ClientType::kRerunRun, &ClientGate::OnRerun},
    {ClientType::kQuery, &ClientGate::OnQuery},
    {ClientType::kConfirmExec, &ClientGate::OnConfirm},
    {ClientType::kCancelRun, &ClientGate::OnCancel},
    {ClientType::kAuditNote, &ClientGate::OnAuditNote},
}};

ClientGate::ClientGate(ClientGateParts parts, ClientGatePolicy policy)
    : parts_(parts), policy_(std::move(policy)) {
  if (parts_.metrics == nullptr) parts_.metrics = observability::CoordinatorMetrics::Inert();
  if (parts_.faults == nullptr) parts_.faults = NoFaults();
}

void ClientGate::OnFrame(const std::string& identity, const transport::PeerAuth& peer,
                         const void* data, size_t size, std::vector<std::string>* to_dispatcher) {
  to_dispatcher_ = to_dispatcher;
  Status decoded = transport::DecodeEnvelopeInto(data, size, &env_, ClientLimits());
  if (!decoded.ok()) {
    // Say so: a client waiting for a reply must not wait forever.
    spdlog::warn("scheduler: refused a client message ({} bytes): {}", size, decoded.message());
    SubmitReply reply;
    reply.code = static_cast<uint8_t>(StatusCode::kInvalidInput);
    reply.error = "request refused: " + decoded.message();
    parts_.sessions->Reply(identity, ClientType::kSubmitReply, reply);
    return;
  }
  for (const RouteRow& route : kRoutes) {
    if (static_cast<uint16_t>(route.type) != env_.type) continue;
    const uint64_t version = ClientRequestVersion(env_.body);
    if (version != kClientProtocolVersion) return RefuseVersion(identity, route.type, version);
    peer_ = &peer;
    audit_.reset();
    // A standby changes nothing and journals nothing of its own: the
    // client follows its refusal to the leader, which records the request.
    // A note is its own record (OnAuditNote).
    if (route.type != ClientType::kQuery && route.type != ClientType::kAuditNote &&
        !policy_.standby) {
      BeginAudit(route.type);
    }
    Handle(identity, route);
    return FinishAudit();
  }
  spdlog::warn("scheduler: dropped a client message of unknown type {}", env_.type);
}

void ClientGate::Handle(const std::string& identity, const RouteRow& route) {
  // A registry request's action depends on its op: checked once decoded;
  // an audit note's sender must be one that may name a caller (CallerOf).
  if (route.type != ClientType::kRegistry && route.type != ClientType::kAuditNote &&
      !Permitted(identity, route.type, ActionOf(route.type))) {
    return;
  }
  if (policy_.standby && route.type != ClientType::kQuery) {
    return ReplyRefusal(identity, route.type, StatusCode::kNotLeader,
                        ha::NotLeaderReply(LeaderEndpoint()));
  }
  (this->*route.handle)(identity, env_);
}

std::string ClientGate::LeaderEndpoint() const {
  return policy_.leader_endpoint ? policy_.leader_endpoint() : "";
}

bool ClientGate::StandbyDefers(const std::string& identity, QueryKind kind) {
  if (!policy_.standby) return false;
  if (kind == QueryKind::kChanges) {
    ReplyRefusal(
        identity, ClientType::kQuery, StatusCode::kNotLeader,
        ha::NotLeaderReply(LeaderEndpoint(), "a standby changes no run: follow the leader"));
    return true;
  }
  if (kind != QueryKind::kWorkers && kind != QueryKind::kLogs) return false;
  ReplyRefusal(
      identity, ClientType::kQuery, StatusCode::kNotLeader,
      ha::NotLeaderReply(LeaderEndpoint(), "a standby has no workers: they connect to the leader"));
  return true;
}

void ClientGate::StandbyLacks(QueryReply* reply) const {
  if (!policy_.standby || reply->code != static_cast<uint8_t>(StatusCode::kNotFound)) return;
  reply->code = static_cast<uint8_t>(StatusCode::kNotLeader);
  reply->error = ha::NotLeaderReply(
      LeaderEndpoint(), reply->error +
                            " in this standby's journal, which may not hold every run the leader "
                            "has: ask the leader");
}

transport::Action ClientGate::ActionOf(ClientType t) {
  switch (t) {
    case ClientType::kSubmitRun:
      return transport::Action::kSubmit;
    case ClientType::kRerunRun:
      return transport::Action::kRerun;
    case ClientType::kConfirmExec:
      return transport::Action::kConfirm;
    case ClientType::kCancelRun:
      return transport::Action::kCancel;
    case ClientType::kQuery:
      return transport::Action::kRead;
    default:
      return transport::Action::kRegister;  // the strictest; registry requests decide per op
  }
}

transport::Action ClientGate::ActionOf(RegistryOp op) {
  switch (op) {
    case RegistryOp::kTrigger:
      return transport::Action::kTrigger;
    case RegistryOp::kPause:
      return transport::Action::kPause;
    case RegistryOp::kUnpause:
      return transport::Action::kUnpause;
    case RegistryOp::kBackfill:
      return transport::Action::kBackfill;
    case RegistryOp::kRemove:
      return transport::Action::kRemove;
    default:
      return transport::Action::kRegister;  // kAdd, kReject, and an unknown op
  }
}

bool ClientGate::Permitted(const std::string& identity, ClientType t, transport::Action action) {
  if (!policy_.check_roles || transport::Allows(peer_->roles, action)) return true;
  const std::string why =
      "key " + peer_->key +
      " (roles: " + (peer_->roles ? transport::FormatRoles(peer_->roles) : "none") + ") may not " +
      std::string(transport::RuleOf(action).name) + " (role " + transport::RolesThatMay(action) +
      " may)";
  parts_.metrics->client_requests_refused.Inc();
  uint64_t suppressed = 0;
  if (refusal_log_.Allow(parts_.clock->Steady(), &suppressed)) {
    spdlog::warn("scheduler: refused a client request: {}{}", why,
                 suppressed ? " (" + std::to_string(suppressed) + " more not logged)" : "");
  }
  ReplyRefusal(identity, t, StatusCode::kPermissionDenied, why);
  return false;
}

void ClientGate::ReplyRefusal(const std::string& identity, ClientType t, StatusCode status,
                              const std::string& why) {
  const auto code = static_cast<uint8_t>(status);
  ClientSessions& sessions = *parts_.sessions;
  switch (t) {
    case ClientType::kSubmitRun:
    case ClientType::kRerunRun:
      sessions.Reply(identity, ClientType::kSubmitReply, SubmitReply{code, why, ""});
      break;
    case ClientType::kConfirmExec:
    case ClientType::kAuditNote:
      sessions.Reply(identity, ClientType::kConfirmReply, ConfirmReply{code, why, ""});
      break;
    case ClientType::kRegistry:
      sessions.Reply(identity, ClientType::kRegistryReply, RegistryReply{code, why, ""});
      break;
    default:
      // A cancel has no reply of its own: the client follows it with a
      // status query and takes this as that query's answer.
      sessions.Reply(identity, ClientType::kQueryReply, QueryReply{code, why, "", "", ""});
      break;
  }
}

// A client of another protocol version is told so in the reply it waits
// for. A version 1 client decodes replies in the version 1 layout, so its
// refusal is written in that layout.
void ClientGate::RefuseVersion(const std::string& identity, ClientType type, uint64_t version) {
  const std::string why = "this coordinator speaks client protocol version " +
                          std::to_string(kClientProtocolVersion) + ", the client " +
                          std::to_string(version) + ": use apollo11 of the same release";
  spdlog::warn("scheduler: refused a client request: {}", why);
  const auto code = static_cast<uint8_t>(StatusCode::kUnsupported);
  ClientSessions& sessions = *parts_.sessions;
  if (version != 1 || type == ClientType::kRerunRun || type == ClientType::kRegistry) {
    if (type != ClientType::kCancelRun) {
      ReplyRefusal(identity, type, StatusCode::kUnsupported, why);
    }
    return;  // a cancel has no reply
  }
  switch (type) {
    case ClientType::kSubmitRun:
      sessions.Reply(identity, ClientType::kSubmitReply, std::make_tuple(std::string(), why));
      break;
    case ClientType::kQuery:
      sessions.Reply(identity, ClientType::kQueryReply,
                     std::make_tuple(why, std::string(), std::string(), std::string()));
      break;
    case ClientType::kConfirmExec:
      sessions.Reply(identity, ClientType::kConfirmReply,
                     std::make_tuple(std::string(), why, code));
      break;
    default:
      break;  // a cancel has no reply
  }
}

bool ClientGate::RefuseWhileFailing(const std::string& identity) {
  if (!parts_.health->failing()) return false;
  // It could not be journaled: refuse it rather than hold it in memory.
  SubmitReply reply;
  reply.code = static_cast<uint8_t>(StatusCode::kFull);
  reply.error = "new runs are refused while the coordinator cannot write its journal: " +
                parts_.health->Summary(parts_.clock->Steady());
  parts_.sessions->Reply(identity, ClientType::kSubmitReply, reply);
  return true;
}

void ClientGate::OnRerun(const std::string& identity, Envelope& env) {
  if (RefuseWhileFailing(identity)) return;
  SubmitReply reply;
  auto rerun = transport::BodyAs<RerunRun>(env);
  if (!rerun.ok()) {
    reply.code = static_cast<uint8_t>(StatusCode::kInvalidInput);
    reply.error = "malformed rerun: " + rerun.status().message();
    return parts_.sessions->Reply(identity, ClientType::kSubmitReply, reply);
  }
  if (!Attribute(identity, ClientType::kRerunRun, rerun->on_behalf, rerun->run_id)) return;
  auto run_id = parts_.core->Rerun(*rerun);
  if (!run_id.ok()) {
    reply.code = ReplyCode(run_id.status());
    reply.error = run_id.status().message();
    return parts_.sessions->Reply(identity, ClientType::kSubmitReply, reply);
  }
  parts_.sessions->Accepted(identity, *run_id);  // answered once journaled, as a submission
}

void ClientGate::OnSubmit(const std::string& identity, Envelope& env) {
  if (RefuseWhileFailing(identity)) return;
  SubmitReply reply;
  if (SubmissionNamesRunId(env.body)) {
    reply.code = static_cast<uint8_t>(StatusCode::kInvalidInput);
    reply.error =
        "a submission may not name its run id: run ids are chosen by the coordinator (this "
        "client is older than the coordinator; upgrade it)";
    return parts_.sessions->Reply(identity, ClientType::kSubmitReply, reply);
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
    return parts_.sessions->Reply(identity, ClientType::kSubmitReply, reply);
  }
  if (!Attribute(identity, ClientType::kSubmitRun, submit->on_behalf,
                 "snapshot " + submit->pipeline_hash)) {
    return;
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
  auto run_id = handed ? parts_.core->SubmitParsed(std::move(*submit), std::move(*handed))
                       : parts_.core->Submit(std::move(*submit), std::move(packed));
  if (!run_id.ok()) {
    reply.code = ReplyCode(run_id.status());
    reply.error = run_id.status().message();
    return parts_.sessions->Reply(identity, ClientType::kSubmitReply, reply);
  }
  if (!scheduled.empty()) RegisterSubmittedSchedule(parts_.schedules, scheduled, hash, *run_id);
  // The audit names the pipeline now that the run has it.
  if (audit_) {
    const std::string name = parts_.core->PipelineOf(*run_id);
    if (!name.empty()) audit_->target = name + " (snapshot " + hash.substr(0, 16) + ")";
  }
  // Answered once the run is in the journal: a client that asks about it
  // right away must find it, and a run id handed out survives a crash.
  parts_.sessions->Accepted(identity, *run_id);
}

void ClientGate::OnQuery(const std::string& identity, Envelope& env) {
  parts_.faults->At(FaultPoint::kQueryAnswering);
  QueryReply refused;
  auto query = transport::BodyAs<Query>(env);
  // No id or argument is this long: refused before any handler copies it
  // into a message (a 60 MB id cost five times its size in copies).
  constexpr size_t kMaxQueryField = 4096;
  if (!query.ok()) {
    refused.code = static_cast<uint8_t>(StatusCode::kInvalidInput);
    refused.error = "malformed query: " + query.status().message();
  } else if (query->id.size() > kMaxQueryField || query->arg.size() > kMaxQueryField) {
    refused.code = static_cast<uint8_t>(StatusCode::kInvalidInput);
    refused.error = "query refused: its id (" + std::to_string(query->id.size()) +
                    " bytes) or argument (" + std::to_string(query->arg.size()) +
                    " bytes) is longer than " + std::to_string(kMaxQueryField) + " bytes";
  }
  if (refused.code == 0 && query->arg == "full" && policy_.check_roles &&
      !transport::Allows(peer_->roles, transport::Action::kReadSnapshot)) {
    // The whole snapshot holds env values: what an operator may see (it
    // starts runs with them), not a viewer.
    refused.code = static_cast<uint8_t>(StatusCode::kPermissionDenied);
    refused.error = "a query with arg full shows env values: it needs role " +
                    transport::RolesThatMay(transport::Action::kReadSnapshot);
  }
  if (refused.code == 0 && query->kind == QueryKind::kAudit && policy_.check_roles &&
      !transport::Allows(peer_->roles, transport::Action::kReadAudit)) {
    refused.code = static_cast<uint8_t>(StatusCode::kPermissionDenied);
    refused.error =
        "the audit trail needs role " + transport::RolesThatMay(transport::Action::kReadAudit);
  }
  if (refused.code != 0) return parts_.sessions->Reply(identity, ClientType::kQueryReply, refused);
  if (StandbyDefers(identity, query->kind)) return;
  const Micros steady = parts_.clock->Steady();
  if (query->kind == QueryKind::kChanges) {
    constexpr Micros kMaxChangeWait = 25 * kMicrosPerSecond;
    const Micros wait =
        std::min<Micros>(static_cast<Micros>(query->limit) * kMicrosPerMilli, kMaxChangeWait);
    return parts_.sessions->AwaitChanges(identity, query->arg, steady + wait);
  }
  if (query->kind != QueryKind::kLogs) {
    QueryContext ctx{parts_.core, parts_.workers, parts_.health, parts_.schedules, steady};
    QueryReply answer = parts_.queries->Answer(*query, ctx);
    StandbyLacks(&answer);
    return parts_.sessions->Reply(identity, ClientType::kQueryReply, answer);
  }
  // Answered when the worker that holds the file replies.
  auto plan = parts_.queries->PlanLogFetch(*query);
  if (!plan.ok()) {
    refused.code = ReplyCode(plan.status());
    refused.error = plan.status().message();
    return parts_.sessions->Reply(identity, ClientType::kQueryReply, refused);
  }
  plan->fetch.request.request_id = parts_.sessions->AwaitLog(
      identity, std::move(plan->meta), steady + ClientSessions::kLogFetchTimeout);
  to_dispatcher_->emplace_back();
  transport::Encode(static_cast<uint16_t>(InternalType::kLogFetch), plan->fetch,
                    &to_dispatcher_->back());
}

void ClientGate::OnConfirm(const std::string& identity, Envelope& env) {
  ConfirmReply reply;
  auto confirm = transport::BodyAs<ConfirmExec>(env);
  if (!confirm.ok()) {
    reply.code = static_cast<uint8_t>(StatusCode::kInvalidInput);
    reply.error = "malformed confirmation";
    return parts_.sessions->Reply(identity, ClientType::kConfirmReply, reply);
  }
  if (!Attribute(identity, ClientType::kConfirmExec, confirm->on_behalf,
                 confirm->exec_id + (confirm->kill ? " (kill)" : " (keep)"))) {
    return;
  }
  auto done = parts_.core->Confirm(confirm->exec_id, confirm->kill, Actor("user"));
  if (!done.ok()) {
    reply.code = ReplyCode(done.status());
    reply.error = done.status().message();
    return parts_.sessions->Reply(identity, ClientType::kConfirmReply, reply);
  }
  reply.text = *done;
  parts_.sessions->Confirmed(identity, std::move(reply));  // answered once journaled
}

void ClientGate::OnCancel(const std::string& identity, Envelope& env) {
  auto cancel = transport::BodyAs<CancelRun>(env);
  if (!cancel.ok()) {
    spdlog::warn("scheduler: malformed cancel: {}", cancel.status().message());
    parts_.sessions->NoteOutcome(false, "malformed cancel: " + cancel.status().message());
    return;
  }
  if (!Attribute(identity, ClientType::kCancelRun, cancel->on_behalf, cancel->run_id)) return;
  Status c = parts_.core->Cancel(cancel->run_id, cancel->reason, Actor("user"));
  if (!c.ok()) spdlog::warn("cancel of {}: {}", cancel->run_id, c.message());
  parts_.sessions->NoteOutcome(c.ok(), c.ok() ? "canceled: " + cancel->reason : c.message());
}

void ClientGate::OnRegistry(const std::string& identity, Envelope& env) {
  RegistryReply reply;
  auto request = transport::BodyAs<RegistryRequest>(env);
  if (!request.ok()) {
    reply.code = static_cast<uint8_t>(StatusCode::kInvalidInput);
    reply.error = "malformed registry request: " + request.status().message();
    return parts_.sessions->Reply(identity, ClientType::kRegistryReply, reply);
  }
  const auto op = static_cast<RegistryOp>(request->op);
  if (audit_) {
    audit_->action = std::string(transport::RuleOf(ActionOf(op)).name);
    if (op == RegistryOp::kBackfill && request->dry_run) audit_->action += " (dry run)";
  }
  if (!Permitted(identity, ClientType::kRegistry, ActionOf(op))) return;
  if (request->dry_run && op != RegistryOp::kBackfill) {  // it would act for real
    reply.code = static_cast<uint8_t>(StatusCode::kInvalidInput);
    reply.error = "dry_run is for a backfill only";
    return parts_.sessions->Reply(identity, ClientType::kRegistryReply, reply);
  }
  const std::string target =
      request->ref.empty() ? request->name : request->name + "@" + request->ref;
  if (!Attribute(identity, ClientType::kRegistry, request->on_behalf, target)) return;
  // What the registry records as who added a version, paused, triggered:
  // the authenticated caller where there is one, else what the client says.
  request->actor = Actor(request->actor.empty() ? "cli" : request->actor);
  if (parts_.health->failing() && op != RegistryOp::kReject) {
    reply.code = static_cast<uint8_t>(StatusCode::kFull);
    reply.error =
        "registry changes and triggers are refused while the coordinator cannot write "
        "its journal: " +
        parts_.health->Summary(parts_.clock->Steady());
    return parts_.sessions->Reply(identity, ClientType::kRegistryReply, reply);
  }
  auto done = op == RegistryOp::kBackfill ? QueueBackfill(parts_.schedules, *request)
                                          : parts_.core->registry().Apply(*request);
  if (!done.ok()) {
    reply.code = ReplyCode(done.status());
    reply.error = done.status().message();
    return parts_.sessions->Reply(identity, ClientType::kRegistryReply, reply);
  }
  if (op == RegistryOp::kAdd) FollowRegisteredVersion(parts_.schedules, *request, *done);
  if (op == RegistryOp::kRemove) {
    parts_.schedules->Unregister(request->name, "the pipeline was removed");
  }
  if (op == RegistryOp::kTrigger && request->follow) {
    // A new run's progress goes to the client that waits for it; a run an
    // idempotency key found may be over already: the client asks for it.
    const auto started = ParseJsonBounded(*done);
    if (started.is_object() && !started.value("existing", false) && started.contains("run_id") &&
        started["run_id"].is_string()) {
      parts_.sessions->Subscribe(identity, started["run_id"].get<std::string>());
    }
  }
  reply.json = std::move(*done);
  parts_.sessions->Registered(identity, std::move(reply));  // answered once journaled
}

}  // namespace apollo11::actors
