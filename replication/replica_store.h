#pragma once
// The standby's journal as replication sees it: the store it applies batches
// to, and the place a journal copy from the leader is written and installed.
// JournalReplicaStore is the real one (LMDB); tests may use
// MemoryReplicaStore, which cannot install copies.

#include <cstdint>
#include <memory>
#include <string_view>

#include "common/status.h"
#include "storage/memory_run_store.h"
#include "storage/run_store.h"

namespace apollo11::replication {

class ReplicaStore {
 public:
  virtual ~ReplicaStore() = default;
  // The store to apply to; null while none is open (a failed install).
  virtual storage::RunLog* store() = 0;
  // Starts a copy of `size` bytes, dropping any unfinished one.
  virtual Status BeginCopy(uint64_t size) = 0;
  // Appends the next bytes of the copy.
  virtual Status AppendCopy(std::string_view bytes) = 0;
  // Makes the complete copy the journal, atomically (the old journal stays
  // whole until the copy is known good), and reopens it; store() changes.
  virtual Status InstallCopy() = 0;
};

// An in-memory store for protocol tests; copies are refused (Unsupported).
class MemoryReplicaStore final : public ReplicaStore {
 public:
  storage::RunLog* store() override { return &store_; }
  storage::MemoryRunStore& memory() { return store_; }
  Status BeginCopy(uint64_t) override { return Status::Unsupported("no copies in memory"); }
  Status AppendCopy(std::string_view) override { return Status::Unsupported("no copies"); }
  Status InstallCopy() override { return Status::Unsupported("no copies in memory"); }

 private:
  storage::MemoryRunStore store_;
};

}  // namespace apollo11::replication
