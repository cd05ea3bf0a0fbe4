#pragma once
// The audit trail's durable state (one part of RunStore, storage/run_store.h):
// written through RunBatch::PutAudit in the commit of what it records, read
// and pruned here (storage/audit_records.h).

#include <vector>

#include "common/status.h"
#include "storage/audit_records.h"

namespace apollo11::storage {

class AuditStore {
 public:
  virtual ~AuditStore() = default;

  // The newest `filter.limit` records that match `filter`, newest first.
  // The scan goes from the newest record back and stops at the first one
  // dated before `filter.since` (the trail is in commit order, which is
  // time order but for a step back of the wall clock) or after
  // `filter.max_scan` records; `*complete` (when given) is false in the
  // latter case while older records remain. Any thread.
  Result<std::vector<AuditRecord>> ListAudit(const AuditFilter& filter) {
    return ListAudit(filter, nullptr);
  }
  virtual Result<std::vector<AuditRecord>> ListAudit(const AuditFilter& filter, bool* complete) = 0;
  // Removes the oldest records dated before `before`, at most `max_records`
  // of them; returns how many went (fewer than max_records: none is left).
  // Writer thread only.
  virtual Result<size_t> PruneAudit(Micros before, size_t max_records) = 0;
};

}  // namespace apollo11::storage
