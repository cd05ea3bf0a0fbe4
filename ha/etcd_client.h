#pragma once
// EtcdPort over etcd v3's JSON gateway (etcd 3.4: POST /v3/lease/grant,
// /v3/lease/keepalive, /v3/lease/revoke, /v3/election/campaign|leader|resign,
// /v3/kv/range, /v3/kv/txn)
// with libcurl. Fails over among the endpoints: a call that cannot reach the
// current endpoint (refused, reset, timed out) tries the next ones before it
// fails, and the one that answered becomes current. With a user, every call
// carries an auth token, fetched first and again when etcd says it expired.
//
// Threads: one thread at a time (the elector's).

#include <string>
#include <vector>

#include "ha/etcd_port.h"

namespace apollo11::ha {

// How the client proves itself to etcd and checks etcd (docs/ha.md, "etcd
// access"). Every field may be empty.
struct EtcdSecurity {
  // https:// endpoints: the CA bundle that signed etcd's certificate (""
  // = the system's), and this client's certificate and key for an etcd
  // started with --client-cert-auth.
  std::string cacert, cert, key;
  // etcd's authentication: a user and its password. The token
  // /v3/auth/authenticate gives rides in every request's Authorization
  // header and is fetched again when etcd calls it invalid (expired).
  std::string user, password;
};

struct EtcdClientOptions {
  std::vector<std::string> endpoints;  // http(s)://host:port, at least one
  Millis connect_timeout{500};         // per endpoint
  Millis request_timeout{1500};  // per call, all endpoints tried included (campaign: its wait)
};

class EtcdClient final : public EtcdPort {
 public:
  explicit EtcdClient(EtcdClientOptions options, EtcdSecurity security = {});

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
  // Post with the auth token when a user is configured: authenticates first
  // when there is no token, and once more when etcd calls it invalid.
  Result<std::string> Call(const std::string& path, const std::string& body, Millis timeout,
                           bool wait_is_answer = false);
  Status Authenticate(Millis timeout);

  EtcdClientOptions options_;
  EtcdSecurity security_;
  size_t current_ = 0;
  std::string token_;  // etcd's auth token; "" = none yet (or no user)
};

}  // namespace apollo11::ha
