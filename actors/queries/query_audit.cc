// The audit trail's answer (QueryKind::kAudit) for QueryService: the newest
// records that match the query, newest first. Query fields: id = principal,
// arg = action, offset = since (wall Micros), limit (1 to kMaxAuditAnswer).

#include <algorithm>

#include "actors/queries/query_service.h"
#include "common/json_dump.h"

namespace apollo11::actors {

nlohmann::json AuditRecordJson(const storage::AuditRecord& r) {
  return {{"id", r.id},         {"at", FormatTimestamp(r.at)},
          {"at_us", r.at},      {"principal", r.principal},
          {"role", r.role},     {"transport", r.transport},
          {"source", r.source}, {"request_id", r.request_id},
          {"action", r.action}, {"target", r.target},
          {"ok", r.ok},         {"outcome", r.outcome}};
}

QueryReply QueryService::AnswerAudit(const Query& q, const QueryContext&) const {
  if (audit_ == nullptr)
    return QueryFailure(Status::Unsupported("this store keeps no audit trail"));
  storage::AuditFilter filter;
  filter.principal = q.id;
  filter.action = q.arg;
  filter.since = static_cast<Micros>(std::min<uint64_t>(q.offset, INT64_MAX));
  filter.limit = std::clamp<size_t>(q.limit, 1, kMaxAuditAnswer);
  bool complete = true;
  auto records = audit_->ListAudit(filter, &complete);
  if (!records.ok()) return QueryFailure(records.status());
  nlohmann::json out = nlohmann::json::array();
  for (const storage::AuditRecord& r : *records) out.push_back(AuditRecordJson(r));
  QueryReply reply;
  // complete: false when the scan stopped at its bound with older records
  // left (storage::AuditFilter::max_scan).
  reply.json = SafeJsonDump(nlohmann::json{{"records", std::move(out)}, {"complete", complete}});
  return reply;
}

}  // namespace apollo11::actors
