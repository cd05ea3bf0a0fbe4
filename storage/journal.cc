// The journal's write side: Commit's group commit (WriteBatch, WriteRun) and
// RunWrite, which grows a full map and adopts one another process grew; the
// error an LMDB code is reported as; the last seq; the duration statistics
// (written with every batch, read by DurationP50); the epoch. The reads of
// runs and executions are in journal_runs.cc.

#include "storage/journal.h"

#include <lmdb.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "common/ids.h"
#include "storage/journal_internal.h"
#include "storage/record_codec.h"

namespace apollo11::storage {
namespace {

constexpr size_t kDurationsKept = 64;

// Durations kept per stats key: up to 64 little-endian int64, oldest first.
std::vector<Micros> DecodeDurations(std::string_view v) {
  std::vector<Micros> out;
  for (size_t i = 0; i + 8 <= v.size(); i += 8) {
    out.push_back(static_cast<Micros>(GetU64(v.substr(i, 8))));
  }
  return out;
}

// True when a failed write probably hit a full disk, a quota or a file size
// limit. LMDB reports a short write as EIO, and a write that runs out of space
// part-way is short, so EIO alone does not tell.
bool DiskLooksFull(const std::string& dir) {
  struct statvfs fs;
  if (statvfs(dir.c_str(), &fs) == 0 &&
      static_cast<unsigned long long>(fs.f_bavail) * fs.f_frsize < (64ull << 20)) {
    return true;
  }
  struct rlimit limit;
  struct stat st;
  if (getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY &&
      stat((dir + "/data.mdb").c_str(), &st) == 0 &&
      static_cast<rlim_t>(st.st_size) + (1u << 20) >= limit.rlim_cur) {
    return true;
  }
  return false;
}

}  // namespace

Status Journal::Error(int rc, const std::string& what) const {
  std::string message = "journal " + dir_ + ": " + what + ": " + mdb_strerror(rc);
  switch (rc) {
    case MDB_MAP_FULL:
    case ENOSPC:
    case EDQUOT:
    case EFBIG:
      return Status::Full(message + "; nothing was written, retry when space is free");
    case EIO:
      if (DiskLooksFull(dir_)) {
        return Status::Full(message +
                            " (disk full?); nothing was written, retry when space is free");
      }
      return Status::Io(message);
    case MDB_BAD_VALSIZE:
      return Status::InvalidInput(message + " (a key is empty or longer than 511 bytes)");
    case MDB_CORRUPTED:
    case MDB_PAGE_NOTFOUND:
    case MDB_INVALID:
    case MDB_VERSION_MISMATCH:
    case MDB_INCOMPATIBLE:
      return Status::Corrupt(message);
    case MDB_READERS_FULL:
      return Status::Busy(message);
    default:
      return Status::Io(message);
  }
}

Status Journal::RunWrite(const char* what, const std::function<int(MDB_txn*)>& body) {
  if (options_.read_only) {
    return Status::Unsupported("journal " + dir_ + " is open read-only");
  }
  for (int attempt = 0;; ++attempt) {
    int rc = 0;
    bool at_commit = false;
    {
      ReaderMutexLock lock(&resize_mu_);
      MDB_txn* txn = nullptr;
      rc = mdb_txn_begin(env_->env, nullptr, 0, &txn);
      if (rc == 0) {
        rc = body(txn);
        if (rc != 0) {
          mdb_txn_abort(txn);
        } else {
          rc = mdb_txn_commit(txn);  // frees txn, also on failure
          at_commit = true;
        }
      }
      const uint32_t every = options_.release_mapped_every;
      if (rc == 0 && every > 0 && ++commits_since_release_ >= every) {
        commits_since_release_ = 0;
        ReleaseMappedPagesLocked();
      }
    }
    if (rc == 0) return Status::Ok();
    // MDB_MAP_FULL can come from a put or from the commit itself (saving the
    // free list needs pages too); either way the txn is gone and the whole
    // body is replayed in a bigger map. Dead readers pin pages: clear them.
    if (rc == MDB_MAP_FULL) {
      if (at_commit) ++map_full_at_commit_;
      (void)ClearStaleReaders();
      APOLLO11_RETURN_IF_ERROR(GrowMap());
      continue;
    }
    if (rc == MDB_MAP_RESIZED && attempt < 8) {
      APOLLO11_RETURN_IF_ERROR(AdoptMapSize());
      continue;
    }
    return Error(rc, what);
  }
}

int Journal::WriteRun(MDB_txn* txn, const RunRecord& r, bool create) {
  const Env& e = *env_;
  MDB_val k = Val(r.run_id), old;
  int rc = 0;
  if (create) {
    // A new run never replaces a stored one, whatever its id.
    const std::string value = codec::EncodeRun(r);
    MDB_val v = Val(value);
    if ((rc = mdb_put(txn, e.runs, &k, &v, MDB_NOOVERWRITE)) != 0) return rc;
  } else {
    rc = mdb_get(txn, e.runs, &k, &old);
    if (rc == 0) {
      Result<RunRecord> previous = codec::DecodeRun(r.run_id, View(old));
      if (previous.ok() && previous->created_at != r.created_at) {
        std::string old_time;
        old_time = codec::EncodeSeqKey(static_cast<uint64_t>(previous->created_at)) + r.run_id;
        MDB_val tk = Val(old_time);
        rc = mdb_del(txn, e.runs_by_time, &tk, nullptr);
        if (rc != 0 && rc != MDB_NOTFOUND) return rc;
      }
    } else if (rc != MDB_NOTFOUND) {
      return rc;
    }
    const std::string value = codec::EncodeRun(r);
    MDB_val v = Val(value);
    if ((rc = mdb_put(txn, e.runs, &k, &v, 0)) != 0) return rc;
  }
  const std::string time_key = codec::EncodeSeqKey(static_cast<uint64_t>(r.created_at)) + r.run_id;
  MDB_val tk = Val(time_key), empty = Val("");
  if ((rc = mdb_put(txn, e.runs_by_time, &tk, &empty, 0)) != 0) return rc;
  if (IsFinal(r.status)) {
    rc = mdb_del(txn, e.active_runs, &k, nullptr);
    if (rc != 0 && rc != MDB_NOTFOUND) return rc;
  } else if ((rc = mdb_put(txn, e.active_runs, &k, &empty, 0)) != 0) {
    return rc;
  }
  return 0;
}

int Journal::WriteBatch(MDB_txn* txn, const Batch& batch, uint64_t first_seq,
                        std::string* refused_run) {
  const Env& e = *env_;
  int rc = 0;
  uint64_t seq = first_seq;
  for (const TransitionRecord& t : batch.transition_records()) {
    const std::string key = codec::EncodeSeqKey(seq++);
    const std::string value = codec::EncodeTransition(t);
    MDB_val k = Val(key), v = Val(value);
    if ((rc = mdb_put(txn, e.transitions, &k, &v, MDB_APPEND)) != 0) return rc;
    MDB_val run = Val(t.run_id), seq_val = Val(key);
    if ((rc = mdb_put(txn, e.run_index, &run, &seq_val, MDB_APPENDDUP)) != 0) return rc;
  }
  if ((rc = WriteExecutions(txn, batch, first_seq)) != 0) return rc;
  for (const RunRecord& r : batch.created_run_records()) {
    if ((rc = WriteRun(txn, r, /*create=*/true)) != 0) {
      if (rc == MDB_KEYEXIST) *refused_run = r.run_id;
      return rc;
    }
  }
  if (!batch.created_run_records().empty()) {
    MDB_val mk = Val(kLastRunIdKey), mv = Val(batch.created_run_records().back().run_id);
    if ((rc = mdb_put(txn, e.meta, &mk, &mv, 0)) != 0) return rc;
  }
  for (const RunRecord& r : batch.run_records()) {
    if ((rc = WriteRun(txn, r, /*create=*/false)) != 0) return rc;
  }
  for (const auto& [hash, json] : batch.pipeline_snapshots()) {
    MDB_val k = Val(hash), v = Val(json);
    rc = mdb_put(txn, e.pipelines, &k, &v, MDB_NOOVERWRITE);
    if (rc != 0 && rc != MDB_KEYEXIST) return rc;
  }
  for (const ScheduleRecord& r : batch.schedule_records()) {
    MDB_val k = Val(r.pipeline);
    if (r.snapshot.empty()) {  // a removal
      rc = mdb_del(txn, e.schedules, &k, nullptr);
      if (rc != 0 && rc != MDB_NOTFOUND) return rc;
      continue;
    }
    const std::string value = EncodeSchedule(r);
    MDB_val v = Val(value);
    if ((rc = mdb_put(txn, e.schedules, &k, &v, 0)) != 0) return rc;
  }
  for (const FireRecord& r : batch.fire_records()) {
    const std::string key = FireKey(r.pipeline, r.scheduled_at), value = EncodeFire(r);
    MDB_val k = Val(key), v = Val(value);
    if ((rc = mdb_put(txn, e.fires, &k, &v, 0)) != 0) return rc;
  }
  for (const auto& [stats_key, duration] : batch.duration_samples()) {
    MDB_val k = Val(stats_key), old;
    std::vector<Micros> kept;
    rc = mdb_get(txn, e.stats, &k, &old);
    if (rc == 0) {
      kept = DecodeDurations(View(old));
    } else if (rc != MDB_NOTFOUND) {
      return rc;
    }
    kept.push_back(duration);
    size_t skip = kept.size() > kDurationsKept ? kept.size() - kDurationsKept : 0;
    std::string value;
    for (size_t i = skip; i < kept.size(); ++i) PutU64(value, static_cast<uint64_t>(kept[i]));
    MDB_val v = Val(value);
    if ((rc = mdb_put(txn, e.stats, &k, &v, 0)) != 0) return rc;
  }
  return WriteRegistry(txn, batch);
}

Status Journal::Commit(Batch& batch) {
  if (batch.empty()) return Status::Ok();
  const uint64_t batch_no = last_batch_.load() + 1, first_seq = last_seq_.load() + 1;
  APOLLO11_RETURN_IF_ERROR(WriteNumbered(batch_no, first_seq, epoch_.load(), batch));
  if (observer_ != nullptr) observer_->OnCommitted(batch_no, first_seq, batch);
  batch.Clear();
  return Status::Ok();
}

Status Journal::WriteNumbered(uint64_t batch_no, uint64_t first_seq, uint64_t epoch, Batch& batch) {
  std::string refused_run;
  if (batch.audits() > kMaxAuditPerBatch) {
    return Status::InvalidInput("journal " + dir_ + ": a batch with " +
                                std::to_string(batch.audits()) +
                                " audit records, above 65535; nothing was written");
  }
  // The batch count and the epoch the batch was committed in (journals
  // written before replication stored the count alone: epoch 0).
  const std::string batch_value = codec::EncodeSeqKey(batch_no) + codec::EncodeSeqKey(epoch);
  Status written = RunWrite("commit a batch", [&](MDB_txn* txn) {
    int rc = WriteBatch(txn, batch, first_seq, &refused_run);
    if (rc == 0) rc = WriteAudit(txn, batch, batch_no);
    if (rc != 0) return rc;
    MDB_val k = Val(kBatchCountKey), v = Val(batch_value);
    return mdb_put(txn, env_->meta, &k, &v, 0);
  });
  if (!written.ok() && !refused_run.empty()) {
    return Status::InvalidInput("journal " + dir_ + ": a new run " + refused_run +
                                " was refused: a run with that id is stored already and its record "
                                "is never overwritten; nothing was written");
  }
  APOLLO11_RETURN_IF_ERROR(written);
  last_seq_ = first_seq + batch.transitions() - 1;
  last_batch_ = batch_no;
  batch_epoch_ = epoch;
  return Status::Ok();
}

Result<uint64_t> Journal::ReadLastSeq() const {
  ReadTxn txn(*this);
  APOLLO11_RETURN_IF_ERROR(txn.Begin());
  Cursor cursor;
  int rc = cursor.Open(txn.get(), env_->transitions);
  if (rc != 0) return Error(rc, "open a cursor");
  MDB_val k, v;
  rc = cursor.Get(&k, &v, MDB_LAST);
  uint64_t last = 0;
  if (rc == 0) {
    last = codec::DecodeSeqKey(View(k));
  } else if (rc != MDB_NOTFOUND) {
    return Error(rc, "find the last transition");
  }
  auto floor = txn.Find(env_->meta, kSeqFloorKey);
  if (!floor.ok()) return floor.status();
  if (floor->has_value() && (*floor)->size() == 8) {
    last = std::max(last, codec::DecodeSeqKey(**floor));
  }
  return last;
}

uint64_t Journal::last_seq() const {
  if (options_.read_only) {
    Result<uint64_t> seq = ReadLastSeq();
    if (seq.ok()) return *seq;
  }
  return last_seq_.load();
}

Result<std::optional<Micros>> Journal::DurationP50(const std::string& stats_key) {
  ReadTxn txn(*this);
  APOLLO11_RETURN_IF_ERROR(txn.Begin());
  auto found = txn.Find(env_->stats, stats_key);
  if (!found.ok()) return found.status();
  if (!found->has_value()) return std::optional<Micros>();
  std::vector<Micros> d = DecodeDurations(**found);
  if (d.empty()) return std::optional<Micros>();
  std::sort(d.begin(), d.end());
  size_t n = d.size();
  Micros p50 = n % 2 == 1 ? d[n / 2] : d[n / 2 - 1] + (d[n / 2] - d[n / 2 - 1]) / 2;
  return std::optional<Micros>(p50);
}

Result<uint64_t> Journal::BumpEpoch() {
  MutexLock term(&term_mu_);
  uint64_t epoch = 0;
  APOLLO11_RETURN_IF_ERROR(RunWrite("bump the epoch", [&](MDB_txn* txn) {
    MDB_val k = Val(kEpochKey), v;
    int rc = mdb_get(txn, env_->meta, &k, &v);
    if (rc != 0 && rc != MDB_NOTFOUND) return rc;
    epoch = (rc == 0 && v.mv_size == 8 ? GetU64(View(v)) : 0) + 1;
    std::string value;
    PutU64(value, epoch);
    MDB_val nv = Val(value);
    return mdb_put(txn, env_->meta, &k, &nv, 0);
  }));
  epoch_ = epoch;
  return epoch;
}

Result<uint64_t> Journal::BeginTerm(uint64_t epoch) {
  MutexLock term(&term_mu_);
  uint64_t stored = 0;
  APOLLO11_RETURN_IF_ERROR(RunWrite("journal the term", [&](MDB_txn* txn) {
    MDB_val k = Val(kEpochKey), v;
    int rc = mdb_get(txn, env_->meta, &k, &v);
    if (rc != 0 && rc != MDB_NOTFOUND) return rc;
    stored = rc == 0 && v.mv_size == 8 ? GetU64(View(v)) : 0;
    if (epoch <= stored) return 0;
    std::string value;
    PutU64(value, epoch);
    MDB_val nv = Val(value);
    return mdb_put(txn, env_->meta, &k, &nv, 0);
  }));
  if (epoch <= stored) return TermNotAbove(epoch, stored);
  epoch_ = epoch;
  return epoch;
}

Result<uint64_t> Journal::Epoch() {
  // This process is the only writer of a writable journal: epoch_ follows
  // every change (open, BumpEpoch, BeginTerm, InstallCopy). A read-only one
  // may be behind its writer, so it reads.
  if (!options_.read_only) return epoch_.load();
  return ReadEpoch();
}

Result<uint64_t> Journal::ReadEpoch() const {
  ReadTxn txn(*this);
  APOLLO11_RETURN_IF_ERROR(txn.Begin());
  auto found = txn.Find(env_->meta, kEpochKey);
  if (!found.ok()) return found.status();
  if (!found->has_value() || (*found)->size() != 8) return uint64_t{0};
  return GetU64(**found);
}

}  // namespace apollo11::storage
