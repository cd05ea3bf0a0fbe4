#pragma once
// EtcdPort over etcd v3's JSON gateway (etcd 3.4: POST /v3/lease/grant,
// /v3/lease/keepalive, /v3/lease/revoke, /v3/election/campaign|leader|resign,
// /v3/kv/range, /v3/kv/txn)
// with libcurl. Fails over among the endpoints: a call that cannot reach the
// current endpoint (refused, reset, timed out) tries the next ones before it
// fails, and the one that answered becomes current.
//
// Threads: one thread at a time (the elector's).

#include <string>
#include <vector>

#include "ha/etcd_port.h"

namespace apollo11::ha {

struct EtcdClientOptions {
  std::vector<std::string> endpoints;  // http://host:port, at least one
  Millis connect_timeout{500};         // per endpoint
  Millis request_timeout{1500};  // per call, all endpoints tried included (campaign: its wait)
};

class EtcdClient final : public EtcdPort {
 public:
  explicit EtcdClient(EtcdClientOptions options);

  Result<EtcdLease> GrantLease(int64_t ttl_s) override;
  Result<EtcdLease> KeepAlive(int64_t lease) override;
  Status Revoke(int64_t lease) override;
  Result<EtcdLeaderKey> Campaign(std::string_view election, int64_t lease, std::string_view value,
                                 Millis wait) override;
  Result<std::optional<EtcdLeader>> Leader(std::string_view election) override;
  Status Resign(const EtcdLeaderKey& leader) override;
  Result<std::optional<std::string>> Get(std::string_view key) override;
  Result<bool> DeleteIfCreated(std::string_view key, uint64_t rev) override;
  Result<bool> PutIfLeader(const EtcdLeaderKey& leader, std::string_view key,
                           std::string_view value) override;

  // The endpoint the next call tries first.
  const std::string& current() const { return options_.endpoints[current_]; }

 private:
  // The body etcd answered with (any HTTP status: its errors are JSON) from
  // the first endpoint that answers. kIo naming every endpoint's failure when
  // none did; with `wait_is_answer`, a timeout after connecting is kBusy.
  Result<std::string> Post(const std::string& path, const std::string& body, Millis timeout,
                           bool wait_is_answer = false);

  EtcdClientOptions options_;
  size_t current_ = 0;
};

}  // namespace apollo11::ha
