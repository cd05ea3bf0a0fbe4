#pragma once
// The RoleView every reader holds: the elector (or a test) publishes into it.
// Thread-safe. For tests of other parts (replication, follow) a RoleBoard
// driven by hand is the static leader/standby seam:
//   ha::RoleBoard board(&clock, {"c1", "tcp://h:7011", "tcp://h:7012"});
//   board.Publish(ha::Role::kLeader, 7, board.Current().self, kForever);

#include <atomic>
#include <map>

#include "common/clock.h"
#include "common/mutex.h"
#include "ha/role_view.h"

namespace apollo11::ha {

class RoleBoard final : public RoleView {
 public:
  // Starts as standby with no leader known. `clock` must outlive the board.
  RoleBoard(const Clock* clock, Member self);

  RoleState Current() const override;
  bool MayAct() const override;
  uint64_t Subscribe(Listener listener) override;
  void Unsubscribe(uint64_t id) override;

  // Sets role, epoch and leader; `act_until` (Clock::Steady micros) is when
  // MayAct turns false on its own while leading (ignored for standby).
  // Listeners run on the calling thread when anything but act_until changed.
  // Becoming leader counts a term won; a leader whose name differs from the
  // last leader known (an interval with no leader in between does not
  // matter) counts a failover.
  void Publish(Role role, uint64_t epoch, Member leader, Micros act_until);
  // Extends (or shortens) how long the leader may act, after a keepalive.
  void SetActUntil(Micros act_until) { act_until_.store(act_until); }
  // Leadership changes seen (apollo11_ha_failovers_total).
  uint64_t failovers() const { return failovers_.load(); }
  // Lock-free reads for metrics scrapes: the role (leader only while MayAct)
  // and the epoch last published.
  Role role() const { return MayAct() ? Role::kLeader : Role::kStandby; }
  uint64_t epoch() const { return epoch_.load(); }

 private:
  const Clock* clock_;
  // Held while listeners run: a listener unsubscribed is never called after.
  Mutex notify_mu_;
  mutable Mutex mu_ ACQUIRED_AFTER(notify_mu_);
  RoleState state_ GUARDED_BY(mu_);
  std::map<uint64_t, Listener> listeners_ GUARDED_BY(mu_);
  uint64_t next_id_ GUARDED_BY(mu_) = 1;
  std::string last_leader_ GUARDED_BY(mu_);  // the last leader known
  std::atomic<bool> leading_{false};
  std::atomic<Micros> act_until_{0};
  std::atomic<uint64_t> failovers_{0};
  std::atomic<uint64_t> epoch_{0};
};

}  // namespace apollo11::ha
