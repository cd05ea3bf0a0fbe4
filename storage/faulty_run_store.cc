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
  passes_left_ = 0;
}

void FaultyRunStore::FailCommitsAfter(int n, Status error) {
  FailCommits(std::move(error));
  passes_left_ = n > 0 ? n : 0;
}

void FaultyRunStore::Heal() {
  failures_left_ = 0;
  passes_left_ = 0;
}

bool FaultyRunStore::Refuses(const RunBatch& batch) {
  if (failures_left_ == 0 || batch.empty()) return false;
  if (passes_left_ > 0) {
    --passes_left_;
    return false;
  }
  if (failures_left_ > 0) --failures_left_;
  ++failed_commits_;
  return true;
}

Status FaultyRunStore::Commit(RunBatch& batch) {
  return Refuses(batch) ? error_ : base_->Commit(batch);
}

Status FaultyRunStore::ApplyReplicated(uint64_t batch_no, uint64_t first_seq, uint64_t epoch,
                                       RunBatch& batch) {
  return Refuses(batch) ? error_ : base_->ApplyReplicated(batch_no, first_seq, epoch, batch);
}

}  // namespace apollo11::storage
