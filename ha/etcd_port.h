#pragma once
// The etcd operations the elector needs, as a port: EtcdClient speaks the v3
// JSON gateway over HTTP; tests use a scripted fake. Every call returns a
// Status or Result, never throws; a call that cannot reach etcd (all
// endpoints down, a timeout) is an kIo error, an answer that does not decode
// is kCorrupt, an error etcd reports is kIo with etcd's message.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/duration.h"
#include "common/status.h"

namespace apollo11::ha {

// The key that holds an election: whoever's key has the lowest create
// revision under the election name leads.
struct EtcdLeaderKey {
  std::string name;  // the election name (raw bytes, not base64)
  std::string key;   // raw bytes
  uint64_t rev = 0;  // the key's create_revision: the leader's epoch
  int64_t lease = 0;
  bool operator==(const EtcdLeaderKey&) const = default;
};

// The current leader as /v3/election/leader reports it.
struct EtcdLeader {
  EtcdLeaderKey key;
  std::string value;  // raw bytes: what the leader campaigned with
  bool operator==(const EtcdLeader&) const = default;
};

// A lease as granted or kept alive: `ttl_s` 0 means etcd no longer has it.
struct EtcdLease {
  int64_t id = 0;
  int64_t ttl_s = 0;
};

class EtcdPort {
 public:
  virtual ~EtcdPort() = default;
  // A new lease of `ttl_s` seconds (etcd may grant more: use the answer).
  virtual Result<EtcdLease> GrantLease(int64_t ttl_s) = 0;
  // One keepalive: the lease's TTL from now, 0 if it expired or is unknown.
  virtual Result<EtcdLease> KeepAlive(int64_t lease) = 0;
  // Drops the lease and every key attached to it (best effort on shutdown).
  virtual Status Revoke(int64_t lease) = 0;
  // Campaigns for `election` with the key attached to `lease`: returns the
  // leader key once this campaigner leads; kBusy when `wait` passed first
  // (etcd then deletes the campaign key: campaign again to stay in line).
  virtual Result<EtcdLeaderKey> Campaign(std::string_view election, int64_t lease,
                                         std::string_view value, Millis wait) = 0;
  // The current leader of `election`, nullopt when nobody leads.
  virtual Result<std::optional<EtcdLeader>> Leader(std::string_view election) = 0;
  // Gives up leadership held by `leader` (its key is deleted).
  virtual Status Resign(const EtcdLeaderKey& leader) = 0;
  // The value of `key` (a linearizable read), nullopt when it does not exist.
  virtual Result<std::optional<std::string>> Get(std::string_view key) = 0;
  // Puts `key` = `value` only while `leader`'s election key still exists with
  // its create revision (one etcd transaction): true when written, false
  // when `leader` no longer leads (a deposed leader cannot overwrite what its
  // successor wrote).
  virtual Result<bool> PutIfLeader(const EtcdLeaderKey& leader, std::string_view key,
                                   std::string_view value) = 0;
  // Deletes `key` only while it still has create revision `rev` (one etcd
  // transaction): true when deleted, false when it is gone or was recreated.
  virtual Result<bool> DeleteIfCreated(std::string_view key, uint64_t rev) = 0;
};

}  // namespace apollo11::ha
