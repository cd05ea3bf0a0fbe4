#pragma once
// Which standbys a sync leader waits for before it releases a batch, and
// which of them may lead after it: the decisions of sync replication, as
// plain logic. The ReplicationLeader shell (threads, a condition variable,
// the etcd write) and the simulator (tests/sim) both drive this class.
//
// Terms:
//   waited    standbys every batch waits for: they stream close behind and
//             were heard within the timeout. A standby joins at the last
//             batch handed over when it was admitted (its joining batch).
//   in sync   waited standbys that acknowledged their joining batch, and so
//             hold every batch released since: they may lead next. The
//             leader records this set (with itself) where standbys read it
//             before they campaign (ha/in_sync.h).
//   dropped   standbys that missed a batch's timeout this term; one joins
//             again only close behind (kJoinLag), or a slow standby would
//             stall every commit.
//
// The release rule for batch B: release when every waited standby has
// acknowledged B (or none is waited). When the wait for B runs out, the
// late ones are dropped (DropLate), and B is released only once the record
// no longer names them (RecordedVersion() >= the version DropLate left): a
// standby that lacks B must not be able to take over.
//
// Not thread-safe: the shell guards it with its mutex.

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "replication/replication_leader_core.h"

namespace apollo11::replication {

class InSyncSet {
 public:
  // How far behind the last batch handed over a dropped standby may be when
  // it is waited for again: its catch-up then costs a commit a few round
  // trips, not another timeout.
  static constexpr uint64_t kJoinLag = 64;

  // `self`: this leader's name (always in the recorded set). `timeout`: a
  // standby not heard within it is not admitted. `handed_over`: the last
  // batch of the journal when the term starts. A term starts with no
  // standby in sync (the elector recorded this leader alone).
  InSyncSet(std::string self, Micros timeout, uint64_t handed_over);

  // Batch `batch_no` was committed and handed to the replication actor.
  void OnHandedOver(uint64_t batch_no) { handed_over_ = batch_no; }
  // The standbys as the leader core sees them at Steady() `now`: records
  // their acknowledgements, admits those that stream close behind into the
  // waited set, and counts in sync the waited ones that acknowledged their
  // joining batch. Returns the names that became in sync.
  std::vector<std::string> Observe(const std::map<std::string, StandbyView>& standbys, Micros now);

  // True when every waited standby acknowledged `batch_no` (or none is
  // waited): the batch may be released.
  bool Acknowledged(uint64_t batch_no) const;
  // The wait for `batch_no` ran out: the waited standbys that have not
  // acknowledged it leave the waited and in-sync sets. Returns their names.
  std::vector<std::string> DropLate(uint64_t batch_no);

  // The set to record: the in-sync standbys and this leader.
  std::set<std::string> RecordedMembers() const;
  // Bumped on every change of the in-sync set; the shell records the set
  // when version() != RecordedVersion() and then calls Recorded(version).
  uint64_t version() const { return version_; }
  uint64_t RecordedVersion() const { return recorded_version_; }
  void Recorded(uint64_t version) { recorded_version_ = std::max(recorded_version_, version); }

  const std::set<std::string>& in_sync() const { return in_sync_; }
  // No standby is in sync: a sync leader releases at the local commit.
  bool lagging() const { return in_sync_.empty(); }
  uint64_t handed_over() const { return handed_over_; }

 private:
  uint64_t AckedBy(const std::string& name) const;

  std::string self_;
  Micros timeout_;
  uint64_t handed_over_;
  std::map<std::string, uint64_t> waited_;  // name -> its joining batch
  std::set<std::string> in_sync_;
  std::set<std::string> dropped_;
  std::map<std::string, uint64_t> acked_;  // name -> durable batch
  uint64_t version_ = 0, recorded_version_ = 0;
};

}  // namespace apollo11::replication
