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
// Settings come from flags, or the same keys in a YAML --config file (flags
// win). Logs go to stderr. On start one JSON line on stdout names the bound
// endpoints. SIGTERM or SIGINT: a worker drains (takes no new work, finishes
// and delivers what it holds, leaves with BYE), then the node exits 0.

#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <CLI/CLI.hpp>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "actors/coordinator.h"
#include "actors/worker_actor.h"
#include "alerts/alert_config.h"
#include "alerts/notifier.h"
#include "cli/coordinator_api.h"
#include "cli/logging_setup.h"
#include "cli/state_dir.h"
#include "cli/version.h"
#include "common/duration.h"
#include "common/log_event.h"
#include "observability/coordinator_metrics.h"
#include "observability/http_server.h"
#include "observability/worker_metrics.h"
#include "storage/journal.h"
#include "storage/state_dir_lock.h"
#include "transport/security.h"
#include "transport/zap_handler.h"

namespace {

using apollo11::Millis;
using apollo11::Status;

struct NodeFlags {
  std::string role = "all";
  std::string config;
  std::string state_dir;
  std::string bind = "tcp://127.0.0.1:7011";
  std::string api_bind = "tcp://127.0.0.1:7012";
  std::string connect = "tcp://127.0.0.1:7011";
  std::string group = "default";
  unsigned slots = 0;
  std::vector<std::string> labels;
  std::string heartbeat = "10s";
  std::string reconcile_interval = "30s";
  std::string retention = "off";          // coordinator: remove finished runs older than this
  std::string retention_interval = "1h";  // coordinator: how often retention runs
  std::string slow_min = "10s";
  int liveness = 3;
  size_t max_backlog = 1000;
  unsigned max_requeues = 3;
  std::string worker_id;
  std::string drain_timeout = "5m";
  std::string log_level = "info";
  std::string log_format;  // json, text; empty: text on a terminal, else json
  std::string health_interval = "60s";
  std::string curve_key;        // this node's key pair (.key)
  std::string authorized_keys;  // coordinator: public keys allowed to connect
  std::string server_key;       // worker: the coordinator's public key
  bool insecure = false;
  // "" = the role's default (coordinator/all: 127.0.0.1:8011; worker: off);
  // "off" = no HTTP server.
  std::string http_bind;
  std::string api_token;
  std::string api_token_file;
  std::string alert_fold_window = "60s";
  std::vector<apollo11::alerts::AlertRule> alert_rules;  // the config's `alerts:` list
};

inline constexpr const char* kDefaultCoordinatorHttp = "127.0.0.1:8011";

// The token from --api-token or --api-token-file (first line, trimmed).
apollo11::Result<std::string> LoadApiToken(const NodeFlags& f) {
  if (!f.api_token.empty() && !f.api_token_file.empty()) {
    return Status::InvalidInput("give --api-token or --api-token-file, not both");
  }
  std::string token = f.api_token;
  if (!f.api_token_file.empty()) {
    std::FILE* file = std::fopen(f.api_token_file.c_str(), "r");
    if (file == nullptr) {
      return Status::InvalidInput("--api-token-file " + f.api_token_file + ": " +
                                  std::strerror(errno));
    }
    char line[4096] = {0};
    if (std::fgets(line, sizeof(line), file) != nullptr) token = line;
    std::fclose(file);
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

// Applies `--config FILE` keys for every flag not given on the command line.
Status ApplyConfig(CLI::App& start, const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const std::exception& e) {
    return Status::InvalidInput("config " + path + ": " + e.what());
  }
  if (!root.IsMap()) return Status::InvalidInput("config " + path + ": expected a mapping");
  for (const auto& item : root) {
    const std::string key = item.first.as<std::string>();
    if (key == "alerts") continue;  // a list of rules, not a flag: LoadAlertRules
    CLI::Option* opt = nullptr;
    try {
      opt = start.get_option("--" + key);
    } catch (const CLI::OptionNotFound&) {
      return Status::InvalidInput("config " + path + ":" +
                                  std::to_string(item.first.Mark().line + 1) + ": unknown key '" +
                                  key + "'");
    }
    if (opt->count() > 0 || key == "config") continue;  // the command line wins
    try {
      if (item.second.IsSequence()) {
        for (const auto& v : item.second) opt->add_result(v.as<std::string>());
      } else {
        opt->add_result(item.second.as<std::string>());
      }
      opt->run_callback();
    } catch (const std::exception& e) {
      return Status::InvalidInput("config " + path + ": key '" + key + "': " + e.what());
    }
  }
  return Status::Ok();
}

// HOSTNAME-XXXX, XXXX from the state dir's absolute path: stable across
// restarts (so a restarted worker finds its outbox and rejoins as itself) and
// distinct for two workers on one host with their own state dirs; two with
// the same state dir are refused by the worker dir lock.
std::string DefaultWorkerId(const std::string& state_dir) {
  char host[256] = {0};
  ::gethostname(host, sizeof(host) - 1);
  std::error_code ec;
  std::string path = std::filesystem::absolute(state_dir, ec).lexically_normal().string();
  uint32_t h = 2166136261u;  // FNV-1a
  for (unsigned char c : path) h = (h ^ c) * 16777619u;
  char suffix[8];
  std::snprintf(suffix, sizeof(suffix), "%04x", h & 0xffffu);
  return std::string(host) + "-" + suffix;
}

// This node's log lines go to stderr and, as JSON, to its state dir:
// STATE_DIR/coordinator.log (coordinator and all), or
// STATE_DIR/worker-ID/worker.log (worker), where `apollo11 trace` finds them.
std::string NodeLogFile(const NodeFlags& f, const std::string& state_dir,
                        const std::string& worker_id) {
  if (f.role == "worker") return state_dir + "/worker-" + worker_id + "/worker.log";
  return state_dir + "/coordinator.log";
}

int Start(NodeFlags& f) {
  const std::string log_state_dir = apollo11::cli::ResolveStateDir(f.state_dir);
  const std::string log_worker_id =
      f.worker_id.empty() ? DefaultWorkerId(log_state_dir) : f.worker_id;
  {
    apollo11::SetProcessLogNode(f.role == "worker" ? log_worker_id
                                                   : apollo11::cli::CoordinatorLogNode());
    apollo11::cli::LogSettings log;
    log.level = f.log_level;
    log.format = f.log_format;
    log.file = NodeLogFile(f, log_state_dir, log_worker_id);
    Status s = apollo11::cli::SetUpLogging(log);
    if (!s.ok()) {
      std::fprintf(stderr, "apollo11-node: %s\n", s.message().c_str());
      return 2;
    }
  }
  auto heartbeat = apollo11::ParseDuration(f.heartbeat);
  auto drain_timeout = apollo11::ParseDuration(f.drain_timeout);
  auto reconcile = apollo11::ParseDuration(f.reconcile_interval);
  auto retention_interval = apollo11::ParseDuration(f.retention_interval);
  auto slow_min = apollo11::ParseDuration(f.slow_min);
  auto fold_window = apollo11::ParseDuration(f.alert_fold_window);
  auto health = apollo11::ParseDuration(f.health_interval);
  for (const auto* d : {&heartbeat, &drain_timeout, &reconcile, &retention_interval, &slow_min,
                        &fold_window, &health}) {
    if (!d->ok()) {
      std::fprintf(stderr, "apollo11-node: bad duration: %s\n", d->status().message().c_str());
      return 2;
    }
  }
  Millis retention{0};
  if (f.retention != "off") {
    auto age = apollo11::ParseAge(f.retention);
    if (!age.ok() || age->count() <= 0 || retention_interval->count() <= 0) {
      std::fprintf(stderr,
                   "apollo11-node: --retention %s: %s (write e.g. 30d, or off; the interval must "
                   "be positive)\n",
                   f.retention.c_str(),
                   age.ok() ? "must be longer than 0" : age.status().message().c_str());
      return 2;
    }
    retention = *age;
  }
  const bool coordinator = f.role == "coordinator" || f.role == "all";
  const bool worker = f.role == "worker" || f.role == "all";
  // CURVE: this node's key pair, the coordinator's allow-list, the worker's
  // trusted coordinator key.
  std::optional<apollo11::transport::CurveKeyPair> curve;
  apollo11::transport::AuthorizedKeys authorized;
  std::string server_public;
  if (!f.curve_key.empty()) {
    auto pair = apollo11::transport::LoadKeyPair(f.curve_key);
    if (!pair.ok()) {
      std::fprintf(stderr, "apollo11-node: --curve-key: %s\n", pair.status().message().c_str());
      return 2;
    }
    curve = *pair;
  }
  if (coordinator && curve) {
    if (f.authorized_keys.empty()) {
      std::fprintf(stderr,
                   "apollo11-node: --curve-key needs --authorized-keys (the public keys "
                   "of the workers and clients allowed to connect)\n");
      return 2;
    }
    auto keys = apollo11::transport::LoadAuthorizedKeys(f.authorized_keys);
    if (!keys.ok()) {
      std::fprintf(stderr, "apollo11-node: %s\n", keys.status().message().c_str());
      return 2;
    }
    authorized[apollo11::actors::kCurveDomain] = *keys;
    // role=all: the local worker authenticates with the node's own key.
    authorized[apollo11::actors::kCurveDomain].insert(curve->public_z85);
  }
  if (worker && !coordinator && curve) {
    if (f.server_key.empty()) {
      std::fprintf(stderr,
                   "apollo11-node: --curve-key needs --server-key (the coordinator's "
                   "public key) on a worker\n");
      return 2;
    }
    auto pub = apollo11::transport::LoadPublicKey(f.server_key);
    if (!pub.ok()) {
      std::fprintf(stderr, "apollo11-node: --server-key: %s\n", pub.status().message().c_str());
      return 2;
    }
    server_public = *pub;
  }
  if (coordinator && !curve && !f.insecure &&
      (!apollo11::transport::IsLoopbackEndpoint(f.bind) ||
       !apollo11::transport::IsLoopbackEndpoint(f.api_bind))) {
    std::fprintf(stderr,
                 "apollo11-node: refusing to bind a non-loopback address (%s, %s) without CURVE "
                 "keys; pass --insecure to accept unauthenticated peers on a trusted network\n",
                 f.bind.c_str(), f.api_bind.c_str());
    return 2;
  }

  const std::string http_bind =
      f.http_bind.empty() ? (coordinator ? kDefaultCoordinatorHttp : "off") : f.http_bind;
  auto api_token = LoadApiToken(f);
  if (!api_token.ok()) {
    std::fprintf(stderr, "apollo11-node: %s\n", api_token.status().message().c_str());
    return 2;
  }
  if (http_bind != "off") {
    auto hp = apollo11::observability::ParseHttpBind(http_bind);
    if (!hp.ok()) {
      std::fprintf(stderr, "apollo11-node: --http-bind: %s\n", hp.status().message().c_str());
      return 2;
    }
    if (!apollo11::observability::IsLoopbackHost(hp->host) && api_token->empty() && !f.insecure) {
      std::fprintf(stderr,
                   "apollo11-node: refusing to serve HTTP on a non-loopback address (%s) without "
                   "--api-token; pass --insecure to expose metrics and the read-only API to the "
                   "network\n",
                   http_bind.c_str());
      return 2;
    }
  }

  // Signals are taken by sigwait in this thread; every actor thread started
  // below inherits the blocked mask (task processes get a clean one).
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  const std::string state_dir = apollo11::cli::ResolveStateDir(f.state_dir);
  apollo11::SystemClock clock;
  zmq::context_t ctx;
  std::unique_ptr<apollo11::storage::StateDirLock> lock, worker_lock;
  std::unique_ptr<apollo11::storage::Journal> journal;
  // Declared before the coordinator, whose actors emit into it: on any early
  // return it is destroyed after them.
  std::unique_ptr<apollo11::alerts::Notifier> notifier;
  // Declared before the actors, so destroyed after them: metrics outlive the
  // actors that publish into them, whichever way this function returns.
  apollo11::observability::Registry registry;
  std::unique_ptr<apollo11::observability::CoordinatorMetrics> coord_metrics;
  std::unique_ptr<apollo11::observability::WorkerMetrics> worker_metrics;
  std::unique_ptr<apollo11::actors::Coordinator> coord;
  std::unique_ptr<apollo11::actors::WorkerActor> work;
  std::unique_ptr<apollo11::transport::ZapHandler> zap;
  // The HTTP server (and its API client) go first: they call the coordinator.
  std::unique_ptr<apollo11::cli::CoordinatorApi> api;
  std::unique_ptr<apollo11::observability::HttpServer> http;
  nlohmann::json listening = {{"event", "listening"}, {"role", f.role}, {"pid", ::getpid()}};

  if (coordinator) {
    auto l = apollo11::storage::StateDirLock::Acquire(state_dir);
    if (!l.ok()) {
      std::fprintf(stderr, "apollo11-node: %s\n", l.status().message().c_str());
      return 3;
    }
    lock = std::move(*l);
    auto j = apollo11::storage::Journal::Open(apollo11::cli::JournalDir(state_dir), {});
    if (!j.ok()) {
      std::fprintf(stderr, "apollo11-node: journal: %s\n", j.status().ToString().c_str());
      return 3;
    }
    journal = std::move(*j);
    auto epoch = journal->BumpEpoch();
    if (!epoch.ok()) {
      std::fprintf(stderr, "apollo11-node: %s\n", epoch.status().ToString().c_str());
      return 3;
    }
    if (curve) {
      // Without a ZAP handler a CURVE server admits any key pair.
      auto z = apollo11::transport::ZapHandler::Start(ctx, authorized);
      if (!z.ok()) {
        std::fprintf(stderr, "apollo11-node: ZAP handler: %s\n", z.status().ToString().c_str());
        return 3;
      }
      zap = std::move(*z);
    }
    if (!f.alert_rules.empty()) {
      apollo11::alerts::NotifierOptions no;
      no.rules = f.alert_rules;
      no.fold_window = *fold_window;
      auto n = apollo11::alerts::Notifier::Start(&clock, std::move(no));
      if (!n.ok()) {
        std::fprintf(stderr, "apollo11-node: %s\n", n.status().ToString().c_str());
        return 3;
      }
      notifier = std::move(*n);
      spdlog::info("alerts: {} rules, fold window {}", f.alert_rules.size(), f.alert_fold_window);
    }
    apollo11::actors::CoordinatorConfig cc;
    cc.alerts = notifier.get();
    cc.curve = curve;
    cc.instance = "node" + std::to_string(::getpid());
    cc.worker_endpoint = f.bind;
    cc.client_endpoint = f.api_bind;
    cc.epoch = *epoch;
    cc.scheduler.max_backlog = f.max_backlog;
    cc.scheduler.max_requeues = f.max_requeues;
    cc.scheduler.slow_min = *slow_min;
    cc.reconciler.heartbeat = *heartbeat;
    cc.reconciler.liveness = f.liveness;
    cc.reconcile_interval = *reconcile;
    cc.retention.older_than = retention;
    cc.retention.interval = *retention_interval;
    cc.retention.state_dir = state_dir;
    if (http_bind != "off") {  // nobody could read them otherwise
      coord_metrics = std::make_unique<apollo11::observability::CoordinatorMetrics>(registry);
      cc.metrics = coord_metrics.get();
    }
    cc.log_file = NodeLogFile(f, state_dir, log_worker_id);
    cc.health_interval = *health;
    auto c = apollo11::actors::Coordinator::Start(ctx, journal.get(), &clock, cc);
    if (!c.ok()) {
      std::fprintf(stderr, "apollo11-node: coordinator: %s\n", c.status().ToString().c_str());
      return 3;
    }
    coord = std::move(*c);
    if (retention.count() > 0) {
      spdlog::info("retention: runs finished more than {} ago are removed every {}", f.retention,
                   f.retention_interval);
    }
    listening["workers"] = coord->worker_endpoint();
    listening["api"] = coord->client_endpoint();
    listening["epoch"] = *epoch;
    const apollo11::actors::RecoveryReport& rec = coord->recovery();
    listening["recovered_runs"] = rec.runs;
    listening["recovered_running"] = rec.running;
    listening["recovery_ms"] = static_cast<double>(rec.elapsed_us) / 1000.0;
    spdlog::info("coordinator epoch {} serving workers on {} and clients on {}", *epoch,
                 coord->worker_endpoint(), coord->client_endpoint());
  }
  if (worker) {
    apollo11::actors::WorkerConfig wc;
    wc.coordinator_endpoint = coordinator ? coord->worker_endpoint() : f.connect;
    wc.worker.worker_id = log_worker_id;
    wc.worker.node_log_file = NodeLogFile(f, state_dir, log_worker_id);
    wc.worker.health_interval = *health;
    wc.worker.group = f.group;
    wc.worker.slots = f.slots ? f.slots : std::max(1u, std::thread::hardware_concurrency());
    wc.worker.labels = f.labels;
    wc.worker.heartbeat = *heartbeat;
    wc.worker.liveness = f.liveness;
    if (const char* drop = std::getenv("APOLLO11_TEST_DROP_DISPATCH")) {
      wc.worker.drop_dispatches = std::atoi(drop);  // fault injection for tests only
    }
    if (http_bind != "off") {
      worker_metrics = std::make_unique<apollo11::observability::WorkerMetrics>(registry);
      wc.worker.metrics = worker_metrics.get();
    }
    const std::string worker_dir = state_dir + "/worker-" + wc.worker.worker_id;
    // One process per worker identity: its outbox must not be shared.
    auto wl = apollo11::storage::StateDirLock::Acquire(worker_dir);
    if (!wl.ok()) {
      std::fprintf(stderr, "apollo11-node: worker %s: %s\n", wc.worker.worker_id.c_str(),
                   wl.status().message().c_str());
      return 3;
    }
    worker_lock = std::move(*wl);
    wc.executor.log_dir = worker_dir + "/logs";
    wc.outbox_dir = worker_dir + "/outbox";
    if (curve) {
      wc.curve = curve;
      wc.server_public = coordinator ? curve->public_z85 : server_public;
    }
    std::error_code ec;
    std::filesystem::create_directories(wc.executor.log_dir, ec);
    auto w = apollo11::actors::WorkerActor::Start(ctx, &clock, wc);
    if (!w.ok()) {
      std::fprintf(stderr, "apollo11-node: worker: %s\n", w.status().ToString().c_str());
      return 3;
    }
    work = std::move(*w);
    listening["worker_id"] = wc.worker.worker_id;
    listening["connect"] = wc.coordinator_endpoint;
    spdlog::info("worker {} (group {}, {} slots) connected to {}", wc.worker.worker_id,
                 wc.worker.group, wc.worker.slots, wc.coordinator_endpoint);
  }
  if (http_bind != "off") {
    apollo11::observability::HttpServerOptions ho;
    ho.bind = http_bind;
    ho.api_token = *api_token;
    ho.registry = &registry;
    if (coordinator) {
      api = std::make_unique<apollo11::cli::CoordinatorApi>(
          coord->client_endpoint(), curve, curve ? curve->public_z85 : "", Millis(10000));
      ho.backend = api.get();
      // Ready once the scheduler answers and its last commit succeeded.
      ho.ready = [&api](std::string* why) {
        auto health = api->Query("health", "", 0);
        if (!health.ok()) {
          *why = health.status().message();
          return false;
        }
        if (!health->value("ready", false)) {
          *why = "the coordinator is starting";
          return false;
        }
        if (!health->value("journal_writable", false)) {
          *why = "the journal cannot be written (see the log: disk full?)";
          return false;
        }
        return true;
      };
    }
    auto h = apollo11::observability::HttpServer::Start(std::move(ho));
    if (!h.ok()) {
      std::fprintf(stderr, "apollo11-node: http: %s\n", h.status().ToString().c_str());
      if (work) work->Stop();
      if (coord) coord->Stop();
      return 3;
    }
    http = std::move(*h);
    listening["http"] = http->bound();
    spdlog::info("serving HTTP on {} (mutating API calls {})", http->bound(),
                 api_token->empty() ? "disabled: no --api-token" : "need the bearer token");
  }
  std::printf("%s\n", listening.dump().c_str());
  std::fflush(stdout);

  int sig = 0;
  sigwait(&signals, &sig);
  spdlog::info("{} received: shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
  if (http) http->Stop();
  http.reset();
  api.reset();
  if (work) {
    bool drained = work->Drain(Millis(drain_timeout->count()));
    if (drained) {
      spdlog::info("worker drained: every execution finished and acknowledged");
    } else {
      spdlog::warn("worker stopped before draining completely (timeout {})", f.drain_timeout);
    }
    work.reset();
  }
  if (coord) coord->Stop();
  coord.reset();
  notifier.reset();  // after its producers; delivers what is still folded
  zap.reset();       // after the CURVE servers it protects are closed
  journal.reset();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"apollo11-node: runs Apollo-11 coordinator and worker actors"};
  app.set_version_flag("--version", std::string("apollo11-node ") + apollo11::kVersion);
  app.require_subcommand(1);
  NodeFlags f;
  CLI::App* start = app.add_subcommand("start", "start the node's actors and serve until SIGTERM");
  start->add_option("--role", f.role, "coordinator, worker or all (one box)")
      ->check(CLI::IsMember({"coordinator", "worker", "all"}));
  start->add_option("--config", f.config, "YAML file with the same keys as these flags");
  start->add_option("--state-dir", f.state_dir,
                    "journal and logs (default $APOLLO11_STATE_DIR or ./.apollo11)");
  start->add_option("--bind", f.bind, "coordinator: endpoint workers connect to");
  start->add_option("--api-bind", f.api_bind, "coordinator: endpoint clients connect to");
  start->add_option("--connect", f.connect, "worker: the coordinator's worker endpoint");
  start->add_option("--group", f.group, "worker group");
  start->add_option("--slots", f.slots, "worker: tasks run at once (default: cores)");
  start->add_option("--labels", f.labels, "worker labels")->delimiter(',');
  start->add_option("--heartbeat", f.heartbeat, "heartbeat interval");
  start->add_option("--reconcile-interval", f.reconcile_interval,
                    "coordinator: how often workers are asked what they run");
  start->add_option("--slow-min", f.slow_min,
                    "coordinator: least running time before an execution is flagged slow (it "
                    "also needs 5x its task's P50)");
  start->add_option("--liveness", f.liveness, "missed heartbeats before a peer is lost")
      ->check(CLI::PositiveNumber);
  start
      ->add_option("--max-backlog", f.max_backlog,
                   "READY+RUNNING executions before promotion pauses")
      ->check(CLI::PositiveNumber);
  start->add_option("--max-requeues", f.max_requeues,
                    "coordinator: requeues after worker loss before a task FAILS");
  start->add_option("--retention", f.retention,
                    "coordinator: remove runs finished longer ago than this (e.g. 30d) with "
                    "their history and local logs; default off");
  start->add_option("--retention-interval", f.retention_interval,
                    "coordinator: how often retention runs (default 1h; first at start)");
  start->add_option("--worker-id", f.worker_id,
                    "worker identity (default HOSTNAME-XXXX, stable for a state dir)");
  start->add_option("--drain-timeout", f.drain_timeout,
                    "how long SIGTERM waits for a worker to drain");
  start->add_option("--log-level", f.log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  start->add_option("--health-interval", f.health_interval,
                    "how often a health line is logged (0s: never)");
  start
      ->add_option("--log-format", f.log_format,
                   "stderr log format: json or text (default: text on a terminal, else json)")
      ->check(CLI::IsMember({"json", "text"}));
  start->add_option("--curve-key", f.curve_key, "this node's CURVE key pair (apollo11 keygen)");
  start->add_option("--authorized-keys", f.authorized_keys,
                    "coordinator: file of public keys allowed to connect");
  start->add_option("--server-key", f.server_key, "worker: the coordinator's public key file");
  start->add_flag("--insecure", f.insecure,
                  "allow binding non-loopback addresses without CURVE (or HTTP without a token)");
  start->add_option("--http-bind", f.http_bind,
                    "HOST:PORT for /metrics, /healthz, /readyz and the JSON API, or off "
                    "(default: 127.0.0.1:8011 with a coordinator, off on a worker)");
  start->add_option("--api-token", f.api_token,
                    "bearer token for mutating HTTP API calls (without one they are refused)");
  start->add_option("--api-token-file", f.api_token_file, "file holding the API token");
  start->add_option("--alert-fold-window", f.alert_fold_window,
                    "coordinator: repeats of an alert within it are delivered once, with a count");
  int exit_code = 0;
  start->callback([&] {
    if (!f.config.empty()) {
      Status s = ApplyConfig(*start, f.config);
      if (!s.ok()) {
        std::fprintf(stderr, "apollo11-node: %s\n", s.message().c_str());
        exit_code = 2;
        return;
      }
      auto rules = apollo11::alerts::LoadAlertRules(f.config);
      if (!rules.ok()) {
        std::fprintf(stderr, "apollo11-node: %s\n", rules.status().message().c_str());
        exit_code = 2;
        return;
      }
      f.alert_rules = std::move(*rules);
    }
    exit_code = Start(f);
  });
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : 2;
  }
  return exit_code;
}
