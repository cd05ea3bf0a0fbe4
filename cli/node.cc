#include "cli/node.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>
#include <filesystem>

#include "cli/exit_codes.h"
#include "cli/state_dir.h"
#include "cli/version.h"
#include "executor/task_inputs.h"
#include "ha/not_leader.h"
#include "observability/process_metrics.h"

namespace apollo11::cli {
namespace {

// The version and git commit /metrics reports as apollo11_build_info: the
// one place that reads them.
void AddBuildInfo(observability::Registry& registry) {
  observability::AddBuildInfo(registry, kVersion, GitCommit());
}

}  // namespace

Node::Node(NodeConfig config, const Clock* clock) : config_(std::move(config)), clock_(clock) {
  listening_ = {{"event", "listening"}, {"role", config_.role}, {"pid", ::getpid()}};
}

Node::~Node() { Stop(/*drain=*/false); }

Status Node::Fail(NodeStage stage, Status status) {
  failed_stage_ = stage;
  Stop(/*drain=*/false);
  return status;
}

Status Node::OpenState() {
  failed_stage_ = NodeStage::kNone;
  if (!config_.coordinator || journal_) return Status::Ok();
  auto lock = storage::StateDirLock::Acquire(config_.state_dir);
  if (!lock.ok()) return Fail(NodeStage::kLock, lock.status());
  lock_ = std::move(*lock);
  auto journal = storage::Journal::Open(JournalDir(config_.state_dir), {});
  if (!journal.ok()) return Fail(NodeStage::kJournal, journal.status());
  journal_ = std::move(*journal);
  return Status::Ok();
}

Status Node::StartActors() {
  APOLLO11_RETURN_IF_ERROR(OpenState());
  if (config_.coordinator && !config_.replication.follow.empty()) {
    // A static standby: the follower instead of a coordinator.
    const std::vector<std::string>& peers = config_.replication.peers;
    Status followed = StartFollower(config_.replication.follow, peers.empty() ? "" : peers.front());
    if (!followed.ok()) return Fail(NodeStage::kReplication, followed);
  } else if (config_.coordinator) {
    APOLLO11_RETURN_IF_ERROR(StartCoordinator());
    if (Status otlp = StartOtlp(); !otlp.ok()) return Fail(NodeStage::kCoordinator, otlp);
  }
  if (config_.worker) APOLLO11_RETURN_IF_ERROR(StartWorker());
  if (config_.http_bind != "off") {
    if (Status oidc = StartOidc(); !oidc.ok()) return Fail(NodeStage::kHttp, oidc);
    APOLLO11_RETURN_IF_ERROR(StartHttp());
  }
  return Status::Ok();
}

Status Node::StartCoordinator() {
  // election: with HA the epoch is a term's, journaled when it is won.
  auto epoch = config_.ha.enabled() ? journal_->Epoch() : journal_->BumpEpoch();
  if (!epoch.ok()) return Fail(NodeStage::kEpoch, epoch.status());
  epoch_ = *epoch;
  if (!config_.authorized.empty()) {
    // Without a ZAP handler a CURVE server admits any key pair.
    auto zap = transport::ZapHandler::Start(ctx_, config_.authorized, config_.key_roles);
    if (!zap.ok()) return Fail(NodeStage::kZap, zap.status());
    zap_ = std::move(*zap);
    size_t unstated = 0;
    for (const auto& [key, roles] : config_.key_roles) {
      unstated += roles == transport::kRolesUnstated ? 1 : 0;
    }
    if (unstated > 1) {  // the node's own key is one
      spdlog::warn(
          "{} authorized keys have no role and may act as both worker and admin; write "
          "'worker KEY', 'reader KEY', 'client KEY' or 'admin KEY' (docs/operations.md, key roles)",
          unstated - 1);
    }
  }
  auto notifier = StartNotifier(config_.alert_rules);
  if (!notifier.ok()) return Fail(NodeStage::kNotifier, notifier.status());
  alerts_.Swap(std::move(*notifier));
  // Static replication: the leader's actor observes the commits of the
  // coordinator started next. With --ha-etcd the coordinator starts as a
  // standby, and SyncHaRole starts replication with the role it is given.
  Status replicating =
      config_.ha.enabled() ? ProbeReplicationBind() : StartReplicationLeader(epoch_);
  if (!replicating.ok()) return Fail(NodeStage::kReplication, replicating);
  if (config_.http_bind != "off") {  // nobody could read them otherwise
    coordinator_metrics_ = std::make_unique<observability::CoordinatorMetrics>(registry_);
  }
  if (config_.ha.enabled()) StartHa();
  Status started = StartCoordinatorActors(config_.ha.enabled(), epoch_);
  if (!started.ok()) return Fail(NodeStage::kCoordinator, started);
  if (config_.coordinator_config.retention.older_than.count() > 0) {
    spdlog::info("retention: runs finished more than {} ago are removed every {}",
                 config_.retention_text, config_.retention_interval_text);
  }
  if (config_.coordinator_config.retention.audit_older_than.count() > 0) {
    spdlog::info("retention: audit records older than {} are removed every {}",
                 config_.audit_retention_text, config_.retention_interval_text);
  }
  listening_["workers"] = coordinator_->worker_endpoint();
  listening_["api"] = coordinator_->client_endpoint();
  listening_["epoch"] = epoch_;
  const actors::RecoveryReport& rec = coordinator_->recovery();
  listening_["recovered_runs"] = rec.runs;
  listening_["recovered_running"] = rec.running;
  listening_["recovery_ms"] = static_cast<double>(rec.elapsed_us) / 1000.0;
  spdlog::info("coordinator epoch {} serving workers on {} and clients on {}", epoch_,
               coordinator_->worker_endpoint(), coordinator_->client_endpoint());
  return Status::Ok();
}

Status Node::StartCoordinatorActors(bool standby, uint64_t epoch) {
  actors::CoordinatorConfig cc = config_.coordinator_config;
  cc.alerts = &alerts_;
  if (cc.instance.empty()) cc.instance = "node" + std::to_string(::getpid());
  cc.epoch = epoch;
  cc.metrics = coordinator_metrics_.get();
  cc.ha = ha_board_.get();
  cc.standby = standby;
  if (!test_faults_) {
    auto faults = TestFaultPort(config_.test_fault);  // checked by ResolveNodeConfig
    if (!faults.ok()) return faults.status();
    test_faults_ = std::move(*faults);
  }
  cc.faults = test_faults_.get();
  cc.watchers = &watchers_;
  auto coordinator = actors::Coordinator::Start(ctx_, journal_.get(), clock_, std::move(cc));
  if (!coordinator.ok()) return coordinator.status();
  coordinator_ = std::move(*coordinator);
  coordinator_standby_ = standby;
  serving_leader_.store(!standby);  // Start returns once recovered
  return Status::Ok();
}

Status Node::StartWorker() {
  actors::WorkerConfig wc = config_.worker_config;
  if (coordinator_) wc.coordinator_endpoint = coordinator_->worker_endpoint();
  if (config_.http_bind != "off") {
    worker_metrics_ = std::make_unique<observability::WorkerMetrics>(registry_);
    wc.worker.metrics = worker_metrics_.get();
  }
  if (!config_.worker_lock_dir.empty()) {
    // One process per worker identity: its outbox must not be shared.
    auto lock = storage::StateDirLock::Acquire(config_.worker_lock_dir);
    if (!lock.ok()) {
      return Fail(NodeStage::kWorkerLock,
                  Status::Error(lock.status().code(),
                                "worker " + wc.worker.worker_id + ": " + lock.status().message()));
    }
    worker_lock_ = std::move(*lock);
  }
  std::error_code ec;
  std::filesystem::create_directories(wc.executor.log_dir, ec);
  if (wc.executor.inputs_dir.empty()) {
    wc.executor.inputs_dir =
        executor::TaskInputs::DefaultRoot(std::filesystem::path(wc.outbox_dir).parent_path());
  }
  // What a killed predecessor left; the worker's lock makes the directory ours.
  executor::TaskInputs::ClearRoot(wc.executor.inputs_dir);
  const std::string id = wc.worker.worker_id, group = wc.worker.group;
  const std::string endpoint = wc.coordinator_endpoint;
  const unsigned slots = wc.worker.slots;
  auto worker = actors::WorkerActor::Start(ctx_, clock_, std::move(wc));
  if (!worker.ok()) return Fail(NodeStage::kWorker, worker.status());
  worker_ = std::move(*worker);
  listening_["worker_id"] = id;
  listening_["connect"] = endpoint;
  spdlog::info("worker {} (group {}, {} slots) connected to {}", id, group, slots, endpoint);
  return Status::Ok();
}

namespace {

// Who may call the HTTP API, for the start's log line.
std::string HttpAccessSummary(const NodeConfig& c) {
  if (c.oidc.enabled()) {
    return "single sign-on through " + c.oidc.issuer + " (audience " + c.oidc.audience + ", " +
           std::to_string(c.oidc.group_roles.size()) + " group mappings" +
           (c.oidc_sign_in.client_id.empty()
                ? std::string()
                : "; the dashboard signs in as client " + c.oidc_sign_in.client_id) +
           ")" +
           (c.api_tokens ? ", and " + std::to_string(c.api_tokens->size()) + " principals from " +
                               c.api_tokens_file
                         : std::string()) +
           "; callers without a token may do nothing";
  }
  if (c.api_tokens) {
    return std::to_string(c.api_tokens->size()) + " principals from " + c.api_tokens_file +
           "; callers without a token may do nothing";
  }
  return c.api_token.empty() ? "no API tokens: callers may read, nobody may change anything"
                             : "--api-token: its bearer is admin; callers without it may read";
}

}  // namespace

Status Node::StartHttp() {
  AddBuildInfo(registry_);
  observability::AddProcessMetrics(registry_);
  AddReplicationMetrics();
  observability::HttpServerOptions ho;
  ho.bind = config_.http_bind;
  FillHttpAccess(&ho);
  ho.registry = &registry_;
  ho.node_info = {{"role", config_.role}, {"epoch", epoch_}};
  if (ha_board_) {
    const ha::RoleBoard* board = ha_board_.get();
    ho.health = [this, board] {
      const ha::RoleState s = board->Current();
      // Elected, and the coordinator not yet restarted as leader: requests
      // still meet the standby's actors, so this node does not say "leader".
      const bool starting = s.role == ha::Role::kLeader && !serving_leader_.load();
      return nlohmann::json{{"role", starting ? "starting" : ha::RoleName(s.role)},
                            {"epoch", s.epoch},
                            {"leader", s.leader.name},
                            {"leader_api", s.leader.client_endpoint}};
    };
    ho.resign = [this, board] {
      if (board->role() != ha::Role::kLeader) {
        return Status::Error(StatusCode::kNotLeader,
                             ha::NotLeaderReply(board->Current().leader.client_endpoint));
      }
      ResignLeadership();
      return Status::Ok();
    };
  }
  if (coordinator_) {
    // Every coordinator answers GET /api/cluster: {"ha": false, ...} without HA.
    ho.cluster = [this] { return ClusterJson(); };
    const auto& curve = config_.coordinator_config.curve;
    api_ = std::make_unique<CoordinatorApi>(coordinator_->client_endpoint(), curve,
                                            curve ? curve->public_z85 : "", Millis(10000));
    ho.backend = api_.get();
    // Its long polls wait up to a second: a timeout well above that.
    feed_api_ = std::make_unique<CoordinatorApi>(coordinator_->client_endpoint(), curve,
                                                 curve ? curve->public_z85 : "", Millis(5000));
    ho.feed_backend = feed_api_.get();
    ho.recent_alerts = [history = &alert_history_](uint32_t limit) {
      return history->RecentJson(limit);
    };
    // Ready once the scheduler answers and its last commit succeeded (and,
    // with HA, while this coordinator leads).
    ho.ready = [this, api = api_.get(), board = ha_board_.get()](std::string* why) {
      if (board != nullptr && board->role() != ha::Role::kLeader) {
        *why = "standby: " + ha::NotLeaderReply(board->Current().leader.client_endpoint);
        return false;
      }
      if (board != nullptr && !serving_leader_.load()) {
        *why = "elected leader: the coordinator is restarting as leader";
        return false;
      }
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
  auto http = observability::HttpServer::Start(std::move(ho));
  if (!http.ok()) return Fail(NodeStage::kHttp, http.status());
  http_ = std::move(*http);
  listening_["http"] = http_->bound();
  spdlog::info("serving {} on {} ({})", http_->tls() ? "HTTPS" : "HTTP", http_->bound(),
               HttpAccessSummary(config_));
  return Status::Ok();
}

std::optional<Status> Node::CoordinatorFailure() const {
  if (!coordinator_) return std::nullopt;
  std::optional<std::string> failure = coordinator_->failure();
  if (!failure) return std::nullopt;
  return Status::Internal(*failure);
}

std::optional<Status> Node::WorkerFailure() const {
  if (!worker_) return std::nullopt;
  std::optional<std::string> failure = worker_->failure();
  if (!failure) return std::nullopt;
  return Status::Internal(*failure);
}

std::optional<Status> Node::ActorFailure() const {
  if (ha_failure_) return ha_failure_;
  if (std::optional<Status> failure = CoordinatorFailure()) return failure;
  if (std::optional<Status> failure = WorkerFailure()) return failure;
  // Without its ZAP handler a CURVE server admits any key; without its HTTP
  // thread /healthz and /metrics go silent: either is a node to stop.
  if (zap_) {
    if (std::optional<std::string> failure = zap_->failure()) return Status::Internal(*failure);
  }
  if (http_) {
    if (std::optional<std::string> failure = http_->failure()) return Status::Internal(*failure);
  }
  for (const FailureSource& source : failure_sources_) {
    if (std::optional<Status> failure = source()) return failure;
  }
  return std::nullopt;
}

Result<std::unique_ptr<alerts::Notifier>> Node::StartNotifier(
    const std::vector<alerts::AlertRule>& rules) {
  // Started even without rules: a pipeline's own `alerts:` travel on its events.
  alerts::NotifierOptions no;
  no.rules = rules;
  no.fold_window = config_.alert_fold_window;
  no.history = &alert_history_;
  auto notifier = alerts::Notifier::Start(clock_, std::move(no));
  if (!notifier.ok()) return notifier.status();
  spdlog::info("alerts: {} rules, fold window {}", rules.size(), config_.alert_fold_window_text);
  return std::move(*notifier);
}

int Node::Run(const sigset_t& signals, Millis poll, const RunHooks& hooks) {
  if (elector_thread_) poll = std::min(poll, Millis(50));  // follow role changes promptly
  const timespec wait{static_cast<time_t>(poll.count() / 1000),
                      static_cast<long>((poll.count() % 1000) * 1000000)};
  for (;;) {
    siginfo_t info{};
    const int sig = sigtimedwait(&signals, &info, &wait);
    if (sig == SIGHUP) {
      spdlog::info("SIGHUP received: reloading the log file, alert rules and authorized keys");
      Result<NodeConfig> fresh =
          hooks.reload ? hooks.reload() : Result<NodeConfig>(Status::NotFound("nothing to reload"));
      if (fresh.ok()) {
        Reload(*fresh);
      } else {
        spdlog::error("reload failed, keeping the running configuration: {}",
                      fresh.status().message());
      }
      RecordReload(fresh.ok(),
                   fresh.ok()
                       ? "the configuration was re-read (each part's result is in the "
                         "node's log)"
                       : "refused, the running configuration stays: " + fresh.status().message(),
                   info.si_pid);
      if (hooks.reloaded) hooks.reloaded();
      continue;
    }
    if (sig > 0) {
      spdlog::info("{} received: shutting down", sig == SIGTERM ? "SIGTERM" : "SIGINT");
      if (hooks.stopping) hooks.stopping();
      Stop(/*drain=*/true);
      return kExitOk;
    }
    SyncHaRole();
    if (std::optional<Status> failure = ActorFailure()) {
      spdlog::error("an actor died: {}; stopping the node", failure->ToString());
      if (hooks.stopping) hooks.stopping();
      Stop(/*drain=*/false);
      return kExitInternal;
    }
  }
}

void Node::Reload(const NodeConfig& fresh) {
  LogSettings log;
  log.file = config_.log_file;
  log.level = fresh.log_level;
  if (Status s = ReopenLogFile(log); !s.ok()) {
    spdlog::error("reload: log file {} not reopened: {}", config_.log_file, s.message());
  } else {
    spdlog::info("reload: log file {} reopened", config_.log_file);
  }
  if (coordinator_) ReloadAlerts(fresh);
  if (zap_) ReloadKeys(fresh);
  if (http_) ReloadApiTokens(fresh);
  if (http_) ReloadTls();
  if (oidc_) {
    Status keys = oidc_->Refresh();
    if (!keys.ok())
      spdlog::warn("reload: the single sign-on keys were not read: {}", keys.message());
  }
}

void Node::ReloadAlerts(const NodeConfig& fresh) {
  auto notifier = StartNotifier(fresh.alert_rules);
  if (!notifier.ok()) {
    spdlog::error("reload: alert rules not replaced: {}", notifier.status().message());
    return;
  }
  std::unique_ptr<alerts::Notifier> old = alerts_.Swap(std::move(*notifier));
  old.reset();  // delivers what it still holds
  config_.alert_rules = fresh.alert_rules;
  spdlog::info("reload: {} alert rules in force", fresh.alert_rules.size());
}

void Node::ReloadTls() {
  if (!http_->tls()) return;
  auto served = http_->ReloadTls();
  if (!served.ok()) {
    spdlog::error("reload: the HTTPS certificate was not replaced, the old one is still served: {}",
                  served.status().message());
    return;
  }
  spdlog::info("reload: HTTPS serves {}", *served);
}

void Node::ReloadApiTokens(const NodeConfig& fresh) {
  if (config_.api_tokens.has_value() != fresh.api_tokens.has_value()) {
    spdlog::error(
        "reload: --api-tokens was {} at start and is {} now: a restart changes that; "
        "keeping the running principals",
        config_.api_tokens ? "given" : "not given", fresh.api_tokens ? "given" : "not");
    return;
  }
  if (!fresh.api_tokens) return;
  http_->SetApiTokens(*fresh.api_tokens);
  spdlog::info("reload: {} API token principals in force from {}", fresh.api_tokens->size(),
               fresh.api_tokens_file);
}

void Node::ReloadKeys(const NodeConfig& fresh) {
  if (fresh.authorized.empty()) {
    spdlog::error("reload: the new configuration has no authorized keys; keeping the old ones");
    return;
  }
  if (Status s = zap_->SetAuthorizedKeys(fresh.authorized, fresh.key_roles); !s.ok()) {
    spdlog::error("reload: authorized keys not replaced: {}", s.message());
    return;
  }
  config_.authorized = fresh.authorized;
  config_.key_roles = fresh.key_roles;
  size_t keys = 0;
  for (const auto& [domain, set] : fresh.authorized) keys += set.size();
  spdlog::info("reload: {} authorized keys with their roles in force (the node's own included)",
               keys);
}

void Node::Stop(bool drain) {
  if (http_) http_->Stop();
  http_.reset();
  api_.reset();
  feed_api_.reset();
  if (worker_) {
    if (drain) {
      if (worker_->Drain(config_.drain_timeout)) {
        spdlog::info("worker drained: every execution finished and acknowledged");
      } else {
        spdlog::warn("worker stopped before draining completely (timeout {})",
                     config_.drain_timeout_text);
      }
    } else {
      worker_->Stop();
    }
    worker_.reset();
  }
  otlp_.reset();  // sends what it holds for a few seconds
  otlp_api_.reset();
  // election: hand leadership over first; the board then says standby and
  // the coordinator sends workers nothing more.
  if (elector_thread_) elector_thread_->Stop();
  if (coordinator_) coordinator_->Stop();
  coordinator_.reset();
  StopReplication();      // after the coordinator that commits through it
  alerts_.Swap(nullptr);  // after its producers; delivers what is still folded
  zap_.reset();           // after the CURVE servers it protects are closed
}

void BlockSignals(const sigset_t& signals) { pthread_sigmask(SIG_BLOCK, &signals, nullptr); }

}  // namespace apollo11::cli
