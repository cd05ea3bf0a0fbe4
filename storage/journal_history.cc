// The history of one execution: the seqs of its transitions kept in its
// execution value (schema 2), so a transition touches no per-execution index
// page of its own; exec_index holds the seqs of older records and of
// transitions whose execution has no record.

#include <lmdb.h>

#include <algorithm>
#include <deque>
#include <string_view>
#include <vector>

#include "common/ids.h"
#include "storage/journal.h"
#include "storage/journal_internal.h"
#include "storage/record_codec.h"

namespace apollo11::storage {
namespace {

// Stores `record` (encoded) for `exec_id` with the seqs it had plus `added`
// (ascending). `record` empty: keep the stored record's bytes. MDB_NOTFOUND
// when there is no readable stored record to keep. A damaged stored value is
// replaced by a new record (its seqs are lost with it), never a reason to
// refuse the commit.
int PutWithSeqs(MDB_txn* txn, MDB_dbi dbi, std::string_view exec_id, std::string_view record,
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

// The seqs a batch assigns, grouped by execution: one (exec id, seq) entry
// per transition, sorted by exec id then seq. A 100k-task submission holds
// 100k entries of 24 bytes here, where a map of vectors held ~400 bytes per
// execution. The ids point into the batch (or into `made_`, for transitions
// written without an exec id), which outlives this.
class SeqsByExecution {
 public:
  SeqsByExecution(const RunBatch& batch, uint64_t first_seq) {
    entries_.reserve(batch.transition_records().size());
    uint64_t seq = first_seq;
    for (const TransitionRecord& t : batch.transition_records()) {
      std::string_view id = t.exec_id;
      if (id.empty()) id = made_.emplace_back(MakeExecId(t.run_id, t.task_id));
      entries_.push_back({id, seq++});
    }
    std::sort(entries_.begin(), entries_.end());
    taken_.assign(entries_.size(), 0);
  }

  // Sets `out` to the seqs of `exec_id` (empty: none) and marks them taken.
  void Take(std::string_view exec_id, std::vector<uint64_t>* out) {
    out->clear();
    auto it = std::lower_bound(entries_.begin(), entries_.end(), Entry{exec_id, 0});
    for (; it != entries_.end() && it->exec_id == exec_id; ++it) {
      taken_[static_cast<size_t>(it - entries_.begin())] = 1;
      out->push_back(it->seq);
    }
  }

  // Calls fn(exec_id, seqs) for each execution none of whose seqs was
  // taken, in exec id order.
  template <class Fn>
  int EachUntaken(Fn fn) const {
    std::vector<uint64_t> seqs;
    for (size_t i = 0; i < entries_.size();) {
      size_t end = i;
      seqs.clear();
      while (end < entries_.size() && entries_[end].exec_id == entries_[i].exec_id) {
        seqs.push_back(entries_[end].seq);
        ++end;
      }
      if (!taken_[i]) {
        if (const int rc = fn(entries_[i].exec_id, seqs); rc != 0) return rc;
      }
      i = end;
    }
    return 0;
  }

 private:
  struct Entry {
    std::string_view exec_id;
    uint64_t seq;
    bool operator<(const Entry& o) const {
      return exec_id != o.exec_id ? exec_id < o.exec_id : seq < o.seq;
    }
  };
  std::vector<Entry> entries_;
  std::vector<uint8_t> taken_;  // by entry; a group is taken as a whole
  std::deque<std::string> made_;
};

}  // namespace

int Journal::WriteExecutions(MDB_txn* txn, const Batch& batch, uint64_t first_seq) {
  const Env& e = *env_;
  SeqsByExecution by_exec(batch, first_seq);
  std::vector<uint64_t> seqs;
  int rc = 0;
  // In key order (a later record of the same execution still after an
  // earlier one). LMDB fills the leaves of keys inserted in order. In task
  // order (t0_9 before t0_10) a new run's leaves ended about two thirds
  // full, and its first commit held and wrote half as many pages again (22
  // MB of dirty pages in all at 100k tasks).
  const std::vector<EncodedExecution>& records = batch.execution_records();
  std::vector<uint32_t> order(records.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return records[a].exec_id < records[b].exec_id; });
  for (uint32_t i : order) {
    const EncodedExecution& x = records[i];
    by_exec.Take(x.exec_id, &seqs);
    if ((rc = PutWithSeqs(txn, e.executions, x.exec_id, x.value, seqs)) != 0) return rc;
  }
  return by_exec.EachUntaken([&](std::string_view exec_id, const std::vector<uint64_t>& added) {
    int put = PutWithSeqs(txn, e.executions, exec_id, {}, added);
    if (put != MDB_NOTFOUND) return put;
    MDB_val exec = Val(exec_id);
    for (uint64_t s : added) {
      const std::string key = codec::EncodeSeqKey(s);
      MDB_val seq_val = Val(key);
      if ((put = mdb_put(txn, e.exec_index, &exec, &seq_val, MDB_APPENDDUP)) != 0) return put;
    }
    return 0;
  });
}

Result<bool> Journal::HasExecutionsOf(const std::string& run_id) {
  const std::string prefix = run_id + ".";
  ReadTxn txn(*this);
  APOLLO11_RETURN_IF_ERROR(txn.Begin());
  Cursor cursor;
  int rc = cursor.Open(txn.get(), env_->executions);
  if (rc != 0) return Error(rc, "open a cursor");
  MDB_val k = Val(prefix), v;
  rc = cursor.Get(&k, &v, MDB_SET_RANGE);
  if (rc == MDB_NOTFOUND) return false;
  if (rc != 0) return Error(rc, "find an execution");
  return View(k).substr(0, prefix.size()) == prefix;
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
