#pragma once
// The in-sync record: which coordinators hold every journal batch whose
// effects the current leader has released. The leader writes it in etcd
// (HaElector at the start of a term, the replication actor as standbys
// catch up or fall behind) under a transaction that holds only while its
// election key lives, and a standby campaigns only while the record names
// it. So a standby that missed batches (it was down, or slow past
// --replication-timeout) cannot lead and redo what the leader already did;
// the cluster waits for a coordinator that has them instead.
//
// Stored as JSON under `<election>.insync` (beside the election's prefix,
// not under it, so etcd's election API never takes it for a campaigner):
//   {"epoch": 7, "leader": "c1", "in_sync": ["c1", "c2"]}
// No record (a cluster that never elected a replicating leader) lets every
// coordinator campaign. An operator whose leader's disk is gone for good
// may name a survivor by hand (docs/ha.md, "Runbook").

#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include "common/status.h"

namespace apollo11::ha {

struct InSyncRecord {
  uint64_t epoch = 0;             // the term of the leader that wrote it
  std::string leader;             // its name
  std::set<std::string> in_sync;  // the leader and the standbys in sync
  bool operator==(const InSyncRecord&) const = default;
};

// The key of the record for an election name.
std::string InSyncKey(std::string_view election);
std::string EncodeInSync(const InSyncRecord& record);
// kCorrupt naming what is wrong when `text` is not a record (never throws).
Result<InSyncRecord> DecodeInSync(std::string_view text);

}  // namespace apollo11::ha
