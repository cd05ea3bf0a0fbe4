#pragma once
// A node: the one place a process assembles Apollo-11's parts. Built from a
// NodeConfig, it owns the state dir lock, the journal, the alert notifier,
// the metrics, the coordinator's actors, a worker actor, the ZAP handler and
// the HTTP server, and stops them in the right order. `apollo11-node start`
// and `apollo11 run` are thin mains over it.
//
// Threads: every method is called from the thread that created the node.

#include <signal.h>

#include <atomic>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "actors/coordinator.h"
#include "actors/worker_actor.h"
#include "alerts/alert_history.h"
#include "alerts/notifier.h"
#include "cli/coordinator_api.h"
#include "cli/node_config.h"
#include "cli/swappable_alert_sink.h"
#include "cli/test_faults.h"
#include "common/clock.h"
#include "common/mutex.h"
#include "ha/elector_thread.h"
#include "ha/etcd_client.h"
#include "ha/ha_elector.h"
#include "ha/role_board.h"
#include "ha/role_change.h"
#include "observability/coordinator_metrics.h"
#include "observability/http_server.h"
#include "observability/metrics_registry.h"
#include "observability/otlp_exporter.h"
#include "observability/worker_metrics.h"
#include "replication/replication_leader.h"
#include "replication/replication_standby.h"
#include "replication/replication_status.h"
#include "storage/journal.h"
#include "storage/state_dir_lock.h"
#include "transport/zap_handler.h"

namespace apollo11::cli {

// Which step of starting a node failed (Node::failed_stage), so each main
// words the error its own way.
enum class NodeStage {
  kNone,
  kLock,         // the state dir is locked by another process
  kJournal,      // the journal does not open
  kEpoch,        // the coordinator epoch cannot be bumped
  kZap,          // the ZAP handler does not start
  kNotifier,     // the alert notifier does not start
  kCoordinator,  // the coordinator's actors do not start
  kWorkerLock,   // the worker's own dir is locked by another process
  kWorker,       // the worker actor does not start
  kHttp,         // the HTTP server does not bind
  kHa,           // election: the term or the coordinator of a new role does not start
  kReplication,  // the replication link does not bind or connect
};

class Node {
 public:
  // `clock` must outlive the node.
  Node(NodeConfig config, const Clock* clock);
  // Stops whatever still runs, in reverse order of start.
  ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // Takes the state dir lock and opens the journal (a coordinator's first
  // step; a worker-only node has neither). Between OpenState and
  // StartActors the journal may be read (`apollo11 run` checks what it
  // resumes). On error, failed_stage() says which step.
  Status OpenState();
  // Bumps the epoch and starts the ZAP handler, notifier, coordinator,
  // worker and HTTP server as configured (calls OpenState first if it was
  // not called). On error, what started is stopped and failed_stage() says
  // which step failed.
  Status StartActors();
  // OpenState then StartActors.
  Status Start() { return StartActors(); }

  // Reports an actor that died (its reason), or nullopt while all live.
  using FailureSource = std::function<std::optional<Status>()>;
  // Adds a source ActorFailure consults besides the node's own actors;
  // called on the node's thread.
  void AddFailureSource(FailureSource source) { failure_sources_.push_back(std::move(source)); }
  // The first dead actor reported by the coordinator, the worker, the ZAP
  // handler, the HTTP server or an added source, with its reason; nullopt
  // while all live.
  std::optional<Status> ActorFailure() const;
  // Serves until one of `signals` arrives (those signals must be blocked in
  // every thread, see BlockSignals) or an actor fails, checking every
  // `poll`, then stops. Returns kExitOk after a signal (a worker drains
  // first, up to the drain timeout), kExitInternal after an actor failure,
  // which is logged with its reason.
  // What Run does besides serving, all called on the node's thread.
  struct RunHooks {
    // On SIGHUP (when it is in `signals`): the configuration to reload
    // from (its log file, alert rules and authorized keys with their
    // roles; see Reload), or why there is none (the running one is kept).
    std::function<Result<NodeConfig>()> reload;
    // After a SIGHUP was handled, whether or not the reload succeeded.
    std::function<void()> reloaded;
    // Once a stopping signal arrived, before the node stops.
    std::function<void()> stopping;
  };
  int Run(const sigset_t& signals, Millis poll = Millis(200), const RunHooks& hooks = {});
  // Applies what may change without a restart from `fresh` (resolved from
  // the same flags): reopens the log file, replaces the alert rules
  // (the old notifier delivers what it holds) and the authorized keys with
  // their roles. Logs what it reloaded; a step that fails is logged and
  // leaves that part as it was. Never stops the node.
  void Reload(const NodeConfig& fresh);
  // A coordinator's reload in the audit trail (node_audit.cc): principal
  // "local" (whoever may signal the process), transport "signal", from
  // `sender` (the signal's pid). Sent to this node's coordinator, which
  // passes a standby's on to the leader; waits at most a few seconds, and
  // a failure is logged, not fatal. Nothing on a worker-only node.
  void RecordReload(bool ok, const std::string& outcome, pid_t sender);
  // Stops the actors: HTTP first, then the worker (draining when `drain`,
  // else at once), the coordinator, the notifier (delivering what it holds),
  // ZAP. The journal stays open for reading and the locks stay held until
  // the node is destroyed. Idempotent.
  void Stop(bool drain);

  // The failed step of the last OpenState/StartActors; kNone after success.
  NodeStage failed_stage() const { return failed_stage_; }
  // The journal (null before OpenState or on a worker-only node). Readable
  // on the caller's thread while the coordinator runs.
  storage::Journal* journal() const { return journal_.get(); }
  actors::Coordinator* coordinator() const { return coordinator_.get(); }
  // The ZeroMQ context of the node's sockets: an in-process client of an
  // inproc:// endpoint connects in it. Lives as long as the node.
  zmq::context_t& context() { return ctx_; }
  uint64_t epoch() const { return epoch_; }
  // Replication as this node sees it (role "" without replication): for
  // `apollo11 cluster`, /api/cluster and logs. Any thread while it runs.
  replication::ReplicationStatus replication_status() const;
  const NodeConfig& config() const { return config_; }
  // The "listening" line: role, pid, endpoints, epoch, recovery, worker id,
  // HTTP address, as far as they apply.
  const nlohmann::json& listening() const { return listening_; }
  // election: the node's HA role (null without --ha-etcd). Lives as long as
  // the node.
  const ha::RoleView* ha_role() const { return ha_board_.get(); }
  // election: asks this leader to hand leadership over (no-op on a standby
  // or without HA). Any thread.
  void ResignLeadership();
  // election: /api/cluster's document: this node's role, the leader, the
  // epoch, and the coordinators known (replication lag fields null until
  // replication fills them).
  nlohmann::json ClusterJson() const;

 private:
  // How long a role switch or a new leader retries binding an endpoint that
  // the previous coordinator (or replication actor) closed a moment ago.
  static constexpr int kRebindAttempts = 40;
  static constexpr Millis kRebindRetry{50};

  Status Fail(NodeStage stage, Status status);
  Status StartCoordinator();
  // Starts the coordinator's actors in `standby` mode or as leader in `epoch`.
  Status StartCoordinatorActors(bool standby, uint64_t epoch);
  // election (cli/node_ha.cc): starts the board, the etcd client and the
  // elector thread.
  void StartHa();
  // What the elector tells this node: journal the term, log and alert.
  ha::ElectorEvents HaElectorEvents();
  // election: when the board's role differs from the running coordinator's,
  // restarts the coordinator in the new role (a new leader recovers from the
  // journal exactly as a restart does). A failure is kept for ActorFailure.
  void SyncHaRole();
  Status StartWorker();
  // Single sign-on's verifier (--oidc-issuer), before the HTTP server.
  Status StartOidc();
  // The span exporter (--otlp-endpoint) on a link of its own to the
  // coordinator (cli/node_otlp.cc); nothing without the flag.
  Status StartOtlp();
  Status StartHttp();
  // The HTTP port's tokens, single sign-on, TLS and base path (node_oidc.cc).
  void FillHttpAccess(observability::HttpServerOptions* ho) const;
  // cli/node_replication.cc: a leader's replication actor serving
  // standbys in `epoch` (started before the coordinator, which commits
  // through it; nothing without --replication-bind), a standby's follower
  // of the leader at `endpoint` (a static standby runs it instead of a
  // coordinator; an elected standby beside its read-only coordinator),
  // their metrics, and stopping them. The Start* return errors, the caller
  // decides what they mean.
  Status StartReplicationLeader(uint64_t epoch);
  // With --ha-etcd, a node binds --replication-bind only once elected, so a
  // port taken by another process would fail the failover itself, with the
  // lease held. Binds it once at startup and lets go: Io naming the endpoint
  // when it cannot be bound (a conflict after this is still found, later).
  Status ProbeReplicationBind();
  void StopReplicationLeader();
  // `leader_epoch`: the epoch etcd backs for that leader (0: any).
  Status StartFollower(const std::string& endpoint, const std::string& leader_name,
                       uint64_t leader_epoch = 0);
  void StopFollower();
  void AddReplicationMetrics();
  void StopReplication();
  // One step of a role change (ha/role_change.h), carried out.
  Status RunRoleStep(const ha::RoleStep& step, const ha::RoleState& s);
  void AnnounceRole(bool standby, const ha::RoleState& s);
  // Starts the coordinator's actors in the new role, retrying while the old
  // role's ports close; a leader takes `epoch` as its own.
  Status RestartCoordinatorAs(bool standby, uint64_t epoch);
  // Starts a notifier for `rules` (null for none) and logs it.
  Result<std::unique_ptr<alerts::Notifier>> StartNotifier(
      const std::vector<alerts::AlertRule>& rules);
  // SIGHUP: the tokens file's principals (--api-tokens), re-read; the HTTPS
  // certificate and key, re-read (the same files: a renewed certificate).
  void ReloadApiTokens(const NodeConfig& fresh);
  void ReloadTls();
  void ReloadKeys(const NodeConfig& fresh);
  void ReloadAlerts(const NodeConfig& fresh);
  // The coordinator's and the worker's reports of an actor that died (the
  // seams the actors' failure reports plug into); nullopt while all live or
  // not started.
  std::optional<Status> CoordinatorFailure() const;
  std::optional<Status> WorkerFailure() const;

  NodeConfig config_;
  const Clock* clock_;
  NodeStage failed_stage_ = NodeStage::kNone;
  uint64_t epoch_ = 0;
  nlohmann::json listening_;
  std::vector<FailureSource> failure_sources_;
  std::optional<Status> ha_failure_;  // election: a role switch that failed
  bool coordinator_standby_ = false;  // the mode the coordinator runs in
  // True while the coordinator runs as leader (recovered, serving). With
  // HA, the election may name this node leader a while before: /healthz
  // then says "starting" and /readyz is not ready. Read by the HTTP thread.
  std::atomic<bool> serving_leader_{false};
  // Members in destruction order, last first: what is declared later uses
  // what is declared before it.
  zmq::context_t ctx_;
  std::unique_ptr<storage::StateDirLock> lock_, worker_lock_;
  std::unique_ptr<storage::Journal> journal_;
  // The alerts delivered lately (GET /api/alerts); outlives every notifier
  // (a SIGHUP reload swaps them) and the HTTP server.
  alerts::AlertHistory alert_history_;
  SwappableAlertSink alerts_;         // the coordinator's actors emit into its notifier
  observability::Registry registry_;  // metrics outlive their publishers
  std::unique_ptr<observability::CoordinatorMetrics> coordinator_metrics_;
  std::unique_ptr<observability::WorkerMetrics> worker_metrics_;
  std::unique_ptr<transport::ZapHandler> zap_;  // after the CURVE servers it guards
  // election: the role board outlives the coordinator reading it; the
  // elector thread is stopped first (Stop), then the elector, the client.
  std::unique_ptr<ha::RoleBoard> ha_board_;
  std::unique_ptr<ha::EtcdClient> etcd_;
  // The replication leader's own client for the in-sync record (its calls
  // are serialized by the leader; the elector's client is the elector's).
  std::unique_ptr<ha::EtcdClient> in_sync_etcd_;
  std::unique_ptr<ha::HaElector> elector_;
  // apollo11_ha_lease_lost_total, registered with the HA metrics (node_ha.cc).
  observability::Counter* ha_lease_lost_ = nullptr;
  std::unique_ptr<ha::ElectorThread> elector_thread_;
  // The journal's commit observer: outlives the coordinator that commits.
  // The node's thread swaps them (role changes) under replication_mu_;
  // metrics and replication_status() read them under it. Not GUARDED_BY:
  // the node's thread, their only writer, also reads them without it, which
  // the analysis has no way to tell from another thread's read.
  mutable Mutex replication_mu_;
  std::unique_ptr<replication::ReplicationLeader> replication_leader_;
  std::unique_ptr<replication::ReplicationStandby> replication_standby_;
  // Refusals counted by replication actors since stopped.
  uint64_t refused_before_ GUARDED_BY(replication_mu_) = 0;
  std::string following_;                   // the follower's leader endpoint; empty: none
  uint64_t following_epoch_ = 0;            // the leader epoch it accepts; 0: any
  std::unique_ptr<FaultPort> test_faults_;  // config_.test_fault's port; outlives coordinator_
  // The workers watching this node's coordinator, kept across its restarts
  // (a standby that becomes the leader announces itself to them).
  actors::Watchers watchers_;
  std::unique_ptr<actors::Coordinator> coordinator_;
  // The span exporter and its own link to the coordinator: stopped before
  // the coordinator (after a draining worker, whose runs' ends it exports).
  std::unique_ptr<CoordinatorApi> otlp_api_;
  std::unique_ptr<observability::OtlpExporter> otlp_;
  std::unique_ptr<actors::WorkerActor> worker_;
  // Single sign-on's keys (--oidc-issuer); the HTTP server uses it.
  std::unique_ptr<observability::OidcVerifier> oidc_;
  // The dashboard's sign-in through it (--oidc-client-id); null = none.
  std::unique_ptr<observability::OidcSignIn> sign_in_;
  // The HTTP server and its API client go first: they call the coordinator.
  std::unique_ptr<CoordinatorApi> api_;
  // The HTTP server's live events' own link (observability/event_pump.h).
  std::unique_ptr<CoordinatorApi> feed_api_;
  std::unique_ptr<observability::HttpServer> http_;
};

// Blocks `signals` in the calling thread, so that every thread started
// after it inherits the mask and Node::Run can take them (task processes
// get a clean mask from the executor).
void BlockSignals(const sigset_t& signals);

}  // namespace apollo11::cli
