#pragma once
// The scheduler's door for its clients (the CLI, the HTTP API): it decodes a
// request, refuses what may not pass with the reply the client waits for
// (another protocol version, a CURVE key whose role does not allow it, a
// standby asked to change something or about what only the leader knows,
// new work while the journal cannot be written), and hands the rest to the part that answers it:
// SchedulerCore (submit, rerun, cancel, confirm, registry), QueryService (queries), ScheduleCore
// (backfill, and the schedule of a registered or submitted pipeline). Replies go out through
// ClientSessions, held until the commit that makes them true where the rules say so; a `logs` query
// becomes a LogFetch frame for the dispatcher.
//
// Socket-free: the scheduler loop and the simulator feed it the same bytes.
// Single-threaded: the scheduler actor's thread calls everything.

#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "actors/client_protocol.h"
#include "actors/internal_messages.h"
#include "actors/queries/query_service.h"
#include "actors/scheduler/client_audit.h"
#include "actors/scheduler/client_sessions.h"
#include "actors/scheduler/journal_health.h"
#include "actors/scheduler/scheduler_core.h"
#include "actors/schedules/schedule_core.h"
#include "common/clock.h"
#include "common/fault_port.h"
#include "common/log_limiter.h"
#include "observability/coordinator_metrics.h"
#include "storage/audit_records.h"
#include "transport/codec.h"
#include "transport/key_roles.h"

namespace apollo11::actors {

// What the gate refers to; every pointer must outlive it.
struct ClientGateParts {
  SchedulerCore* core = nullptr;
  JournalHealth* health = nullptr;
  ClientSessions* sessions = nullptr;
  const QueryService* queries = nullptr;
  ScheduleCore* schedules = nullptr;
  const WorkersSnapshot* workers = nullptr;  // the dispatcher's latest
  const Clock* clock = nullptr;
  observability::CoordinatorMetrics* metrics = nullptr;  // null: none counted
  FaultPort* faults = nullptr;                           // null: NoFaults()
};

// How the gate treats its clients, set by the node.
struct ClientGatePolicy {
  // CURVE is on: every request is checked against its key's roles
  // (transport/key_roles.h). Off: loopback or --insecure, no roles.
  bool check_roles = false;
  // This coordinator is a standby: it answers queries and refuses the rest,
  // naming the leader's client endpoint (`leader_endpoint`, "" = unknown).
  bool standby = false;
  std::function<std::string()> leader_endpoint;
};

class ClientGate {
 public:
  ClientGate(ClientGateParts parts, ClientGatePolicy policy);

  // One frame from client `identity`, authenticated as `peer` (empty key
  // without CURVE). Whatever it produces for the dispatcher is appended to
  // `to_dispatcher`, encoded. Never throws on anything the client sent.
  void OnFrame(const std::string& identity, const transport::PeerAuth& peer, const void* data,
               size_t size, std::vector<std::string>* to_dispatcher);

 private:
  using Handler = void (ClientGate::*)(const std::string& identity, transport::Envelope& env);
  struct RouteRow {
    ClientType type;
    Handler handle;
  };
  static const std::array<RouteRow, 7> kRoutes;

  // OnFrame's work for a request of a known type and version.
  void Handle(const std::string& identity, const RouteRow& route);
  // What a request of type `t` (or a registry request's `op`) asks to do
  // (transport/key_roles.h's table).
  static transport::Action ActionOf(ClientType t);
  static transport::Action ActionOf(RegistryOp op);
  // Under CURVE, true when the caller's roles (peer_) allow `action`; else
  // answers the request of type `t` with a refusal and returns false.
  bool Permitted(const std::string& identity, ClientType t, transport::Action action);
  // The leader's client endpoint as the policy knows it ("" = unknown).
  std::string LeaderEndpoint() const;
  // On a standby, a query about the workers (`workers`, `logs`), which
  // connect to the leader alone: answered "not the leader; the leader is X"
  // (the CLI and the HTTP API follow it) and true; else false.
  bool StandbyDefers(const std::string& identity, QueryKind kind);
  // On a standby, an answer "no run X" (any NotFound) becomes "not the
  // leader; the leader is L; no run X in this standby's journal ...": its
  // journal may lag the leader's, so it must not say the run does not exist.
  void StandbyLacks(QueryReply* reply) const;
  void RefuseVersion(const std::string& identity, ClientType type, uint64_t version);
  // The reply a refused request of type `t` waits for, with `code` and `why`.
  void ReplyRefusal(const std::string& identity, ClientType t, StatusCode code,
                    const std::string& why);
  // A request that starts a run (submit, rerun) while commits fail: refused
  // with kFull (it could not be journaled) and true; else false.
  bool RefuseWhileFailing(const std::string& identity);

  // The audit trail: every changing request a leader handles is journaled
  // once, with its caller and what came of it, in the commit of what it did
  // (SchedulerCore::StageAudit). BeginAudit starts the record of a request
  // of type `t` from peer_; Attribute applies its OnBehalf and names its
  // target (a refused OnBehalf is answered, and false returned);
  // FinishAudit takes the outcome of the answer and stages the record.
  void BeginAudit(ClientType t);
  bool Attribute(const std::string& identity, ClientType t, const OnBehalf& on_behalf,
                 const std::string& target);
  void FinishAudit();
  // 16 hex digits, for a request that brings no id of its own.
  std::string NewRequestId();
  // The actor the run's history records for the request being handled.
  std::string Actor(std::string_view fallback) const;

  void OnSubmit(const std::string& identity, transport::Envelope& env);
  void OnRerun(const std::string& identity, transport::Envelope& env);
  void OnQuery(const std::string& identity, transport::Envelope& env);
  void OnConfirm(const std::string& identity, transport::Envelope& env);
  void OnCancel(const std::string& identity, transport::Envelope& env);
  void OnRegistry(const std::string& identity, transport::Envelope& env);
  void OnAuditNote(const std::string& identity, transport::Envelope& env);

  ClientGateParts parts_;
  ClientGatePolicy policy_;
  // The peer whose frame is being handled; set by OnFrame, valid only
  // while it runs (every handler answers or decides within it).
  const transport::PeerAuth* peer_ = nullptr;
  LogLimiter refusal_log_{10, kMicrosPerSecond};  // refused client requests
  // The request being handled: its caller and its audit record (none for a
  // query, or on a standby, which journals nothing of its own).
  Caller caller_;
  std::optional<storage::AuditRecord> audit_;
  std::mt19937_64 request_ids_{std::random_device{}()};
  LogLimiter audit_log_{1, 10 * kMicrosPerSecond};  // audit records not staged
  transport::Envelope env_;
  std::vector<std::string>* to_dispatcher_ = nullptr;  // during OnFrame
};

}  // namespace apollo11::actors
