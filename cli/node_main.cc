// `apollo11-node start --role=coordinator|worker|all`: the daemon.
//
// coordinator: the scheduler, dispatcher and reconciler actors; workers
//   connect to --bind, clients (the apollo11 CLI) to --api-bind.
// worker: one worker actor connected to --connect, running tasks.
// all: both in one process (one box); more workers may join over --bind.
//
// HTTP (--http-bind): /metrics, /healthz and /readyz on every role that
// serves it (coordinator and all by default on 127.0.0.1:8011, workers only
// when asked), plus the JSON API on a coordinator. Mutating API calls need
// --api-token or --api-token-file.
//
// Settings come from flags, APOLLO11_<FLAG> variables, or the same keys in
// a YAML config file, in that order (cli/node_flag_sources.h). Logs go to
// stderr. On start one JSON line on stdout names the bound endpoints, then
// systemd hears READY=1 (Type=notify). SIGTERM or SIGINT: STOPPING=1, a
// worker drains (takes no new work, finishes and delivers what it holds,
// leaves with BYE), then the node exits 0. SIGHUP: the log file is reopened,
// the alert rules and the authorized keys (with their roles) are read again;
// a reload that fails is logged and the old settings stay.

#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "actors/dispatcher/dispatcher_core.h"
#include "alerts/alert_config.h"
#include "cli/exit_codes.h"
#include "cli/logging_setup.h"
#include "cli/node.h"
#include "cli/node_config.h"
#include "cli/node_env.h"
#include "cli/node_flag_sources.h"
#include "cli/process_secrets.h"
#include "cli/state_dir.h"
#include "cli/systemd_notify.h"
#include "cli/usage_errors.h"
#include "cli/version.h"
#include "common/log_event.h"
#include "common/malloc_policy.h"
#include "common/stderr_line.h"
#include "common/terminate_handler.h"

namespace {

using apollo11::Status;
using apollo11::cli::kExitInternal;
using apollo11::cli::kExitInvalidInput;
using apollo11::cli::NodeFlags;
using apollo11::cli::NodeStage;

// The node's start-up error, worded as each step always has been.
void PrintStartError(NodeStage stage, const Status& s) {
  const char* what = "";
  switch (stage) {
    case NodeStage::kJournal:
      what = "journal: ";
      break;
    case NodeStage::kZap:
      what = "ZAP handler: ";
      break;
    case NodeStage::kCoordinator:
      what = "coordinator: ";
      break;
    case NodeStage::kWorker:
      what = "worker: ";
      break;
    case NodeStage::kHttp:
      what = "http: ";
      break;
    default:
      break;
  }
  const bool bare = stage == NodeStage::kLock || stage == NodeStage::kWorkerLock;
  apollo11::StderrPrintf(spdlog::level::err, "start_failed", "apollo11-node: %s%s\n", what,
                         bare ? s.message().c_str() : s.ToString().c_str());
}

// Journal replication (docs/ha.md, "Replication").
void AddReplicationOptions(CLI::App* start, NodeFlags* f) {
  start
      ->add_option("--replication", f->replication,
                   "sync: release a turn's effects once a standby has its batch (default); "
                   "async: at the local commit")
      ->check(CLI::IsMember({"sync", "async"}));
  start->add_option("--replication-timeout", f->replication_timeout,
                    "sync: how long a commit waits for a standby before marking it lagging (1s)");
  start->add_option("--replication-bind", f->replication_bind,
                    "leader: endpoint standbys connect to for the journal stream");
  start->add_option("--replication-follow", f->replication_follow,
                    "standby: the leader's --replication-bind endpoint (a static standby)");
  start->add_option("--replication-name", f->replication_name,
                    "this node's name on the replication link (default: the worker id)");
  start
      ->add_option("--replication-peers", f->replication_peers,
                   "names accepted on the link (leader: its standbys; standby: its leader)")
      ->delimiter(',');
}

// The node: its role, settings file, state dir and endpoints.
void AddNodeFlags(CLI::App* start, NodeFlags* f) {
  start->add_option("--role", f->role, "coordinator, worker or all (one box); required")
      ->check(CLI::IsMember({"coordinator", "worker", "all"}));
  start->add_option("--config", f->config,
                    "YAML file with the same keys as these flags (default /etc/apollo11/node.yaml "
                    "when it exists); each flag may also come from $APOLLO11_<FLAG>, e.g. "
                    "APOLLO11_STATE_DIR; the command line wins over the environment, the "
                    "environment over the file");
  start->add_option("--state-dir", f->state_dir,
                    "journal and logs (default $STATE_DIRECTORY, /var/lib/apollo11 under "
                    "systemd, else $XDG_STATE_HOME/apollo11 or ~/.local/state/apollo11)");
  start->add_option("--bind", f->bind, "coordinator: endpoint workers connect to");
  start->add_option("--api-bind", f->api_bind, "coordinator: endpoint clients connect to");
  start->add_option("--connect", f->connect, "worker: the coordinator's worker endpoint");
}

// A worker: its group, how much work it takes on, its labels.
void AddWorkerCapacityFlags(CLI::App* start, NodeFlags* f) {
  start->add_option("--group", f->group, "worker group");
  start->add_option("--slots", f->slots, "worker: tasks run at once (0: the number of cores)");
  start
      ->add_option("--prefetch", f->prefetch,
                   "worker: executions queued beyond its slots, started as slots free "
                   "(-1: adapts to how long tasks take, between 2 x slots and 32 x slots, at "
                   "least 4, at most 256)")
      ->check(CLI::Range(-1, static_cast<int>(apollo11::actors::kMaxWorkerPrefetch)));
  start->add_option("--labels", f->labels, "worker labels")->delimiter(',');
}

// Heartbeats, reconciliation, and when a task is slow or a peer lost.
void AddTimingFlags(CLI::App* start, NodeFlags* f) {
  start->add_option("--heartbeat", f->heartbeat, "heartbeat interval");
  start->add_option("--reconcile-interval", f->reconcile_interval,
                    "coordinator: how often workers are asked what they run");
  start->add_option("--slow-min", f->slow_min,
                    "coordinator: least running time before an execution is flagged slow (it "
                    "also needs 5x its task's P50)");
  start->add_option("--liveness", f->liveness, "missed heartbeats before a peer is lost")
      ->check(apollo11::cli::AtLeast(1));
}

// What a coordinator holds at most: its backlog, retries, requeues,
// foreach items, and finished runs (retention).
void AddCoordinatorLimitFlags(CLI::App* start, NodeFlags* f) {
  start
      ->add_option("--max-backlog", f->max_backlog,
                   "READY+RUNNING executions before promotion pauses")
      ->check(apollo11::cli::AtLeast(1));
  start->add_option("--max-retrying", f->max_retrying,
                    "coordinator: retries waiting with a backoff timer at once; more queue, "
                    "oldest first (0 = no cap)");
  start->add_option("--max-requeues", f->max_requeues,
                    "coordinator: requeues after worker loss before a task FAILS");
  start
      ->add_option("--max-foreach-items", f->max_foreach_items,
                   "coordinator: items one foreach task may fan out into; more FAILS the task")
      ->check(apollo11::cli::AtLeast(1));
  start
      ->add_option("--max-active-runs", f->max_active_runs,
                   "coordinator: runs active at once, however started; a start beyond it is "
                   "refused and alerted (run_cap_reached)")
      ->check(CLI::Range(1, 1'000'000));
  start
      ->add_option("--max-schedule-overlap", f->max_schedule_overlap,
                   "coordinator: runs of one `overlap: allow` schedule active at once; a fire "
                   "beyond it is skipped, journaled and alerted")
      ->check(CLI::Range(1, 1'000'000));
  start->add_option("--retention", f->retention,
                    "coordinator: remove runs finished longer ago than this (e.g. 30d) with "
                    "their history and local logs; default off");
  start->add_option("--retention-interval", f->retention_interval,
                    "coordinator: how often retention runs (default 1h; first at start)");
  start->add_option("--audit-retention", f->audit_retention,
                    "coordinator: remove audit records older than this (default 365d), at "
                    "each retention pass; off keeps them all");
}

// A worker's identity, its drain on SIGTERM, and how its task processes
// are held.
void AddWorkerProcessFlags(CLI::App* start, NodeFlags* f) {
  start->add_option("--worker-id", f->worker_id,
                    "worker identity (default HOSTNAME-XXXX, stable for a state dir)");
  start->add_option("--drain-timeout", f->drain_timeout,
                    "how long SIGTERM waits for a worker to drain");
  start->add_option("--containment", f->containment,
                    "worker: how task processes are held so none outlives its task: auto (a "
                    "cgroup v2 per execution when allowed, else process-tree), cgroup (or refuse "
                    "to run tasks), process-tree");
  start->add_option("--secrets-dir", f->secrets_dir,
                    "worker: where tasks' file: secrets live, in a directory per pipeline "
                    "(DIR/PIPELINE/) or per domain (DIR/DOMAIN/); a task may read only its own");
}

// Logs, health lines and exported spans.
void AddLoggingFlags(CLI::App* start, NodeFlags* f) {
  start->add_option("--log-level", f->log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  start->add_option("--health-interval", f->health_interval,
                    "how often a health line is logged (0s: never)");
  start
      ->add_option("--log-format", f->log_format,
                   "stderr log format: json or text (default: text on a terminal, else json)")
      ->check(CLI::IsMember({"json", "text"}));
  start->add_option("--otlp-endpoint", f->otlp_endpoint,
                    "coordinator: send each finished run as OpenTelemetry spans (OTLP/HTTP JSON) "
                    "to this collector, http://HOST:PORT or https://HOST:PORT[/PATH]; spans are "
                    "POSTed to PATH/v1/traces (default: off)");
}

// CURVE keys, the pipeline name rule, and --insecure.
void AddSecurityFlags(CLI::App* start, NodeFlags* f) {
  start->add_option("--curve-key", f->curve_key, "this node's CURVE key pair (apollo11 keygen)");
  start->add_option("--authorized-keys", f->authorized_keys,
                    "coordinator: file of public keys allowed to connect");
  start->add_option("--server-key", f->server_key, "worker: the coordinator's public key file");
  start->add_flag("--require-domain-prefix,!--allow-unprefixed-names", f->require_domain_prefix,
                  "coordinator: refuse pipelines (registered, triggered or submitted) whose name "
                  "has no domain prefix (DOMAIN.NAME); on by default, "
                  "--allow-unprefixed-names (or require-domain-prefix: false) lets them in");
  start->add_flag("--insecure", f->insecure,
                  "allow binding non-loopback addresses without CURVE (or HTTP without a token)");
}

// The HTTP endpoint and its API token.
void AddHttpFlags(CLI::App* start, NodeFlags* f) {
  start->add_option("--http-bind", f->http_bind,
                    "HOST:PORT for /metrics, /healthz, /readyz and the JSON API, or off "
                    "(default: 127.0.0.1:8011 with a coordinator, off on a worker)");
  start->add_option("--api-token", f->api_token,
                    "bearer token for mutating HTTP API calls (without one they are refused)");
  start->add_option("--api-token-file", f->api_token_file, "file holding the API token");
  start->add_option(
      "--api-tokens", f->api_tokens_file,
      "coordinator: tokens file: one principal per line, NAME ROLE sha256:HASH (`apollo11 token "
      "create`); with it, callers without a token may do nothing. Re-read on SIGHUP");
  start->add_option("--oidc-issuer", f->oidc_issuer,
                    "coordinator: single sign-on: the OpenID Connect provider whose bearer JWTs "
                    "are principals (its discovery document and keys are read from it)");
  start->add_option("--oidc-audience", f->oidc_audience,
                    "coordinator: the audience (aud) the provider's tokens name for this node");
  start->add_option("--oidc-role", f->oidc_roles,
                    "coordinator: GROUP=ROLE, the role of the provider's users in GROUP "
                    "(repeatable; viewer, operator or admin)");
  start->add_option("--oidc-groups-claim", f->oidc_groups_claim,
                    "coordinator: the claim that lists a user's groups (default groups)");
  start->add_option("--oidc-name-claim", f->oidc_name_claim,
                    "coordinator: the claim that names a user (default preferred_username, "
                    "else sub)");
  start->add_option("--oidc-ca-file", f->oidc_ca_file,
                    "coordinator: PEM CAs for the provider's HTTPS (default: the system's)");
  start->add_option("--oidc-client-id", f->oidc_client_id,
                    "coordinator: the dashboard's \"Sign in with SSO\": this node's client id at "
                    "the provider (authorization code flow with PKCE)");
  start->add_option("--oidc-client-secret-file", f->oidc_client_secret_file,
                    "coordinator: file holding that client's secret (none: a public client)");
  start->add_option("--oidc-redirect-url", f->oidc_redirect_url,
                    "coordinator: this node's BASE/auth/callback as browsers reach it, "
                    "registered at the provider (https, or http to localhost)");
  start->add_option("--http-base-path", f->http_base_path,
                    "serve the dashboard and every HTTP path below this (e.g. /apollo), for a "
                    "reverse proxy that serves the node under a sub-path");
  start->add_option("--http-tls-cert", f->http_tls.cert,
                    "serve HTTPS (TLS 1.2 or newer) with this PEM certificate (and its chain); "
                    "re-read on SIGHUP");
  start->add_option("--http-tls-key", f->http_tls.key, "the PEM private key of --http-tls-cert");
  start->add_option("--http-tls-client-ca", f->http_tls.client_ca,
                    "require every HTTPS client to present a certificate signed by these PEM CAs");
  start
      ->add_option(
          "--api-rate-limit", f->api_rate_limit,
          "coordinator: changing HTTP requests a principal may send per second, bursts of twice "
          "that; past it 429 with Retry-After (0 = no limit)")
      ->check(CLI::Range(0.0, 1e6));
}

// Leader election among coordinators (docs/ha.md).
void AddHaOptions(CLI::App* start, NodeFlags* f) {
  start->add_option("--ha-etcd", f->ha_etcd,
                    "coordinator: etcd client URLs (http://H:2379,...): elect one leader among "
                    "the coordinators (docs/ha.md); default: no HA");
  start->add_option("--ha-name", f->ha_name,
                    "coordinator: this coordinator's name in the "
                    "election (default: the host name)");
  start->add_option("--ha-advertise", f->ha_advertise,
                    "coordinator: tcp://HOST:WORKER_PORT,tcp://HOST:CLIENT_PORT that standbys "
                    "name while this one leads (default: --bind,--api-bind)");
  start->add_option("--ha-election", f->ha_election,
                    "coordinator: the etcd election name; coordinators of one cluster share it "
                    "(default apollo11/coordinators)");
  start->add_option("--ha-lease", f->ha_lease,
                    "coordinator: the leader's etcd lease TTL (default 5s); it stands down "
                    "before the lease can expire");
  start->add_option("--ha-etcd-cacert", f->ha_etcd_cacert,
                    "coordinator: CA bundle (PEM) that signed etcd's certificate, for https:// "
                    "endpoints (default: the system's)");
  start->add_option("--ha-etcd-cert", f->ha_etcd_cert,
                    "coordinator: client certificate (PEM) for an etcd that requires one "
                    "(--client-cert-auth); with --ha-etcd-key");
  start->add_option("--ha-etcd-key", f->ha_etcd_key,
                    "coordinator: the private key (PEM) of --ha-etcd-cert");
  start->add_option("--ha-etcd-user", f->ha_etcd_user,
                    "coordinator: etcd user, for an etcd with authentication enabled; with "
                    "--ha-etcd-password-file");
  start->add_option("--ha-etcd-password-file", f->ha_etcd_password_file,
                    "coordinator: file whose first line is the password of --ha-etcd-user");
  start->add_flag("--ha-without-replication", f->ha_without_replication,
                  "coordinator: allow --ha-etcd without --replication-bind, accepting that a "
                  "standby that takes over knows only the runs in its own journal (docs/ha.md)");
}

// The flags of `start`, stored in `*f`, in the order --help lists them.
void AddStartFlags(CLI::App* start, NodeFlags* f) {
  AddNodeFlags(start, f);
  AddWorkerCapacityFlags(start, f);
  AddTimingFlags(start, f);
  AddCoordinatorLimitFlags(start, f);
  AddWorkerProcessFlags(start, f);
  AddLoggingFlags(start, f);
  AddSecurityFlags(start, f);
  AddHttpFlags(start, f);
  start->add_option("--alert-fold-window", f->alert_fold_window,
                    "coordinator: repeats of an alert within it are delivered once, with a count");
  AddHaOptions(start, f);
  AddReplicationOptions(start, f);
}

// What SIGHUP reloads: the config file's alert rules and the flags'
// authorized-keys file, resolved again from the flags the node started with.
// The whole file is checked first, as start checks it (every key known,
// every value one its option takes): a file that start would refuse is not
// half-applied, and the running configuration stays.
apollo11::Result<apollo11::cli::NodeConfig> Reresolve(const NodeFlags& f,
                                                      apollo11::cli::NodeEnv& env) {
  apollo11::cli::NotifyReloading();
  NodeFlags fresh = f;
  if (!f.config.empty()) {
    NodeFlags scratch;
    CLI::App check{"the config file, checked on reload", "apollo11-node"};
    AddStartFlags(&check, &scratch);
    APOLLO11_RETURN_IF_ERROR(apollo11::cli::ApplyNodeConfigFile(check, f.config));
    APOLLO11_RETURN_IF_ERROR(apollo11::cli::CheckFlagsFitRole(check, f.role));
    auto rules = apollo11::alerts::LoadAlertRules(f.config);
    if (!rules.ok()) return rules.status();
    fresh.alert_rules = std::move(*rules);
  }
  return apollo11::cli::ResolveNodeConfig(fresh, env);
}

int Start(const NodeFlags& f) {
  apollo11::cli::SystemNodeEnv env;
  const std::string state_dir = apollo11::cli::NodeStateDir(
      f.state_dir, [&env](const std::string& name) { return env.Getenv(name); });
  apollo11::SetProcessLogNode(f.role != "worker"    ? apollo11::cli::CoordinatorLogNode()
                              : f.worker_id.empty() ? apollo11::cli::DefaultWorkerId(state_dir, env)
                                                    : f.worker_id);
  if (Status s = apollo11::cli::EnsureWritableStateDir(state_dir); !s.ok()) {
    std::fprintf(stderr, "apollo11-node: %s\n", s.message().c_str());
    return kExitInvalidInput;
  }
  if (Status s = apollo11::cli::SetUpLogging(apollo11::cli::ResolveNodeLog(f, env)); !s.ok()) {
    std::fprintf(stderr, "apollo11-node: %s\n", s.message().c_str());
    return kExitInvalidInput;
  }
  apollo11::InstallTerminateHandler();
  auto config = apollo11::cli::ResolveNodeConfig(f, env);
  if (!config.ok()) {
    apollo11::StderrPrintf(spdlog::level::err, "start_failed", "apollo11-node: %s\n",
                           config.status().message().c_str());
    return kExitInvalidInput;
  }
  // Taken by Node::Run in this thread; every actor thread inherits the
  // blocked mask (task processes get a clean one).
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGHUP);  // reload, never a kill
  apollo11::cli::BlockSignals(signals);

  apollo11::SystemClock clock;
  apollo11::cli::Node node(std::move(*config), &clock);
  if (Status s = node.Start(); !s.ok()) {
    PrintStartError(node.failed_stage(), s);
    return kExitInternal;
  }
  std::printf("%s\n", node.listening().dump().c_str());
  std::fflush(stdout);
  apollo11::cli::NotifyReady();
  apollo11::cli::Node::RunHooks hooks;
  hooks.reload = [&f, &env]() { return Reresolve(f, env); };
  hooks.reloaded = [] { apollo11::cli::NotifyReloaded(); };
  hooks.stopping = [] { apollo11::cli::NotifyStopping(); };
  return node.Run(signals, apollo11::Millis(200), hooks);
}

}  // namespace

int main(int argc, char** argv) {
  apollo11::FixMallocThresholds();  // freed run state goes back to the system
  // As in `apollo11`: a file size limit is an EFBIG error, not a kill.
  signal(SIGXFSZ, SIG_IGN);
  CLI::App app{"apollo11-node: runs Apollo-11 coordinator and worker actors", "apollo11-node"};
  app.option_defaults()->always_capture_default();  // --help shows every default
  app.set_version_flag("--version", apollo11::VersionText("apollo11-node"));
  app.require_subcommand(1);
  NodeFlags f;
  CLI::App* start = app.add_subcommand("start", "start the node's actors and serve until SIGTERM");
  AddStartFlags(start, &f);
  int exit_code = apollo11::cli::kExitOk;
  apollo11::cli::BindFlagEnvironment(start);
  start->callback([&] {
    const std::string config = apollo11::cli::NodeConfigPath(
        f.config, ::access(apollo11::cli::kDefaultNodeConfigFile, F_OK) == 0);
    if (!config.empty()) {
      Status s = apollo11::cli::ApplyNodeConfigFile(*start, config);
      if (!s.ok()) {
        std::fprintf(stderr, "apollo11-node: %s\n", s.message().c_str());
        exit_code = kExitInvalidInput;
        return;
      }
      auto rules = apollo11::alerts::LoadAlertRules(config);
      if (!rules.ok()) {
        std::fprintf(stderr, "apollo11-node: %s\n", rules.status().message().c_str());
        exit_code = kExitInvalidInput;
        return;
      }
      f.alert_rules = std::move(*rules);
      f.config = config;
    }
    if (start->get_option("--role")->count() == 0) {
      std::fprintf(stderr,
                   "apollo11-node: start needs --role: coordinator, worker or all (one box)\n");
      exit_code = kExitInvalidInput;
      return;
    }
    if (Status fits = apollo11::cli::CheckFlagsFitRole(*start, f.role); !fits.ok()) {
      std::fprintf(stderr, "apollo11-node: %s\n", fits.message().c_str());
      exit_code = kExitInvalidInput;
      return;
    }
    // Tasks inherit the node's environment and run as its user: a token
    // given on the command line or in the environment is blanked where
    // /proc shows them, and the node's /proc files and memory need root
    // (still one thread, so unsetenv is safe).
    apollo11::cli::ScrubSecrets(argc, argv, {"--api-token"},
                                {apollo11::cli::FlagEnvName("--api-token")});
    if (!apollo11::cli::MakeUndumpable()) {
      std::fprintf(stderr, "apollo11-node: could not make the process undumpable: %s\n",
                   std::strerror(errno));
    }
    exit_code = Start(f);
  });
  if (auto code = apollo11::cli::CheckSubcommand(app, argc, argv)) return *code;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? apollo11::cli::kExitOk : kExitInvalidInput;
  }
  return exit_code;
}
