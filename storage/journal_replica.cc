// The journal's replication side: applying a leader's batch with its
// numbering, the batch counter, and a consistent copy for a new standby.

#include <fcntl.h>
#include <lmdb.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>

#include "storage/journal.h"
#include "storage/journal_internal.h"
#include "storage/record_codec.h"

namespace apollo11::storage {

Status Journal::ApplyReplicated(uint64_t batch_no, uint64_t first_seq, uint64_t epoch,
                                Batch& batch) {
  if (options_.read_only) {
    return Status::Unsupported("journal " + dir_ + " is open read-only");
  }
  if (batch.empty()) return Status::InvalidInput("an empty replicated batch");
  const uint64_t batches = last_batch_.load(), seq = last_seq_.load();
  if (batch_no != batches + 1 || first_seq != seq + 1) {
    return Status::InvalidInput("journal " + dir_ + ": replicated batch " +
                                std::to_string(batch_no) + " at seq " + std::to_string(first_seq) +
                                " does not follow batch " + std::to_string(batches) + " at seq " +
                                std::to_string(seq) + "; nothing was written");
  }
  APOLLO11_RETURN_IF_ERROR(WriteNumbered(batch_no, first_seq, epoch, batch));
  batch.Clear();
  return Status::Ok();
}

Result<std::pair<uint64_t, uint64_t>> Journal::ReadBatchCount() const {
  ReadTxn txn(*this);
  APOLLO11_RETURN_IF_ERROR(txn.Begin());
  auto found = txn.Find(env_->meta, kBatchCountKey);
  if (!found.ok()) return found.status();
  if (!found->has_value()) return std::pair<uint64_t, uint64_t>{0, 0};
  const std::string_view value = **found;
  if (value.size() != 8 && value.size() != 16) {
    return Status::Corrupt("journal " + dir_ + ": the batch count has " +
                           std::to_string(value.size()) + " bytes, not 8 or 16");
  }
  const uint64_t epoch = value.size() == 16 ? codec::DecodeSeqKey(value.substr(8)) : 0;
  return std::pair<uint64_t, uint64_t>{codec::DecodeSeqKey(value.substr(0, 8)), epoch};
}

Result<Journal::CopyPosition> Journal::CopyTo(const std::string& dir) const {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::Io("create " + dir + ": " + ec.message());
  {
    ReaderMutexLock lock(&resize_mu_);
    int rc = mdb_env_copy2(env_->env, dir.c_str(), MDB_CP_COMPACT);
    if (rc != 0) return Error(rc, "copy the journal to " + dir);
  }
  JournalOptions options;
  options.read_only = true;
  auto copy = Journal::Open(dir, options);
  if (!copy.ok()) return copy.status();
  return CopyPosition{(*copy)->last_batch(), (*copy)->last_seq(), (*copy)->last_batch_epoch()};
}

Status Journal::InstallCopy(const std::string& data_file) {
  if (options_.read_only) {
    return Status::Unsupported("journal " + dir_ + " is open read-only");
  }
  const std::string copy_dir = std::filesystem::path(data_file).parent_path().string();
  MutexLock term(&term_mu_);  // no BeginTerm or BumpEpoch meanwhile
  const uint64_t own_epoch = epoch_.load();
  {
    JournalOptions check;
    check.read_only = true;
    auto opened = Journal::Open(copy_dir, check);
    if (!opened.ok()) return opened.status();
  }
  {
    WriterMutexLock lock(&resize_mu_);  // no transaction of this process is open
    env_ = std::make_unique<Env>();     // closes the old environment
    const std::string target = dir_ + "/data.mdb";
    if (::rename(data_file.c_str(), target.c_str()) != 0) {
      Status failed =
          Status::Io("journal " + dir_ + ": install " + data_file + ": " + std::strerror(errno));
      Status reopened = OpenHandles();
      if (!reopened.ok()) return reopened;
      lock.Unlock();
      (void)ReadPositions();
      return failed;
    }
    const int fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
      ::fsync(fd);
      ::close(fd);
    }
    APOLLO11_RETURN_IF_ERROR(OpenHandles());
  }
  APOLLO11_RETURN_IF_ERROR(ReadPositions());
  if (epoch_.load() >= own_epoch) return Status::Ok();
  // The copy comes from an older term than one this journal began: keep ours.
  std::string value;
  PutU64(value, own_epoch);
  APOLLO11_RETURN_IF_ERROR(RunWrite("keep the term's epoch", [&](MDB_txn* txn) {
    MDB_val k = Val(kEpochKey), v = Val(value);
    return mdb_put(txn, env_->meta, &k, &v, 0);
  }));
  epoch_ = own_epoch;
  return Status::Ok();
}

}  // namespace apollo11::storage
