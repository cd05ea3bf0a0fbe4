#pragma once
// The etcd of the cluster simulator (tests/sim/cluster_sim.h): one shared
// in-memory etcd (ha::testing::FakeEtcd: leases that expire on the fake
// clock, election keys ordered by create revision, plain keys) seen by each
// coordinator through its own port, which a test can cut off (a partition
// of that coordinator's etcd traffic).
//
// Blocking calls, without threads. etcd's campaign returns only when the
// caller leads or its wait ends; campaigners wait in line, and when the
// leader's key goes, the head of the line wins. Here a campaign that is not
// first returns kBusy at once, and the port remembers that its caller would
// still be inside the call: until `wait` passed, or until nobody leads and
// it is the head of the line (SimEtcd::line). The simulator steps an
// elector only when its port is not Blocked, so a campaigner in line sees
// no new leader elected ahead of it until its wait ends, as in etcd.

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "common/clock.h"
#include "ha/etcd_port.h"
#include "tests/ha/fake_etcd.h"

namespace apollo11::sim {

class SimEtcdPort;

// The cluster's etcd: its state and the campaigners waiting in line.
struct SimEtcd {
  explicit SimEtcd(const FakeClock* clock) : fake(clock) {}
  ha::testing::FakeEtcd fake;
  std::vector<SimEtcdPort*> line;  // oldest first
};

class SimEtcdPort final : public ha::EtcdPort {
 public:
  SimEtcdPort(SimEtcd* etcd, const Clock* clock) : etcd_(etcd), clock_(clock) {}
  ~SimEtcdPort() override { LeaveLine(); }

  // True: every call fails as an unreachable etcd would.
  bool cut = false;

  Result<ha::EtcdLease> GrantLease(int64_t ttl_s) override {
    if (cut) return Unreachable();
    return etcd_->fake.GrantLease(ttl_s);
  }
  Result<ha::EtcdLease> KeepAlive(int64_t lease) override {
    if (cut) return Unreachable();
    return etcd_->fake.KeepAlive(lease);
  }
  Status Revoke(int64_t lease) override {
    if (cut) return Unreachable();
    return etcd_->fake.Revoke(lease);
  }
  Result<ha::EtcdLeaderKey> Campaign(std::string_view election, int64_t lease,
                                     std::string_view value, Millis wait) override {
    if (cut) return Unreachable();
    auto won = etcd_->fake.Campaign(election, lease, value, wait);
    if (won.ok() || won.status().code() != StatusCode::kBusy) {
      LeaveLine();
      return won;
    }
    lease_ = lease;
    blocked_until_ = clock_->Steady() + wait.count() * kMicrosPerMilli;
    if (std::find(etcd_->line.begin(), etcd_->line.end(), this) == etcd_->line.end()) {
      etcd_->line.push_back(this);
    }
    return won;
  }
  Result<std::optional<ha::EtcdLeader>> Leader(std::string_view election) override {
    if (cut) return Unreachable();
    return etcd_->fake.Leader(election);
  }
  Status Resign(const ha::EtcdLeaderKey& leader) override {
    if (cut) return Unreachable();
    return etcd_->fake.Resign(leader);
  }
  Result<std::optional<std::string>> Get(std::string_view key) override {
    if (cut) return Unreachable();
    return etcd_->fake.Get(key);
  }
  Result<bool> PutIfLeader(const ha::EtcdLeaderKey& leader, std::string_view key,
                           std::string_view value) override {
    if (cut) return Unreachable();
    return etcd_->fake.PutIfLeader(leader, key, value);
  }
  Result<bool> DeleteIfCreated(std::string_view key, uint64_t rev) override {
    if (cut) return Unreachable();
    return etcd_->fake.DeleteIfCreated(key, rev);
  }

  // Whether this port's caller would still be inside its last campaign at
  // Steady() `now`: its wait has not passed, and someone leads or another
  // campaigner is ahead of it in line.
  bool Blocked(std::string_view election, Micros now) {
    if (blocked_until_ == 0) return false;
    if (now >= blocked_until_) {
      blocked_until_ = 0;
      LeaveLine();
      return false;
    }
    auto leader = etcd_->fake.Leader(election);
    const bool nobody = leader.ok() && !leader->has_value();
    // Campaigners whose lease is gone (their node died) left the line.
    auto& line = etcd_->line;
    line.erase(std::remove_if(line.begin(), line.end(),
                              [&](SimEtcdPort* p) { return !etcd_->fake.LeaseAlive(p->lease_); }),
               line.end());
    if (nobody && !line.empty() && line.front() == this) blocked_until_ = 0;
    return blocked_until_ != 0;
  }
  // A new process behind this port: it is in no campaign.
  void Reset() {
    blocked_until_ = 0;
    LeaveLine();
  }
  // The node of this port is gone: it waits in no line.
  void LeaveLine() {
    auto& line = etcd_->line;
    line.erase(std::remove(line.begin(), line.end(), this), line.end());
  }

 private:
  static Status Unreachable() { return Status::Io("etcd unreachable (cut off in the simulation)"); }

  SimEtcd* etcd_;
  const Clock* clock_;
  Micros blocked_until_ = 0;
  int64_t lease_ = 0;
};

}  // namespace apollo11::sim
