#pragma once
// `apollo11-node start`'s settings: the flags as given (NodeFlags, after a
// --config file filled the ones not on the command line), and what they
// resolve to (NodeConfig), which a Node is built from. Resolving is pure:
// files and the machine are read through a NodeEnv.

#include <optional>
#include <string>
#include <vector>

#include "actors/coordinator.h"
#include "actors/worker_actor.h"
#include "alerts/alert_config.h"
#include "cli/ha_config.h"
#include "cli/logging_setup.h"
#include "cli/node_env.h"
#include "common/duration.h"
#include "common/status.h"
#include "observability/api_tokens.h"
#include "observability/oidc.h"
#include "observability/oidc_sign_in.h"
#include "observability/otlp_http.h"
#include "observability/tls_context.h"
#include "transport/zap_handler.h"

namespace apollo11::cli {

// The flags of `apollo11-node start`, with their defaults.
struct NodeFlags {
  std::string role = "all";  // coordinator, worker or all
  std::string config;
  std::string state_dir;
  std::string bind = "tcp://127.0.0.1:7011";
  std::string api_bind = "tcp://127.0.0.1:7012";
  std::string connect = "tcp://127.0.0.1:7011";
  std::string group = "default";
  unsigned slots = 0;
  // worker: executions queued beyond its slots; -1: adaptive (actors/worker/queue_depth.h)
  int prefetch = -1;
  std::vector<std::string> labels;
  std::string heartbeat = "10s";
  std::string reconcile_interval = "30s";
  std::string retention = "off";          // coordinator: remove finished runs older than this
  std::string retention_interval = "1h";  // coordinator: how often retention runs
  std::string audit_retention = "365d";   // coordinator: remove audit records older than this
  std::string slow_min = "10s";
  int liveness = 3;
  size_t max_backlog = 1000;
  size_t max_retrying = 100;  // coordinator: retries waiting with a timer; 0 = no cap
  unsigned max_requeues = 3;
  int max_foreach_items = 10000;
  int max_active_runs = 10000;     // runs active at once in the coordinator
  int max_schedule_overlap = 100;  // runs of one `overlap: allow` schedule at once
  std::string worker_id;
  std::string drain_timeout = "5m";
  std::string containment = "auto";                   // worker: auto, cgroup or process-tree
  std::string secrets_dir = "/etc/apollo11/secrets";  // worker: file: secrets, per pipeline
  std::string log_level = "info";
  std::string log_format;  // json, text; empty: text on a terminal, else json
  std::string health_interval = "60s";
  std::string curve_key;        // this node's key pair (.key)
  std::string authorized_keys;  // coordinator: public keys allowed to connect
  std::string server_key;       // worker: the coordinator's public key
  bool insecure = false;
  // registry: refuse pipeline names without a domain prefix (DOMAIN.NAME);
  // on unless --allow-unprefixed-names (brief 6: enforced from day one).
  bool require_domain_prefix = true;
  // "" = the role's default (coordinator/all: 127.0.0.1:8011; worker: off);
  // "off" = no HTTP server.
  std::string http_bind;
  std::string api_token;
  std::string api_token_file;
  std::string api_tokens_file;  // --api-tokens
  // --oidc-*: single sign-on on the HTTP port (observability/oidc.h).
  std::string oidc_issuer, oidc_audience, oidc_ca_file;
  std::string oidc_name_claim = "preferred_username", oidc_groups_claim = "groups";
  std::vector<std::string> oidc_roles;  // GROUP=ROLE
  // The dashboard's sign-in through the provider (oidc_sign_in.h).
  std::string oidc_client_id, oidc_client_secret_file, oidc_redirect_url;
  double api_rate_limit = 20;
  observability::TlsFiles http_tls;  // --http-tls-cert, -key, -client-ca
  std::string http_base_path;        // --http-base-path
  std::string alert_fold_window = "60s";
  std::vector<alerts::AlertRule> alert_rules;  // the config's `alerts:` list
  // election (cli/ha_config.h): etcd endpoints (comma-separated), this
  // coordinator's name, its advertised worker and client endpoints, the
  // lease TTL.
  std::string ha_etcd, ha_name, ha_advertise, ha_lease = "5s";
  std::string ha_election = "apollo11/coordinators";  // the etcd election (one per cluster)
  // etcd's TLS and authentication (docs/ha.md, "etcd access").
  std::string ha_etcd_cacert, ha_etcd_cert, ha_etcd_key, ha_etcd_user, ha_etcd_password_file;
  // --ha-without-replication: HA without --replication-bind, knowingly (a
  // standby that takes over knows only the runs in its own journal).
  bool ha_without_replication = false;
  // Journal replication (docs/ha.md, "Replication").
  std::string replication;                     // sync or async; "": sync when replicating
  std::string replication_timeout;             // "": 1s
  std::string replication_bind;                // leader: where standbys connect
  std::string replication_follow;              // standby: the leader's replication endpoint
  std::string replication_name;                // "": the default worker id
  std::vector<std::string> replication_peers;  // admitted names; none: any
  // coordinator: the OTLP/HTTP collector spans go to (observability/otlp_exporter.h); "" = off.
  std::string otlp_endpoint;
};

inline constexpr const char* kDefaultCoordinatorHttp = "127.0.0.1:8011";

// Journal replication as resolved: a leader binds, a standby follows.
struct ReplicationSettings {
  std::string bind;    // leader: where standbys connect; empty: not a leader
  std::string follow;  // standby: the leader's replication endpoint; empty: not a standby
  std::string name;    // this node on the link (a standby's routing id)
  // Leader: the standby names admitted; standby: its leader's name (the
  // first). Empty admits any.
  std::vector<std::string> peers;
  bool sync = true;
  Millis timeout{1000};
  // The coordinator's CURVE key pair (--curve-key), shared by the
  // coordinators of a cluster: the link is CURVE with it. Unset: plain TCP.
  std::optional<transport::CurveKeyPair> curve;
};

// Everything a Node needs to start. The pointers of `coordinator`
// (metrics, alerts), its epoch and instance, and a role=all worker's
// endpoint are the Node's to fill.
struct NodeConfig {
  std::string role = "all";  // as shown in the "listening" line
  bool coordinator = true;   // run the scheduler, dispatcher and reconciler
  bool worker = true;        // run a worker actor
  std::string state_dir;
  // This node's log file (STATE_DIR/coordinator.log, or the worker's
  // STATE_DIR/worker-ID/worker.log on a worker).
  std::string log_file;
  std::string log_level = "info";  // --log-level (the file keeps info and above at least)
  actors::CoordinatorConfig coordinator_config;
  // $APOLLO11_TEST_FAULT, tests only: a fault the node wires into its
  // coordinator (cli/test_faults.h); empty: none.
  std::string test_fault;
  actors::WorkerConfig worker_config;
  // Locked for the worker's lifetime (one process per worker identity);
  // empty: no lock of its own (`apollo11 run`: the state dir lock covers it).
  std::string worker_lock_dir;
  // The ZAP allow-list when the coordinator is a CURVE server; empty: no ZAP.
  transport::AuthorizedKeys authorized;
  // The roles of each authorized key, stamped on its connections by the ZAP
  // handler (transport/key_roles.h).
  transport::KeyRolesByKey key_roles;
  // "HOST:PORT" of /metrics, /healthz, /readyz and the JSON API, or "off".
  std::string http_bind = "off";
  std::string api_token;  // the single token (principal "api-token", admin); "" = none
  // --api-tokens: the file and its principals (set when the flag is given).
  std::string api_tokens_file;
  std::optional<std::vector<observability::ApiToken>> api_tokens;
  double api_rate_limit = 20;       // changing requests per second per principal; 0 = no limit
  observability::OidcOptions oidc;  // not enabled = no single sign-on
  // The dashboard's sign-in; an empty client_id = none (bearer tokens only).
  observability::OidcSignInOptions oidc_sign_in;
  observability::TlsFiles http_tls;            // not enabled = plain HTTP
  std::string http_base_path;                  // "" = the root; else "/apollo"
  std::vector<alerts::AlertRule> alert_rules;  // none: no notifier
  Millis alert_fold_window{60000};
  Millis drain_timeout{300000};  // how long a stop waits for the worker to drain
  ReplicationSettings replication;
  // The flags' spelling of durations, for log lines.
  std::string drain_timeout_text, retention_text, retention_interval_text, alert_fold_window_text;
  std::string audit_retention_text;
  HaConfig ha;  // election: off unless --ha-etcd
  // --otlp-endpoint: where the spans of finished runs go; unset = no export.
  std::optional<observability::OtlpEndpoint> otlp;
  // service.instance.id of those spans: the --ha-name, else HOSTNAME-XXXX of
  // the state dir (as DefaultWorkerId).
  std::string otlp_instance;
};

// Where the node's log lines go: stderr as `flags` say, and the JSON copy
// in the state dir (NodeConfig::log_file). Pure apart from `env`.
LogSettings ResolveNodeLog(const NodeFlags& flags, NodeEnv& env);

// HOSTNAME-XXXX, XXXX from the absolute `state_dir`: stable across restarts
// (a restarted worker finds its outbox) and distinct for two workers on one
// host with their own state dirs.
std::string DefaultWorkerId(const std::string& state_dir, NodeEnv& env);

// Checks `flags` and fills every default. InvalidInput, with the message
// apollo11-node prints after "apollo11-node: ", on the first refusal, in
// this order: a bad duration, a bad --retention, a --worker-id or --slots
// the coordinator would refuse, an unreadable --curve-key,
// CURVE on a coordinator without --authorized-keys (or an unreadable one),
// CURVE on a worker without --server-key (or an unreadable one), a
// non-loopback bind without keys or --insecure, a bad API token, a bad
// --http-bind, non-loopback HTTP without a token or --insecure, a bad
// --replication or --replication-timeout, replication settings on a
// worker-only node or without --replication-bind/--replication-follow,
// both of those at once, a non-loopback --replication-bind without
// --insecure (the link has no CURVE yet), a bad --otlp-endpoint or one on a
// node without a scheduler (a worker, a static standby).
Result<NodeConfig> ResolveNodeConfig(const NodeFlags& flags, NodeEnv& env);
// Its --oidc-* part (node_config_oidc.cc): fills config->oidc and
// config->oidc_sign_in, or says which flag is wrong.
Status ResolveOidc(const NodeFlags& flags, NodeConfig* config);

}  // namespace apollo11::cli
