#pragma once
// The standby's LMDB journal for replication: applies to the Journal it owns,
// and installs a copy from the leader by writing it beside the journal
// (DIR.copy/data.mdb), checking it opens as a journal, then renaming it over
// DIR/data.mdb (atomic) and reopening. A crash part-way leaves either the old
// journal or the new one, whole. One thread (the standby's replication actor).

#include <cstdio>
#include <memory>
#include <string>

#include "replication/replica_store.h"
#include "storage/journal.h"

namespace apollo11::replication {

class JournalReplicaStore final : public ReplicaStore {
 public:
  // `dir` is the journal's directory; `journal` is open on it (may be null:
  // the next installed copy opens it).
  JournalReplicaStore(std::string dir, std::unique_ptr<storage::Journal> journal);
  ~JournalReplicaStore() override;

  storage::RunStore* store() override { return journal_.get(); }
  Status BeginCopy(uint64_t size) override;
  Status AppendCopy(std::string_view bytes) override;
  Status InstallCopy() override;
  // Hands the journal over (on promotion); the store is empty afterwards.
  std::unique_ptr<storage::Journal> Release() { return std::move(journal_); }

 private:
  std::string CopyDir() const { return dir_ + ".copy"; }

  const std::string dir_;
  std::unique_ptr<storage::Journal> journal_;
  std::FILE* copy_ = nullptr;
};

}  // namespace apollo11::replication
