#pragma once
// The HA role state machine: campaign for the election in etcd, lead while
// the lease lives, step down by this node's own steady clock before the
// lease could have expired, resign on request. Socket-free and clock-
// injected: etcd is the EtcdPort, time the Clock, and the outcome is
// published into a RoleBoard. One Step() at a time, on one thread (the
// ElectorThread in production, the test itself in tests).
//
// Safety: a leader may act (RoleBoard::MayAct) only until
//   (send time of the last successful keepalive) + TTL - margin,
// and etcd's lease cannot expire before (its receipt of that keepalive) +
// TTL, which is later. So by the time another coordinator can win, this one
// has stopped acting, even if it was paused (SIGSTOP) and has not run since.
// Epoch: the election key's create_revision, which etcd only grows; a term
// is journaled (begin_term) before the board says leader, and a revision
// that is not above every epoch the journal used is refused: the elector
// resigns that key and campaigns again for a newer one.
// In-sync gate (ha/in_sync.h): with an in_sync_key, a standby campaigns
// only while the record names it, checks again once it has won (the old
// leader may have dropped it while it waited in line), and a winner writes
// the record naming itself alone before it leads; the replication actor
// adds standbys back as they catch up.

#include <atomic>
#include <functional>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/mutex.h"
#include "ha/etcd_port.h"
#include "ha/role_board.h"

namespace apollo11::ha {

struct ElectorOptions {
  std::string election = "apollo11/coordinators";  // the etcd election name
  int64_t lease_ttl_s = 5;                         // --ha-lease (etcd may grant more)
  // Stop acting this long before the lease could expire; 0: max(TTL / 4, 300 ms).
  Millis margin{0};
  // The in-sync record's key (ha::InSyncKey); empty: every coordinator may
  // campaign (a cluster that does not replicate its journal).
  std::string in_sync_key;
};

// What the elector tells its owner besides the board. Called on the
// elector's thread; each may be empty.
struct ElectorEvents {
  // Journal the term (RunStore::BeginTerm); an error refuses the epoch.
  std::function<Status(uint64_t epoch)> begin_term;
  // This leader stopped leading without resigning (why: lease expired,
  // keepalive failed too long, etcd dropped the lease, another leader).
  std::function<void(const std::string& why)> lease_lost;
  // A step failed to talk to etcd (rate-limit logs yourself).
  std::function<void(const Status& error)> etcd_error;
  // The in-sync gate changed its answer: `may` campaign or not, and why.
  std::function<void(bool may, const std::string& why)> eligibility;
  // The key first in line under the election is not a coordinator's (no
  // lease, or not a coordinator's record): it was ignored, and removed
  // unless `why` says otherwise. Once per key seen.
  std::function<void(const std::string& why)> foreign_key;
};

// The election value a coordinator campaigns with, and back; a value that
// does not decode gives a Member named "?" (never throws).
std::string EncodeMember(const Member& m);
Member DecodeMember(const std::string& value);
// Why `leader` cannot be a coordinator's campaign key, "" when it can be:
// every campaign key is attached to a lease (a lease-less key never expires
// and would hold the election forever) and holds EncodeMember's record with
// a name and the worker and client endpoints.
std::string ForeignKeyReason(const EtcdLeader& leader);

class HaElector {
 public:
  // `etcd`, `clock` and `board` must outlive the elector; board->Current()
  // .self is this node.
  HaElector(EtcdPort* etcd, const Clock* clock, RoleBoard* board, ElectorOptions options,
            ElectorEvents events);

  // Does what is due now (keepalive, step down, campaign once, resign) and
  // returns the Clock::Steady() time at which to call it again. May block in
  // etcd calls up to their timeouts (a campaign up to its wait).
  Micros Step();
  // Asks the leader to hand over at its next Step (no-op on a standby).
  // Any thread.
  void RequestResign() { resign_requested_.store(true); }
  // On shutdown: resigns if leading and revokes the lease (best effort).
  void Shutdown();

  bool leading() const { return leading_; }
  // Steps taken so far (apollo11_ha_elector_steps_total): each one a decision
  // made, so a test can wait for one made after an event. Any thread.
  uint64_t steps() const { return steps_.load(); }
  // Whether the in-sync gate lets this node campaign (true without a gate).
  // Any thread.
  bool eligible() const { return eligible_.load(); }
  // The election key this node leads with, if it leads. Any thread.
  std::optional<EtcdLeaderKey> HeldKey() const;
  Micros act_until() const { return act_until_; }
  int64_t lease() const { return lease_; }

 private:
  Micros LeaderStep(Micros now);
  Micros StandbyStep(Micros now);
  void Win(const EtcdLeaderKey& key);
  void StepDown(const std::string& why);
  void Resign();
  // Publishes standby with the current leader as etcd reports it (unknown on
  // an error).
  void ObserveLeader();
  // Ignores, reports and deletes a key that is not a coordinator's.
  void RemoveForeignKey(const EtcdLeaderKey& key, const std::string& why);
  Micros TtlMicros() const { return ttl_s_ * kMicrosPerSecond; }
  Micros Margin() const;
  void Error(const Status& s);
  void ForgetKey();
  // The in-sync gate: whether the record lets this node campaign (false on
  // an etcd error or an unreadable record, reported).
  bool MayCampaign();
  // Writes the record naming this node alone, as the leader of `key`.
  bool ClaimInSync(const EtcdLeaderKey& key);

  EtcdPort* etcd_;
  const Clock* clock_;
  RoleBoard* board_;
  ElectorOptions options_;
  ElectorEvents events_;
  std::string value_;  // EncodeMember(self)

  int64_t lease_ = 0;              // 0: none held
  uint64_t last_foreign_rev_ = 0;  // the foreign key last reported
  int64_t ttl_s_ = 0;              // as granted
  bool leading_ = false;
  EtcdLeaderKey key_;          // while leading
  Micros act_until_ = 0;       // while leading (steady)
  Micros next_keepalive_ = 0;  // steady
  Micros hold_until_ = 0;      // after a resign: do not campaign before (steady)
  uint64_t last_epoch_ = 0;    // the newest leader epoch seen
  std::atomic<uint64_t> steps_{0};
  std::atomic<bool> resign_requested_{false};
  std::atomic<bool> eligible_{true};
  mutable Mutex key_mu_;
  std::optional<EtcdLeaderKey> held_key_ GUARDED_BY(key_mu_);
};

}  // namespace apollo11::ha
