// ClientGate's part in the audit trail (client_gate.h): the record of each
// changing request, its caller, and the notes a node sends of what it did
// itself.

#include <spdlog/spdlog.h>

#include <cstdio>
#include <string>
#include <utility>

#include "actors/scheduler/client_gate.h"

namespace apollo11::actors {

using transport::Envelope;

std::string ClientGate::NewRequestId() {
  char made[17];
  std::snprintf(made, sizeof made, "%016llx",
                static_cast<unsigned long long>(request_ids_()));  // NOLINT(runtime/int)
  return made;
}

void ClientGate::BeginAudit(ClientType t) {
  (void)parts_.sessions->TakeOutcome();  // an earlier answer's
  // An empty OnBehalf is never refused.
  caller_ = *CallerOf(*peer_, policy_.check_roles, OnBehalf{}, NewRequestId());
  storage::AuditRecord r;
  r.at = parts_.clock->Now();
  r.action = std::string(transport::RuleOf(ActionOf(t)).name);
  audit_ = std::move(r);
}

bool ClientGate::Attribute(const std::string& identity, ClientType t, const OnBehalf& on_behalf,
                           const std::string& target) {
  if (audit_) audit_->target = target;
  auto caller = CallerOf(*peer_, policy_.check_roles, on_behalf, caller_.request_id);
  if (!caller.ok()) {
    parts_.metrics->client_requests_refused.Inc();
    uint64_t suppressed = 0;
    if (refusal_log_.Allow(parts_.clock->Steady(), &suppressed)) {
      spdlog::warn("scheduler: refused a client request: {}{}", caller.status().message(),
                   suppressed ? " (" + std::to_string(suppressed) + " more not logged)" : "");
    }
    ReplyRefusal(identity, t, caller.status().code(), caller.status().message());
    return false;
  }
  caller_ = std::move(*caller);
  return true;
}

void ClientGate::FinishAudit() {
  if (!audit_) return;
  storage::AuditRecord& r = *audit_;
  r.principal = caller_.principal;
  r.role = caller_.role;
  r.transport = caller_.transport;
  r.source = caller_.source;
  r.request_id = caller_.request_id;
  auto outcome = parts_.sessions->TakeOutcome();
  r.ok = outcome && outcome->ok;
  r.outcome = outcome ? std::move(outcome->text) : "no answer";
  const std::string action = r.action;
  if (!parts_.core->StageAudit(std::move(r))) {
    uint64_t suppressed = 0;
    if (audit_log_.Allow(parts_.clock->Steady(), &suppressed)) {
      spdlog::error(
          "audit: a {} by {} was not journaled: the commit waiting to be retried holds {} audit "
          "records already{}",
          action, caller_.principal, storage::kMaxAuditPerBatch,
          suppressed ? " (" + std::to_string(suppressed) + " more)" : "");
    }
  }
  audit_.reset();
}

std::string ClientGate::Actor(std::string_view fallback) const { return caller_.Actor(fallback); }

void ClientGate::OnAuditNote(const std::string& identity, Envelope& env) {
  auto note = transport::BodyAs<AuditNote>(env);
  if (!note.ok() || note->action.empty() || note->action.size() > 64 || note->on_behalf.empty()) {
    return ReplyRefusal(
        identity, ClientType::kAuditNote, StatusCode::kInvalidInput,
        "an audit note needs an action (at most 64 bytes) and the caller it is for");
  }
  // Who may name a caller at all (an admin key, or anyone without CURVE).
  auto caller = CallerOf(*peer_, policy_.check_roles, note->on_behalf, NewRequestId());
  if (!caller.ok()) {
    return ReplyRefusal(identity, ClientType::kAuditNote, caller.status().code(),
                        caller.status().message());
  }
  storage::AuditRecord r;
  r.at = parts_.clock->Now();
  r.principal = caller->principal;
  r.role = caller->role;
  r.transport = caller->transport;
  r.source = caller->source;
  r.request_id = caller->request_id;
  r.action = std::move(note->action);
  r.target = std::move(note->target);
  r.ok = note->ok;
  r.outcome = std::move(note->outcome);
  if (!parts_.core->StageAudit(std::move(r))) {
    return ReplyRefusal(identity, ClientType::kAuditNote, StatusCode::kFull,
                        "the audit trail cannot take more records until the journal is writable");
  }
  ConfirmReply reply;
  reply.text = "recorded";
  parts_.sessions->Confirmed(identity, std::move(reply));  // answered once journaled
}

}  // namespace apollo11::actors
