// Journal: the audit table (storage/audit_store.h).

#include <algorithm>

#include "storage/journal.h"
#include "storage/journal_internal.h"
#include "storage/record_codec.h"

namespace apollo11::storage {

int Journal::WriteAudit(MDB_txn* txn, const Batch& batch, uint64_t batch_no) {
  const std::vector<AuditRecord>& records = batch.audit_records();
  if (records.empty()) return 0;
  if (records.size() > kMaxAuditPerBatch) return EINVAL;
  for (size_t i = 0; i < records.size(); ++i) {
    const std::string key = codec::EncodeSeqKey(AuditId(batch_no, i));
    const std::string value = EncodeAudit(records[i]);
    MDB_val k = Val(key), v = Val(value);
    // Not MDB_APPEND: a replica that installed a copy may meet a key again.
    if (int rc = mdb_put(txn, env_->audit, &k, &v, 0); rc != 0) return rc;
  }
  return 0;
}

Result<std::vector<AuditRecord>> Journal::ListAudit(const AuditFilter& filter, bool* complete) {
  std::vector<AuditRecord> out;
  if (complete != nullptr) *complete = true;
  if (env_->audit == 0 || filter.limit == 0) return out;
  ReadTxn txn(*this);
  APOLLO11_RETURN_IF_ERROR(txn.Begin());
  Cursor cursor;
  int rc = cursor.Open(txn.get(), env_->audit);
  if (rc != 0) return Error(rc, "open a cursor");
  MDB_val k, v;
  size_t scanned = 0;
  for (rc = cursor.Get(&k, &v, MDB_LAST); rc == 0 && out.size() < filter.limit;
       rc = cursor.Get(&k, &v, MDB_PREV)) {
    if (scanned++ == filter.max_scan) {
      if (complete != nullptr) *complete = false;
      break;
    }
    if (k.mv_size != 8) return Status::Corrupt("the audit table holds a key that is not an id");
    Result<AuditRecord> r = DecodeAudit(codec::DecodeSeqKey(View(k)), View(v));
    if (!r.ok()) return r.status();
    if (r->at < filter.since) break;
    if (Matches(filter, *r)) out.push_back(std::move(r).value());
  }
  if (rc != 0 && rc != MDB_NOTFOUND) return Error(rc, "list the audit trail");
  return out;
}

Result<size_t> Journal::PruneAudit(Micros before, size_t max_records) {
  if (options_.read_only) return Status::Unsupported("the journal is open read-only");
  size_t removed = 0;
  Status s = RunWrite("prune the audit trail", [&](MDB_txn* txn) {
    removed = 0;
    Cursor cursor;
    int rc = cursor.Open(txn, env_->audit);
    if (rc != 0) return rc;
    MDB_val k, v;
    for (rc = cursor.Get(&k, &v, MDB_FIRST); rc == 0 && removed < max_records;
         rc = cursor.Get(&k, &v, MDB_NEXT)) {
      // A record that does not decode is older than anything this build
      // wrote: it goes too rather than block the pruning for good.
      Result<AuditRecord> r = DecodeAudit(0, View(v));
      if (r.ok() && r->at >= before) break;
      if ((rc = mdb_cursor_del(cursor.get(), 0)) != 0) return rc;
      ++removed;
    }
    return rc == MDB_NOTFOUND ? 0 : rc;
  });
  if (!s.ok()) return s;
  return removed;
}

}  // namespace apollo11::storage
