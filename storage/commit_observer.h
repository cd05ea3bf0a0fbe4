#pragma once
// Sees every batch a Journal commits for its scheduler (not the ones it
// applies from a leader): the hook journal replication ships batches from.

#include <cstdint>

#include "storage/run_batch.h"

namespace apollo11::storage {

class CommitObserver {
 public:
  virtual ~CommitObserver() = default;
  // Batch `batch_no`, whose transitions got seqs from `first_seq`, is
  // durable. Called on the writer thread before Commit returns (and clears
  // the batch), so whatever the caller releases after Commit waits for it:
  // it may block (sync replication waits for a standby here).
  virtual void OnCommitted(uint64_t batch_no, uint64_t first_seq, const RunBatch& batch) = 0;
};

}  // namespace apollo11::storage
