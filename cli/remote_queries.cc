// RemoteCoordinator: the read-only questions (queries, logs, traces, the
// audit trail), over the ZeroMQ client port or a node's HTTP API.

#include <algorithm>
#include <cstdio>

#include "cli/remote.h"
#include "common/json_dump.h"
#include "transport/codec.h"

namespace apollo11::cli {

Result<nlohmann::json> RemoteCoordinator::Audit(const storage::AuditFilter& filter) {
  if (http_) return http_->Audit(filter);
  actors::Query q;
  q.kind = actors::QueryKind::kAudit;
  q.id = filter.principal;
  q.arg = filter.action;
  q.offset = static_cast<uint64_t>(std::max<Micros>(filter.since, 0));
  q.limit = static_cast<uint32_t>(std::min<size_t>(filter.limit, UINT32_MAX));
  auto reply = AskQuery(q);
  if (!reply.ok()) return reply.status();
  Status refused = actors::ReplyStatus(reply->code, reply->error);
  if (!refused.ok()) return refused;
  auto doc = ParseJsonBounded(reply->json);
  if (!doc.is_object()) return Status::Corrupt("the coordinator's audit answer is not JSON");
  return doc;
}

Result<actors::QueryReply> RemoteCoordinator::AskQuery(const actors::Query& q) {
  std::string frame;
  transport::Encode(static_cast<uint16_t>(actors::ClientType::kQuery), q, &frame);
  auto raw = Ask(frame, static_cast<uint16_t>(actors::ClientType::kQueryReply), OnDrop::kResend);
  if (!raw.ok()) return raw.status();
  auto env = transport::DecodeEnvelope(raw->data(), raw->size(), actors::ClientLimits());
  if (!env.ok()) return env.status();
  auto reply = transport::BodyAs<actors::QueryReply>(*env);
  if (!reply.ok()) return reply.status();
  if (!reply->journal_error.empty() && warn_on_journal_error_) {
    // What follows is the last durable state; say why it may be stale.
    std::fprintf(stderr, "apollo11: warning: the coordinator cannot write its journal: %s\n",
                 reply->journal_error.c_str());
  }
  Status failed = actors::ReplyStatus(reply->code, reply->error);
  if (!failed.ok()) return failed;
  return reply;
}

Result<nlohmann::json> RemoteCoordinator::Query(const std::string& kind, const std::string& id,
                                                const std::string& arg, uint32_t limit) {
  if (http_) return http_->Query(kind, id, arg, limit);
  auto parsed = actors::ParseQueryKind(kind);
  if (!parsed.ok()) return parsed.status();
  actors::Query q;
  q.kind = *parsed;
  q.id = id;
  q.arg = arg;
  q.limit = limit;
  auto reply = AskQuery(q);
  if (!reply.ok()) return reply.status();
  auto doc = ParseJsonBounded(reply->json);
  if (doc.is_discarded()) return Status::Corrupt("coordinator sent malformed JSON");
  return doc;
}

Result<std::string> RemoteCoordinator::FetchLog(const std::string& exec_id,
                                                const std::string& stream, uint32_t attempt,
                                                uint64_t offset, uint32_t max_bytes,
                                                nlohmann::json* meta) {
  if (http_) return http_->NotHere("an execution's logs", "GET /api/executions/ID/logs");
  actors::Query q;
  q.kind = actors::QueryKind::kLogs;
  q.id = exec_id;
  q.arg = stream;
  q.limit = max_bytes;
  q.offset = offset;
  q.attempt = attempt;
  auto reply = AskQuery(q);
  if (!reply.ok()) return reply.status();
  *meta = ParseJsonBounded(reply->json);
  if (meta->is_discarded()) return Status::Corrupt("coordinator sent malformed JSON");
  return std::move(reply->data);
}

Result<std::string> RemoteCoordinator::TraceLog(const std::string& exec_id, nlohmann::json* meta) {
  if (http_) return http_->NotHere("an execution's trace", "GET /api/executions/ID/trace");
  actors::Query q;
  q.kind = actors::QueryKind::kTraceLog;
  q.id = exec_id;
  auto reply = AskQuery(q);
  if (!reply.ok()) return reply.status();
  *meta = ParseJsonBounded(reply->json);
  if (meta->is_discarded()) return Status::Corrupt("coordinator sent malformed JSON");
  return std::move(reply->data);
}

}  // namespace apollo11::cli
