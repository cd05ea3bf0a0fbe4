#pragma once
// The standby's LMDB journal for replication: applies to a Journal it does
// not own, and installs a copy from the leader by writing it beside the
// journal (DIR.copy/data.mdb) and handing it to Journal::InstallCopy (checked,
// renamed over DIR/data.mdb, reopened in place: other threads' pointers to
// the journal stay valid). A crash part-way leaves the old journal or the new
// one, whole. One thread (the standby's replication actor).

#include <cstdio>
#include <string>

#include "replication/replica_store.h"
#include "storage/journal.h"

namespace apollo11::replication {

class JournalReplicaStore final : public ReplicaStore {
 public:
  // `journal` must outlive this object.
  explicit JournalReplicaStore(storage::Journal* journal) : journal_(journal) {}
  ~JournalReplicaStore() override;
  JournalReplicaStore(const JournalReplicaStore&) = delete;
  JournalReplicaStore& operator=(const JournalReplicaStore&) = delete;

  storage::RunLog* store() override { return usable_ ? journal_ : nullptr; }
  Status BeginCopy(uint64_t size) override;
  Status AppendCopy(std::string_view bytes) override;
  Status InstallCopy() override;

 private:
  std::string CopyDir() const { return journal_->dir() + ".copy"; }

  storage::Journal* journal_;
  bool usable_ = true;  // false after an install failed past the swap
  std::FILE* copy_ = nullptr;
};

}  // namespace apollo11::replication
