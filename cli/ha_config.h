#pragma once
// election: the --ha-* flags of `apollo11-node start` resolved (pure, like
// ResolveNodeConfig, whose part it is).

#include <string>
#include <vector>

#include "common/status.h"
#include "ha/etcd_client.h"
#include "ha/role_view.h"

namespace apollo11::cli {

struct NodeFlags;
class NodeEnv;

struct HaConfig {
  std::vector<std::string> etcd;  // http(s)://HOST:PORT; empty: no HA (a single coordinator)
  ha::Member self;                // --ha-name and the two --ha-advertise endpoints
  int64_t lease_ttl_s = 5;        // --ha-lease
  std::string election = "apollo11/coordinators";
  // --ha-without-replication: the operator accepted that the journal is not
  // replicated (ResolveNodeConfig refuses --ha-etcd without
  // --replication-bind otherwise).
  bool without_replication = false;
  // --ha-etcd-cacert/-cert/-key, --ha-etcd-user and the password read from
  // --ha-etcd-password-file.
  ha::EtcdSecurity security;
  bool enabled() const { return !etcd.empty(); }
};

// Splits "a,b,,c " into its non-empty, trimmed items.
std::vector<std::string> SplitList(const std::string& text);

// InvalidInput, worded for "apollo11-node: ", when: an --ha-* flag is given
// without --ha-etcd; --ha-etcd on a role other than coordinator; an etcd
// endpoint that is not http(s)://; --ha-advertise that is not two tcp://
// endpoints (it defaults to --bind,--api-bind unless either binds a
// wildcard address); --ha-lease not a duration of 1 s to 10 min; an empty
// --ha-election.
// --ha-name defaults to the host name.
Result<HaConfig> ResolveHaConfig(const NodeFlags& flags, NodeEnv& env);

}  // namespace apollo11::cli
