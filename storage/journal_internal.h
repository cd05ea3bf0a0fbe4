#pragma once
// Internals of the journal shared by its implementation files (journal.cc,
// journal_runs.cc, journal_gc.cc, ...): the LMDB handles, a read
// transaction under the resize lock, a scoped cursor. Not part of the storage
// API.

#include <lmdb.h>

#include <optional>
#include <string>
#include <string_view>

#include "storage/journal.h"

namespace apollo11::storage {

inline MDB_val Val(std::string_view s) { return MDB_val{s.size(), const_cast<char*>(s.data())}; }
inline std::string_view View(const MDB_val& v) {
  return std::string_view(static_cast<const char*>(v.mv_data), v.mv_size);
}

// A u64 as 8 little-endian bytes (meta and stats values), and back.
inline void PutU64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
inline uint64_t GetU64(std::string_view in) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(in[i]);
  return v;
}

// meta key: the highest seq ever assigned (big-endian u64), written by
// retention, so seq numbers never go back when it removes the newest
// transitions.
inline constexpr const char* kSeqFloorKey = "seq_floor";
// meta key: the id of the run last written by RunBatch::CreateRun, so run ids
// keep increasing after a restart even when retention removed that run.
inline constexpr const char* kLastRunIdKey = "last_run_id";

// meta key: how many batches were committed or applied (big-endian u64),
// the replication position (RunStore::last_batch), then the epoch the last
// one was committed in (big-endian u64, RunStore::last_batch_epoch; absent in
// journals written before it).
inline constexpr const char* kBatchCountKey = "batch_count";
// meta key: the coordinator epoch (little-endian u64; BumpEpoch, BeginTerm).
inline constexpr const char* kEpochKey = "epoch";

struct Journal::Env {
  MDB_env* env = nullptr;
  MDB_dbi transitions = 0;   // be64 seq -> transition
  MDB_dbi run_index = 0;     // run_id -> be64 seq (sorted duplicates)
  MDB_dbi exec_index = 0;    // exec_id -> be64 seq (sorted duplicates)
  MDB_dbi executions = 0;    // exec_id -> current execution state
  MDB_dbi runs = 0;          // run_id -> run
  MDB_dbi runs_by_time = 0;  // be64 created_at + run_id -> ""
  MDB_dbi active_runs = 0;   // run_id -> "" while the run is not final
  MDB_dbi schedules = 0;     // pipeline name -> ScheduleRecord
  MDB_dbi fires = 0;         // FireKey -> FireRecord
  MDB_dbi pipelines = 0;     // hash -> canonical JSON, immutable
  MDB_dbi stats = 0;         // stats key -> last durations
  MDB_dbi meta = 0;          // schema_version, epoch
  MDB_dbi registry = 0;      // registry: versions, states, trigger keys
  MDB_dbi audit = 0;         // AuditId (be64) -> AuditRecord; 0: none (older, read-only)
  // registry: a read-only journal written before the table existed.
  bool registry_missing = false;

  ~Env() {
    if (env != nullptr) mdb_env_close(env);
  }
};

// A read transaction held under the shared resize lock, which it takes
// when constructed and holds for its scope (Begin is called right after).
// Any thread.
class SCOPED_CAPABILITY Journal::ReadTxn {
 public:
  explicit ReadTxn(const Journal& journal) ACQUIRE_SHARED(journal.resize_mu_) : journal_(journal) {
    journal_.resize_mu_.LockShared();
  }
  ~ReadTxn() RELEASE_GENERIC() {
    if (txn_ != nullptr) mdb_txn_abort(txn_);
    if (locked_) journal_.resize_mu_.UnlockShared();
  }
  // Lets the lock go and takes it back around AdoptMapSize, which the
  // analysis cannot follow through the scope's own lock.
  Status Begin() NO_THREAD_SAFETY_ANALYSIS {
    for (int attempt = 0;; ++attempt) {
      if (!locked_) {
        journal_.resize_mu_.LockShared();
        locked_ = true;
      }
      int rc = mdb_txn_begin(journal_.env_->env, nullptr, MDB_RDONLY, &txn_);
      if (rc == 0) return Status::Ok();
      txn_ = nullptr;
      journal_.resize_mu_.UnlockShared();
      locked_ = false;
      // Another process grew the map past ours: adopt its size and retry.
      if (rc == MDB_MAP_RESIZED && attempt < 8) {
        APOLLO11_RETURN_IF_ERROR(journal_.AdoptMapSize());
        continue;
      }
      return journal_.Error(rc, "begin a read transaction");
    }
  }
  MDB_txn* get() const { return txn_; }

  // The value under `key` in `dbi`, nullopt when absent. The view is valid
  // until the transaction ends.
  Result<std::optional<std::string_view>> Find(MDB_dbi dbi, std::string_view key) const {
    if (key.empty() || key.size() > 511) return std::optional<std::string_view>();
    MDB_val k = Val(key), v;
    int rc = mdb_get(txn_, dbi, &k, &v);
    if (rc == MDB_NOTFOUND) return std::optional<std::string_view>();
    if (rc != 0) return journal_.Error(rc, "read");
    return std::optional<std::string_view>(View(v));
  }

 private:
  const Journal& journal_;
  bool locked_ = true;
  MDB_txn* txn_ = nullptr;
};

// A cursor closed on scope exit.
class Cursor {
 public:
  ~Cursor() {
    if (cursor_ != nullptr) mdb_cursor_close(cursor_);
  }
  int Open(MDB_txn* txn, MDB_dbi dbi) { return mdb_cursor_open(txn, dbi, &cursor_); }
  int Get(MDB_val* key, MDB_val* value, MDB_cursor_op op) {
    return mdb_cursor_get(cursor_, key, value, op);
  }
  MDB_cursor* get() const { return cursor_; }

 private:
  MDB_cursor* cursor_ = nullptr;
};

}  // namespace apollo11::storage
