// The journal's replication side: applying a leader's batch with its
// numbering, the batch counter, and a consistent copy for a new standby.

#include <lmdb.h>

#include <filesystem>
#include <string>

#include "storage/journal.h"
#include "storage/journal_internal.h"
#include "storage/record_codec.h"

namespace apollo11::storage {

Status Journal::ApplyReplicated(uint64_t batch_no, uint64_t first_seq, Batch& batch) {
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
  return WriteNumbered(batch_no, first_seq, batch);
}

Result<uint64_t> Journal::ReadBatchCount() const {
  ReadTxn txn(*this);
  APOLLO11_RETURN_IF_ERROR(txn.Begin());
  auto found = txn.Find(env_->meta, kBatchCountKey);
  if (!found.ok()) return found.status();
  if (!found->has_value() || (*found)->size() != 8) return uint64_t{0};
  return codec::DecodeSeqKey(**found);
}

Result<Journal::CopyPosition> Journal::CopyTo(const std::string& dir) const {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::Io("create " + dir + ": " + ec.message());
  {
    std::shared_lock lock(resize_mu_);
    int rc = mdb_env_copy2(env_->env, dir.c_str(), MDB_CP_COMPACT);
    if (rc != 0) return Error(rc, "copy the journal to " + dir);
  }
  JournalOptions options;
  options.read_only = true;
  auto copy = Journal::Open(dir, options);
  if (!copy.ok()) return copy.status();
  return CopyPosition{(*copy)->last_batch(), (*copy)->last_seq()};
}

}  // namespace apollo11::storage
