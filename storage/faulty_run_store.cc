#include "storage/faulty_run_store.h"

#include <utility>

namespace apollo11::storage {

void FaultyRunStore::FailCommits(Status error) {
  error_ = std::move(error);
  failures_left_ = -1;
}

void FaultyRunStore::FailNextCommits(int n, Status error) {
  error_ = std::move(error);
  failures_left_ = n > 0 ? n : 0;
}

void FaultyRunStore::Heal() { failures_left_ = 0; }

Status FaultyRunStore::Commit(RunBatch& batch) {
  if (failures_left_ == 0 || batch.empty()) return base_->Commit(batch);
  if (failures_left_ > 0) --failures_left_;
  ++failed_commits_;
  return error_;
}

Status FaultyRunStore::ApplyReplicated(uint64_t batch_no, uint64_t first_seq, uint64_t epoch,
                                       RunBatch& batch) {
  if (failures_left_ == 0 || batch.empty())
    return base_->ApplyReplicated(batch_no, first_seq, epoch, batch);
  if (failures_left_ > 0) --failures_left_;
  ++failed_commits_;
  return error_;
}

}  // namespace apollo11::storage
