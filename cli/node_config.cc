#include "cli/node_config.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>

#include "actors/dispatcher/dispatcher_core.h"
#include "cli/state_dir.h"
#include "cli/test_faults.h"
#include "observability/http_server.h"
#include "replication/replication_frame.h"
#include "transport/coordinator_endpoints.h"
#include "transport/security.h"

namespace apollo11::cli {
namespace {

std::string StateDirOf(const NodeFlags& f, NodeEnv& env) {
  return NodeStateDir(f.state_dir, [&env](const std::string& name) { return env.Getenv(name); });
}

std::string WorkerIdOf(const NodeFlags& f, const std::string& state_dir, NodeEnv& env) {
  return f.worker_id.empty() ? DefaultWorkerId(state_dir, env) : f.worker_id;
}

std::string LogFileOf(const NodeFlags& f, const std::string& state_dir,
                      const std::string& worker_id) {
  if (f.role == "worker") return state_dir + "/worker-" + worker_id + "/worker.log";
  return state_dir + "/coordinator.log";
}

struct Durations {
  Millis heartbeat, drain_timeout, reconcile, retention_interval, slow_min, fold_window, health;
  Millis retention{0};
  Millis audit_retention{0};
};

Result<Durations> ParseDurations(const NodeFlags& f) {
  Durations d;
  const std::pair<const std::string*, Millis*> table[] = {
      {&f.heartbeat, &d.heartbeat},
      {&f.drain_timeout, &d.drain_timeout},
      {&f.reconcile_interval, &d.reconcile},
      {&f.retention_interval, &d.retention_interval},
      {&f.slow_min, &d.slow_min},
      {&f.alert_fold_window, &d.fold_window},
      {&f.health_interval, &d.health}};
  for (const auto& [text, out] : table) {
    auto parsed = ParseDuration(*text);
    if (!parsed.ok()) return Status::InvalidInput("bad duration: " + parsed.status().message());
    *out = *parsed;
  }
  if (f.retention != "off") {
    auto age = ParseAge(f.retention);
    if (!age.ok() || age->count() <= 0 || d.retention_interval.count() <= 0) {
      return Status::InvalidInput("--retention " + f.retention + ": " +
                                  (age.ok() ? "must be longer than 0" : age.status().message()) +
                                  " (write e.g. 30d, or off; the interval must be positive)");
    }
    d.retention = *age;
  }
  if (f.audit_retention != "off") {
    auto age = ParseAge(f.audit_retention);
    if (!age.ok() || age->count() <= 0) {
      return Status::InvalidInput("--audit-retention " + f.audit_retention + ": " +
                                  (age.ok() ? "must be longer than 0" : age.status().message()) +
                                  " (write e.g. 365d, or off to keep every audit record)");
    }
    d.audit_retention = *age;
  }
  return d;
}

// CURVE: this node's key pair, the coordinator's allow-list, the worker's
// trusted coordinator key.
Status ResolveCurve(const NodeFlags& f, NodeEnv& env, NodeConfig* c) {
  std::optional<transport::CurveKeyPair> curve;
  if (!f.curve_key.empty()) {
    auto pair = env.LoadKeyPair(f.curve_key);
    if (!pair.ok()) return Status::InvalidInput("--curve-key: " + pair.status().message());
    curve = *pair;
  }
  if (c->coordinator && curve) {
    if (f.authorized_keys.empty()) {
      return Status::InvalidInput(
          "--curve-key needs --authorized-keys (the public keys of the workers and clients "
          "allowed to connect)");
    }
    auto keys = env.LoadAuthorizedKeys(f.authorized_keys);
    if (!keys.ok()) return Status::InvalidInput(keys.status().message());
    for (const auto& [key, roles] : *keys) c->authorized[actors::kCurveDomain].insert(key);
    c->key_roles = *keys;
    // role=all: the local worker, and the node's HTTP API as a client,
    // authenticate with the node's own key.
    c->authorized[actors::kCurveDomain].insert(curve->public_z85);
    c->key_roles[curve->public_z85] = transport::kRoleWorker | transport::kRoleAdmin;
    c->coordinator_config.curve = curve;
  }
  if (c->worker && curve) {
    c->worker_config.curve = curve;
    c->worker_config.server_public = curve->public_z85;  // role=all: its own coordinator
  }
  if (c->worker && !c->coordinator && curve) {
    if (f.server_key.empty()) {
      return Status::InvalidInput(
          "--curve-key needs --server-key (the coordinator's public key) on a worker");
    }
    auto pub = env.LoadPublicKey(f.server_key);
    if (!pub.ok()) return Status::InvalidInput("--server-key: " + pub.status().message());
    c->worker_config.server_public = *pub;
  }
  if (c->coordinator && !curve && !f.insecure &&
      (!transport::IsLoopbackEndpoint(f.bind) || !transport::IsLoopbackEndpoint(f.api_bind))) {
    return Status::InvalidInput("refusing to bind a non-loopback address (" + f.bind + ", " +
                                f.api_bind +
                                ") without CURVE keys; pass --insecure to accept "
                                "unauthenticated peers on a trusted network");
  }
  return Status::Ok();
}

// The token from --api-token or --api-token-file (first line, trimmed).
Result<std::string> ResolveApiToken(const NodeFlags& f, NodeEnv& env) {
  if (!f.api_token.empty() && !f.api_token_file.empty()) {
    return Status::InvalidInput("give --api-token or --api-token-file, not both");
  }
  std::string token = f.api_token;
  if (!f.api_token_file.empty()) {
    auto line = env.ReadFirstLine(f.api_token_file);
    if (!line.ok()) {
      return Status::InvalidInput("--api-token-file " + f.api_token_file + ": " +
                                  line.status().message());
    }
    token = *line;
    while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) {
      token.pop_back();
    }
    if (token.empty()) {
      return Status::InvalidInput("--api-token-file " + f.api_token_file + " is empty");
    }
  }
  if (!token.empty() && token.size() < 16) {
    return Status::InvalidInput("the API token must be at least 16 characters");
  }
  return token;
}

// --http-tls-*: a certificate and its key together; a client CA only with them.
Status ResolveHttpTls(const NodeFlags& f, NodeConfig* c) {
  const observability::TlsFiles& t = f.http_tls;
  if (t.cert.empty() != t.key.empty()) {
    return Status::InvalidInput("give --http-tls-cert and --http-tls-key together");
  }
  if (!t.client_ca.empty() && t.cert.empty()) {
    return Status::InvalidInput("--http-tls-client-ca needs --http-tls-cert and --http-tls-key");
  }
  if (t.enabled()) {
    // Loaded once here so that a bad file stops the node before anything
    // starts; the HTTP server loads its own.
    auto loaded = observability::TlsContext::Load(t);
    if (!loaded.ok()) return loaded.status();
  }
  c->http_tls = t;
  return Status::Ok();
}

Status ResolveHttp(const NodeFlags& f, NodeEnv& env, NodeConfig* c) {
  c->http_bind =
      f.http_bind.empty() ? (c->coordinator ? kDefaultCoordinatorHttp : "off") : f.http_bind;
  auto token = ResolveApiToken(f, env);
  if (!token.ok()) return token.status();
  c->api_token = *token;
  c->api_rate_limit = f.api_rate_limit;
  if (!f.api_tokens_file.empty()) {
    auto tokens = observability::LoadApiTokens(f.api_tokens_file);
    if (!tokens.ok()) return Status::InvalidInput("--api-tokens: " + tokens.status().message());
    c->api_tokens_file = f.api_tokens_file;
    c->api_tokens = std::move(*tokens);
  }
  APOLLO11_RETURN_IF_ERROR(ResolveHttpTls(f, c));
  APOLLO11_RETURN_IF_ERROR(ResolveOidc(f, c));
  auto base = observability::ParseBasePath(f.http_base_path);
  if (!base.ok()) return base.status();
  c->http_base_path = *base;
  if (c->http_bind == "off") {
    for (const auto& [flag, given] : {std::pair{"--api-tokens", !c->api_tokens_file.empty()},
                                      std::pair{"--oidc-issuer", c->oidc.enabled()},
                                      std::pair{"--http-tls-cert", c->http_tls.enabled()},
                                      std::pair{"--http-base-path", !c->http_base_path.empty()}}) {
      if (given) {
        return Status::InvalidInput(std::string(flag) +
                                    " is given but the node serves no HTTP (--http-bind off): "
                                    "it would do nothing");
      }
    }
    return Status::Ok();
  }
  auto hp = observability::ParseHttpBind(c->http_bind);
  if (!hp.ok()) return Status::InvalidInput("--http-bind: " + hp.status().message());
  if (!observability::IsLoopbackHost(hp->host) && c->api_token.empty() && !c->api_tokens &&
      !c->oidc.enabled() && !f.insecure) {
    return Status::InvalidInput("refusing to serve HTTP on a non-loopback address (" +
                                c->http_bind +
                                ") without --api-tokens or --api-token; pass --insecure to "
                                "expose metrics and the read-only API to the network");
  }
  return Status::Ok();
}

void FillCoordinator(const NodeFlags& f, const Durations& d, NodeConfig* c) {
  actors::CoordinatorConfig& cc = c->coordinator_config;
  cc.worker_endpoint = f.bind;
  cc.client_endpoint = f.api_bind;
  cc.scheduler.max_backlog = f.max_backlog;
  cc.scheduler.max_retrying = f.max_retrying;
  cc.scheduler.retry_stagger = actors::kDefaultRetryStagger;
  cc.scheduler.max_requeues = f.max_requeues;
  cc.scheduler.max_foreach_items = f.max_foreach_items;
  cc.scheduler.max_active_runs = static_cast<size_t>(f.max_active_runs);
  cc.scheduler.max_schedule_overlap = static_cast<size_t>(f.max_schedule_overlap);
  cc.scheduler.require_domain_prefix = f.require_domain_prefix;  // registry
  cc.scheduler.slow_min = d.slow_min;
  cc.reconciler.heartbeat = d.heartbeat;
  cc.reconciler.liveness = f.liveness;
  cc.reconcile_interval = d.reconcile;
  cc.retention.older_than = d.retention;
  cc.retention.audit_older_than = d.audit_retention;
  cc.retention.interval = d.retention_interval;
  cc.retention.state_dir = c->state_dir;
  cc.log_file = c->log_file;
  cc.health_interval = d.health;
}

void FillWorker(const NodeFlags& f, const Durations& d, NodeEnv& env, NodeConfig* c) {
  actors::WorkerConfig& wc = c->worker_config;
  wc.coordinator_endpoint = f.connect;  // role=all: the Node uses its coordinator's
  wc.worker.worker_id = WorkerIdOf(f, c->state_dir, env);
  wc.worker.node_log_file = c->log_file;
  wc.worker.health_interval = d.health;
  wc.worker.group = f.group;
  wc.worker.slots = f.slots ? f.slots : std::max(1u, env.Cores());
  actors::SetPrefetchFlag(f.prefetch, &wc.worker);
  wc.worker.labels = f.labels;
  wc.worker.heartbeat = d.heartbeat;
  wc.worker.liveness = f.liveness;
  const std::string drop = env.Getenv("APOLLO11_TEST_DROP_DISPATCH");
  if (!drop.empty()) wc.worker.drop_dispatches = std::atoi(drop.c_str());  // tests only
  c->worker_lock_dir = c->state_dir + "/worker-" + wc.worker.worker_id;
  wc.executor.log_dir = c->worker_lock_dir + "/logs";
  wc.outbox_dir = c->worker_lock_dir + "/outbox";
}

// What the coordinator would refuse in this worker's HELLO, refused before
// the node starts.
Status CheckWorkerHello(const actors::WorkerOptions& w) {
  if (!actors::IsValidWorkerId(w.worker_id)) {
    return Status::InvalidInput("--worker-id '" + actors::Printable(w.worker_id) +
                                "': want 1 to 128 printable characters without spaces or '/'");
  }
  if (w.slots > actors::kMaxWorkerSlots) {
    return Status::InvalidInput("--slots " + std::to_string(w.slots) + ": at most " +
                                std::to_string(actors::kMaxWorkerSlots));
  }
  if (w.prefetch > actors::kMaxWorkerPrefetch) {
    return Status::InvalidInput("--prefetch " + std::to_string(w.prefetch) + ": at most " +
                                std::to_string(actors::kMaxWorkerPrefetch));
  }
  return Status::Ok();
}

// --replication*: a leader binds, a static standby follows.
Status ResolveReplication(const NodeFlags& f, NodeEnv& env, NodeConfig* c) {
  ReplicationSettings& r = c->replication;
  r.bind = f.replication_bind;
  r.follow = f.replication_follow;
  r.peers = f.replication_peers;
  r.name = f.replication_name.empty() ? DefaultWorkerId(c->state_dir, env) : f.replication_name;
  const bool on = !r.bind.empty() || !r.follow.empty();
  if (!on) {
    if (!f.replication.empty() || !f.replication_timeout.empty() || !f.replication_peers.empty()) {
      return Status::InvalidInput(
          "--replication, --replication-timeout and --replication-peers need "
          "--replication-bind (a leader) or --replication-follow (a standby)");
    }
    return Status::Ok();
  }
  if (!c->coordinator) {
    return Status::InvalidInput("replication is for coordinators: not with --role worker");
  }
  if (!r.bind.empty() && !r.follow.empty()) {
    return Status::InvalidInput(
        "--replication-bind and --replication-follow: a node either leads (bind) or follows a "
        "static leader (follow), not both");
  }
  if (!r.follow.empty() && c->worker) {
    return Status::InvalidInput(
        "--replication-follow: a standby runs no scheduler for a worker of its own; use "
        "--role coordinator");
  }
  if (f.replication != "" && f.replication != "sync" && f.replication != "async") {
    return Status::InvalidInput("--replication " + f.replication + ": expected sync or async");
  }
  r.sync = f.replication != "async";
  if (!f.replication_timeout.empty()) {
    auto timeout = ParseDuration(f.replication_timeout);
    if (!timeout.ok() || timeout->count() <= 0) {
      return Status::InvalidInput("--replication-timeout " + f.replication_timeout +
                                  ": want a positive duration such as 1s or 500ms");
    }
    r.timeout = *timeout;
  }
  // CURVE with the coordinator's key pair, which every coordinator of the
  // cluster holds: on the link a node admits that public key alone.
  r.curve = c->coordinator_config.curve;
  if (r.curve && (!r.bind.empty() || !r.follow.empty())) {
    c->authorized[replication::kReplicationZapDomain].insert(r.curve->public_z85);
  }
  // Loopback too: the link carries the whole journal (env values included),
  // and anyone on this machine could otherwise follow it.
  for (const std::string* endpoint : {&r.bind, &r.follow}) {
    if (endpoint->empty() || r.curve || f.insecure) continue;
    return Status::InvalidInput(
        std::string(endpoint == &r.bind ? "--replication-bind " : "--replication-follow ") +
        *endpoint +
        ": a replication link needs CURVE keys (--curve-key, the same pair on every "
        "coordinator), on loopback too: it carries the whole journal to whoever connects; "
        "pass --insecure to accept unauthenticated peers on a trusted machine or network");
  }
  return Status::Ok();
}

// With --ha-etcd: a journal that is not replicated makes every failover
// lose the runs the old leader had, so it takes an explicit opt-out.
Status CheckHaReplication(const NodeFlags& f) {
  if (f.replication_bind.empty() && !f.ha_without_replication) {
    return Status::InvalidInput(
        "--ha-etcd without --replication-bind: the journal would not be replicated, so a "
        "standby that takes over would know only the runs in its own journal (the leader's "
        "stay on the leader's disk until it leads again). Give every coordinator "
        "--replication-bind tcp://HOST:PORT (docs/ha.md, \"Replication\"), or pass "
        "--ha-without-replication (config key ha-without-replication: true) to accept that");
  }
  if (!f.replication_bind.empty() && f.ha_without_replication) {
    return Status::InvalidInput(
        "--ha-without-replication with --replication-bind: the journal is replicated; drop one "
        "of them");
  }
  return Status::Ok();
}

// --otlp-endpoint: parsed here, so that a node that starts with it exports.
Status ResolveOtlp(const NodeFlags& f, NodeEnv& env, NodeConfig* c) {
  if (f.otlp_endpoint.empty()) return Status::Ok();
  if (!c->coordinator || !c->replication.follow.empty()) {
    return Status::InvalidInput(
        std::string("--otlp-endpoint: ") +
        (c->coordinator ? "a static standby (--replication-follow) runs no scheduler"
                        : "a worker-only node runs no scheduler") +
        ", so it has no runs to export; give the flag to the coordinator (--role coordinator "
        "or all)");
  }
  auto endpoint = observability::ParseOtlpEndpoint(f.otlp_endpoint);
  if (!endpoint.ok()) return endpoint.status();
  c->otlp = std::move(*endpoint);
  c->otlp_instance = c->ha.enabled() ? c->ha.self.name : DefaultWorkerId(c->state_dir, env);
  return Status::Ok();
}

}  // namespace

std::string DefaultWorkerId(const std::string& state_dir, NodeEnv& env) {
  const std::string path = env.AbsolutePath(state_dir);
  uint32_t h = 2166136261u;  // FNV-1a
  for (unsigned char ch : path) h = (h ^ ch) * 16777619u;
  char suffix[8];
  std::snprintf(suffix, sizeof(suffix), "%04x", h & 0xffffu);
  return env.Hostname() + "-" + suffix;
}

LogSettings ResolveNodeLog(const NodeFlags& flags, NodeEnv& env) {
  const std::string state_dir = StateDirOf(flags, env);
  LogSettings log;
  log.level = flags.log_level;
  log.format = flags.log_format;
  log.file = LogFileOf(flags, state_dir, WorkerIdOf(flags, state_dir, env));
  return log;
}

Result<NodeConfig> ResolveNodeConfig(const NodeFlags& flags, NodeEnv& env) {
  NodeConfig c;
  if (flags.role != "coordinator" && flags.role != "worker" && flags.role != "all") {
    return Status::InvalidInput("--role " + flags.role + ": expected coordinator, worker or all");
  }
  c.role = flags.role;
  c.coordinator = flags.role != "worker";
  c.worker = flags.role != "coordinator";
  c.state_dir = StateDirOf(flags, env);
  c.log_file = LogFileOf(flags, c.state_dir, WorkerIdOf(flags, c.state_dir, env));
  c.log_level = flags.log_level;
  auto d = ParseDurations(flags);
  if (!d.ok()) return d.status();
  if (c.coordinator) FillCoordinator(flags, *d, &c);
  c.test_fault = env.Getenv("APOLLO11_TEST_FAULT");  // tests only (cli/test_faults.h)
  auto faults = TestFaultPort(c.test_fault);
  if (!faults.ok()) return faults.status();
  if (c.worker) {
    FillWorker(flags, *d, env, &c);
    APOLLO11_RETURN_IF_ERROR(CheckWorkerHello(c.worker_config.worker));
    if (!c.coordinator) {  // role=all follows its own coordinator
      auto endpoints = transport::ParseEndpointList(flags.connect, "--connect");
      if (!endpoints.ok()) return endpoints.status();
    }
  }
  using executor::ContainmentMode;
  if (flags.containment == "cgroup") {
    c.worker_config.executor.containment = ContainmentMode::kCgroup;
  } else if (flags.containment == "process-tree") {
    c.worker_config.executor.containment = ContainmentMode::kProcessTree;
  } else if (flags.containment != "auto") {
    return Status::InvalidInput("--containment " + flags.containment +
                                ": expected auto, cgroup or process-tree");
  }
  if (flags.secrets_dir.empty() || flags.secrets_dir[0] != '/') {
    return Status::InvalidInput("--secrets-dir '" + flags.secrets_dir +
                                "' must be an absolute path");
  }
  c.worker_config.executor.secrets_dir = flags.secrets_dir;
  APOLLO11_RETURN_IF_ERROR(ResolveCurve(flags, env, &c));
  APOLLO11_RETURN_IF_ERROR(ResolveHttp(flags, env, &c));
  auto ha = ResolveHaConfig(flags, env);
  if (!ha.ok()) return ha.status();
  c.ha = std::move(*ha);
  APOLLO11_RETURN_IF_ERROR(ResolveReplication(flags, env, &c));
  if (c.ha.enabled()) {
    if (!c.replication.follow.empty()) {
      return Status::InvalidInput(
          "--replication-follow with --ha-etcd: an elected standby follows whoever leads (the "
          "election names the leader's replication endpoint); give --replication-bind instead");
    }
    if (!flags.replication_name.empty() && flags.replication_name != c.ha.self.name) {
      return Status::InvalidInput("--replication-name " + flags.replication_name +
                                  " with --ha-etcd: the replication name is the --ha-name, " +
                                  c.ha.self.name);
    }
    c.replication.name = c.ha.self.name;
    APOLLO11_RETURN_IF_ERROR(CheckHaReplication(flags));
    c.ha.without_replication = flags.ha_without_replication;
  } else if (flags.ha_without_replication) {
    return Status::InvalidInput(
        "--ha-without-replication needs --ha-etcd (it only says what an "
        "elected coordinator may do without --replication-bind)");
  }
  APOLLO11_RETURN_IF_ERROR(ResolveOtlp(flags, env, &c));
  c.alert_rules = flags.alert_rules;
  c.alert_fold_window = d->fold_window;
  c.drain_timeout = d->drain_timeout;
  c.drain_timeout_text = flags.drain_timeout;
  c.retention_text = flags.retention;
  c.retention_interval_text = flags.retention_interval;
  c.audit_retention_text = flags.audit_retention;
  c.alert_fold_window_text = flags.alert_fold_window;
  return c;
}

}  // namespace apollo11::cli
