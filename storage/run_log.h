#pragma once
// The writer's side of the scheduler's durable state (one part of RunStore,
// storage/run_store.h): commits, replicated batches, and the epoch. The
// scheduler commits through it; a standby applies its leader's batches
// through it (replication/). Writer thread only, unless a method says
// otherwise.
//
// HA replication hooks in at Commit: each successful Commit is one batch,
// applied atomically, with its transitions numbered in seq order; shipping
// the batches in Commit order reproduces the store on a replica.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "storage/run_batch.h"

namespace apollo11::storage {

class RunLog {
 public:
  virtual ~RunLog() = default;

  // Commits `batch` atomically, assigning gap-free increasing seq numbers to
  // its transitions, and clears it on success. On failure nothing is applied,
  // no seq is consumed, and `batch` is left as it was so it can be committed
  // again: Full (disk full; retry when space returns), InvalidInput (a key
  // the store cannot hold), Io. Writer thread only.
  virtual Status Commit(RunBatch& batch) = 0;
  // The seq of the last committed transition (0 when none).
  virtual uint64_t last_seq() const = 0;

  // Replication. The number of non-empty batches committed or applied so far
  // (0 on a fresh store): the replication position, which unlike last_seq
  // also advances for a batch without transitions.
  virtual uint64_t last_batch() const = 0;
  // The epoch in which the last batch was committed (by this store's
  // Commit: the current Epoch(); by ApplyReplicated: the leader's), 0 when
  // none. Two stores holding the same last_batch() with the same
  // last_batch_epoch() hold the same batches: a leader numbers each batch
  // once per term, so a standby that diverged (it led in an older term and
  // committed batches no one received) differs here even where the numbers
  // match.
  virtual uint64_t last_batch_epoch() const = 0;
  // Applies batch number `batch_no` that a leader committed in `epoch` with
  // its transitions numbered from `first_seq`: atomically, with those same
  // seq numbers (so the store equals the leader's), and clears `batch` on
  // success. Refused with InvalidInput, nothing applied, unless batch_no ==
  // last_batch() + 1 and first_seq == last_seq() + 1 (a gap, a replay or a
  // store that diverged); other errors as Commit. Writer thread only; a store
  // that applies replicated batches is not committed to by a scheduler.
  virtual Status ApplyReplicated(uint64_t batch_no, uint64_t first_seq, uint64_t epoch,
                                 RunBatch& batch) = 0;

  // Increments and durably stores the coordinator epoch, returning the new
  // value (1 on a fresh store). Writer thread only.
  virtual Result<uint64_t> BumpEpoch() = 0;
  // The current epoch (0 before the first BumpEpoch).
  virtual Result<uint64_t> Epoch() = 0;
  // election: journals an HA term: stores `epoch` (an etcd create_revision)
  // as the coordinator epoch when it is above the stored one and returns it;
  // InvalidInput ("epoch N is not above the journal's epoch M") and no
  // change otherwise, so a term never reuses or goes below an earlier
  // epoch. Writer thread only (or with the writer idle).
  virtual Result<uint64_t> BeginTerm(uint64_t epoch) = 0;
};

// BeginTerm's refusal of an epoch that is not above the stored one.
inline Status TermNotAbove(uint64_t epoch, uint64_t stored) {
  return Status::InvalidInput("epoch " + std::to_string(epoch) +
                              " is not above the journal's epoch " + std::to_string(stored));
}

}  // namespace apollo11::storage
