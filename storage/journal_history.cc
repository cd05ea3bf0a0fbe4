// The history of one execution: the seqs of its transitions kept in its
// execution value (schema 2), so a transition touches no per-execution index
// page of its own; exec_index holds the seqs of older records and of
// transitions whose execution has no record.

#include <lmdb.h>

#include <algorithm>
#include <map>

#include "common/ids.h"
#include "storage/journal.h"
#include "storage/journal_internal.h"
#include "storage/record_codec.h"

namespace apollo11::storage {
namespace {

// Stores `record` (encoded) for `exec_id` with the seqs it had plus `added`.
// `record` empty: keep the stored record's bytes. MDB_NOTFOUND when there is
// no readable stored record to keep. A damaged stored value is replaced by a
// new record (its seqs are lost with it), never a reason to refuse the commit.
int PutWithSeqs(MDB_txn* txn, MDB_dbi dbi, const std::string& exec_id, std::string_view record,
                const std::vector<uint64_t>& added) {
  MDB_val k = Val(exec_id), old;
  std::vector<uint64_t> seqs;
  std::string_view stored;
  int rc = mdb_get(txn, dbi, &k, &old);
  if (rc == 0) {
    if (!codec::SplitExecutionValue(View(old), &stored, &seqs).ok()) {
      if (record.empty()) return MDB_NOTFOUND;
      seqs.clear();
    }
  } else if (rc != MDB_NOTFOUND || record.empty()) {
    return rc;
  }
  for (uint64_t seq : added) {
    if (seqs.empty() || seqs.back() < seq) seqs.push_back(seq);
  }
  // `stored` points into the map; encode before the put may move pages.
  const std::string value = codec::EncodeExecutionValue(record.empty() ? stored : record, seqs);
  MDB_val v = Val(value);
  return mdb_put(txn, dbi, &k, &v, 0);
}

}  // namespace

int Journal::WriteExecutions(MDB_txn* txn, const Batch& batch, uint64_t first_seq) {
  const Env& e = *env_;
  std::map<std::string, std::vector<uint64_t>> pending;
  uint64_t seq = first_seq;
  for (const TransitionRecord& t : batch.transition_records()) {
    pending[t.exec_id.empty() ? MakeExecId(t.run_id, t.task_id) : t.exec_id].push_back(seq++);
  }
  static const std::vector<uint64_t> kNone;
  int rc = 0;
  for (const ExecutionRecord& x : batch.execution_records()) {
    auto it = pending.find(x.exec_id);
    const std::string record = codec::EncodeExecution(x);
    rc =
        PutWithSeqs(txn, e.executions, x.exec_id, record, it == pending.end() ? kNone : it->second);
    if (rc != 0) return rc;
    if (it != pending.end()) pending.erase(it);
  }
  for (const auto& [exec_id, seqs] : pending) {
    rc = PutWithSeqs(txn, e.executions, exec_id, {}, seqs);
    if (rc == 0) continue;
    if (rc != MDB_NOTFOUND) return rc;
    MDB_val exec = Val(exec_id);
    for (uint64_t s : seqs) {
      const std::string key = codec::EncodeSeqKey(s);
      MDB_val seq_val = Val(key);
      if ((rc = mdb_put(txn, e.exec_index, &exec, &seq_val, MDB_APPENDDUP)) != 0) return rc;
    }
  }
  return 0;
}

Result<std::vector<TransitionRecord>> Journal::HistoryOfExecution(const std::string& exec_id) {
  std::vector<TransitionRecord> out;
  if (exec_id.empty() || exec_id.size() > 511) return out;
  ReadTxn txn(*this);
  APOLLO11_RETURN_IF_ERROR(txn.Begin());
  std::vector<uint64_t> seqs;
  auto found = txn.Find(env_->executions, exec_id);
  if (!found.ok()) return found.status();
  if (found->has_value()) {
    std::string_view record;
    Status split = codec::SplitExecutionValue(**found, &record, &seqs);
    if (!split.ok())
      return Status::Corrupt("journal " + dir_ + ": execution " + exec_id + ": " + split.message());
  }
  Cursor cursor;
  int rc = cursor.Open(txn.get(), env_->exec_index);
  if (rc != 0) return Error(rc, "open a cursor");
  MDB_val k = Val(exec_id), v;
  for (rc = cursor.Get(&k, &v, MDB_SET_KEY); rc == 0; rc = cursor.Get(&k, &v, MDB_NEXT_DUP)) {
    if (v.mv_size == 8) seqs.push_back(codec::DecodeSeqKey(View(v)));
  }
  if (rc != MDB_NOTFOUND) return Error(rc, "scan the execution index");
  std::sort(seqs.begin(), seqs.end());
  seqs.erase(std::unique(seqs.begin(), seqs.end()), seqs.end());
  for (uint64_t seq : seqs) {
    const std::string key = codec::EncodeSeqKey(seq);
    auto t = txn.Find(env_->transitions, key);
    if (!t.ok()) return t.status();
    if (!t->has_value()) continue;  // pruned by retention
    Result<TransitionRecord> record = codec::DecodeTransition(seq, **t);
    if (!record.ok()) return record.status();
    out.push_back(std::move(record).value());
  }
  return out;
}

}  // namespace apollo11::storage
