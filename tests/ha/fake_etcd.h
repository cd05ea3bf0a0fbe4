#pragma once
// An in-memory etcd for elector tests: leases that expire on a FakeClock,
// election keys ordered by create revision, a global revision that grows on
// every put and delete, and a switch that makes every call fail as an
// unreachable etcd would. Campaign never blocks: a campaigner that is not
// first in line gets kBusy and its key is deleted, as etcd does when a
// campaign's wait ends.

#include <cstdio>
#include <functional>
#include <map>

#include "common/clock.h"
#include "ha/etcd_port.h"

namespace apollo11::ha::testing {

class FakeEtcd final : public EtcdPort {
 public:
  explicit FakeEtcd(const FakeClock* clock) : clock_(clock) {}

  bool down = false;                          // every call fails with kIo
  uint64_t revision = 1;                      // etcd's global revision
  std::map<std::string, std::string> values;  // plain keys (Get, PutIfLeader)
  // Runs before every Get but the first (a test changes values between a
  // campaigner's two reads).
  std::function<void(std::string_view key)> get_hook;

  Result<EtcdLease> GrantLease(int64_t ttl_s) override {
    if (down) return Unreachable();
    Purge();
    const int64_t id = next_lease_++;
    leases_[id] = {ttl_s, clock_->Steady() + ttl_s * kMicrosPerSecond};
    return EtcdLease{id, ttl_s};
  }
  Result<EtcdLease> KeepAlive(int64_t lease) override {
    if (down) return Unreachable();
    Purge();
    auto it = leases_.find(lease);
    if (it == leases_.end()) return EtcdLease{lease, 0};
    it->second.expiry = clock_->Steady() + it->second.ttl * kMicrosPerSecond;
    return EtcdLease{lease, it->second.ttl};
  }
  Status Revoke(int64_t lease) override {
    if (down) return Unreachable();
    leases_.erase(lease);
    Purge();
    return Status::Ok();
  }
  Result<EtcdLeaderKey> Campaign(std::string_view election, int64_t lease, std::string_view value,
                                 Millis) override {
    if (down) return Unreachable();
    Purge();
    if (!leases_.count(lease)) return Status::Io("etcd: requested lease not found");
    char hex[32];
    std::snprintf(hex, sizeof hex, "/%llx", static_cast<unsigned long long>(lease));
    const std::string key = std::string(election) + hex;
    if (!keys_.count(key)) keys_[key] = {++revision, lease, std::string(value)};
    auto first = First(election);
    if (first->first == key) {
      return EtcdLeaderKey{std::string(election), key, first->second.rev, lease};
    }
    keys_.erase(key);
    ++revision;
    return Status::Busy("etcd: no answer within the wait");
  }
  Result<std::optional<EtcdLeader>> Leader(std::string_view election) override {
    if (down) return Unreachable();
    Purge();
    auto first = First(election);
    if (first == keys_.end()) return std::optional<EtcdLeader>();
    return std::optional<EtcdLeader>(
        EtcdLeader{{std::string(election), first->first, first->second.rev, first->second.lease},
                   first->second.value});
  }
  Status Resign(const EtcdLeaderKey& leader) override {
    if (down) return Unreachable();
    auto it = keys_.find(leader.key);
    if (it != keys_.end() && it->second.rev == leader.rev) {
      keys_.erase(it);
      ++revision;
    }
    return Status::Ok();
  }

  Result<std::optional<std::string>> Get(std::string_view key) override {
    if (down) return Unreachable();
    Purge();
    if (get_hook && ++gets_ > 1) get_hook(key);
    auto it = values.find(std::string(key));
    if (it == values.end()) return std::optional<std::string>();
    return std::optional<std::string>(it->second);
  }
  Result<bool> PutIfLeader(const EtcdLeaderKey& leader, std::string_view key,
                           std::string_view value) override {
    if (down) return Unreachable();
    Purge();
    auto it = keys_.find(leader.key);
    if (it == keys_.end() || it->second.rev != leader.rev) return false;
    values[std::string(key)] = std::string(value);
    ++revision;
    return true;
  }

  Result<bool> DeleteIfCreated(std::string_view key, uint64_t rev) override {
    if (down) return Unreachable();
    Purge();
    auto it = keys_.find(std::string(key));
    if (it == keys_.end() || it->second.rev != rev) return false;
    keys_.erase(it);
    ++revision;
    return true;
  }
  // A key put under `election` without a lease, as a peer with write access
  // to etcd could (lease 0: it never expires); its create revision.
  uint64_t Plant(std::string_view election, const std::string& suffix, std::string value) {
    keys_[std::string(election) + "/" + suffix] = {++revision, 0, std::move(value)};
    return revision;
  }
  bool Has(const std::string& key) const { return keys_.count(key) > 0; }

  bool LeaseAlive(int64_t lease) {
    Purge();
    return leases_.count(lease) > 0;
  }

 private:
  struct Lease {
    int64_t ttl;
    Micros expiry;
  };
  struct Key {
    uint64_t rev;
    int64_t lease;
    std::string value;
  };
  static Status Unreachable() { return Status::Io("etcd unreachable (fake)"); }
  void Purge() {
    for (auto it = leases_.begin(); it != leases_.end();) {
      it = clock_->Steady() >= it->second.expiry ? leases_.erase(it) : std::next(it);
    }
    for (auto it = keys_.begin(); it != keys_.end();) {
      if (it->second.lease != 0 && !leases_.count(it->second.lease)) {
        it = keys_.erase(it);
        ++revision;
      } else {
        ++it;
      }
    }
  }
  std::map<std::string, Key>::iterator First(std::string_view election) {
    auto best = keys_.end();
    const std::string prefix = std::string(election) + "/";
    for (auto it = keys_.begin(); it != keys_.end(); ++it) {
      if (it->first.rfind(prefix, 0) != 0) continue;
      if (best == keys_.end() || it->second.rev < best->second.rev) best = it;
    }
    return best;
  }

  const FakeClock* clock_;
  int gets_ = 0;
  int64_t next_lease_ = 1000;
  std::map<int64_t, Lease> leases_;
  std::map<std::string, Key> keys_;
};

}  // namespace apollo11::ha::testing
