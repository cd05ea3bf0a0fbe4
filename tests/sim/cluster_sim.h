#pragma once
// A deterministic simulator of an HA cluster: N coordinators that share a
// simulated etcd (tests/sim/sim_etcd.h) and replicate their journals, and M
// workers that follow whichever leads. Everything a real node decides runs
// here as in the node: the elector (ha::HaElector over the simulated etcd),
// the role change (ha::PlanRoleChange, carried out step by step), the
// actors' turns (SchedulerTurn, DispatcherTurn, ReconcilerTurn), the
// replication cores (ReplicationLeaderCore, ReplicationStandbyCore) with
// the sync release rule (replication::InSyncSet), and one WorkerCore per
// worker following its coordinators (CoordinatorFollower). What this file
// adds is what sockets and threads do: it moves frames between mailboxes,
// and steps every part once per round, in an order a seeded random source
// shuffles, while a fake clock moves by `step`.
//
// Faults: kill -9 a coordinator, pause it (SIGSTOP) for a while, cut its
// etcd traffic or its replication link. Attempts run for a seeded random
// time between task_min and task_max, then succeed.
//
// Checked on every delivery and at every round, recorded as violations (a
// test asserts there are none): a DISPATCH reaches a worker only when its
// RUNNING is durable in the sender's journal, a reply naming a run only
// when the run is durable there, and no execution that completed on a
// worker is launched again (the ledger; skipped for a worker that was cut
// off, whose tasks may rightly run elsewhere).

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "actors/dispatcher/dispatcher_turn.h"
#include "actors/reconciler/reconciler_turn.h"
#include "actors/scheduler/scheduler_turn.h"
#include "actors/worker/worker_core.h"
#include "dsl/pipeline.h"
#include "ha/ha_elector.h"
#include "ha/role_board.h"
#include "ha/role_change.h"
#include "replication/in_sync_set.h"
#include "replication/replica_store.h"
#include "replication/replication_leader_core.h"
#include "replication/replication_standby_core.h"
#include "tests/executor/fake_task_runner.h"
#include "tests/sim/sim_etcd.h"

namespace apollo11::sim {

struct ClusterOptions {
  size_t coordinators = 3;
  size_t workers = 3;
  uint32_t slots = 2;
  Millis heartbeat{100};
  int liveness = 3;
  Millis reconcile_interval{1000};
  int64_t lease_ttl_s = 2;
  bool sync = true;  // sync replication (else async)
  Millis replication_timeout{1000};
  Millis step{10};
  Millis task_min{50}, task_max{400};  // how long an attempt runs
  uint64_t seed = 1;
};

class ClusterSim {
 public:
  explicit ClusterSim(ClusterOptions options);
  ~ClusterSim();

  // One round: the clock moves by `step`, then every live part takes one
  // turn in a shuffled order.
  void Round();
  void RunFor(Millis d);
  // Rounds until `done` holds (true) or `limit` passed (false).
  bool RunUntil(const std::function<bool()>& done, Millis limit);

  // The coordinator that leads and runs as leader now; -1 when none.
  int Leader() const;
  // Submits `tasks` as pipeline `name` to the leader, and runs until it
  // answers. Returns the run id ("" when no leader took it in `limit`).
  std::string Submit(const std::string& name, const std::vector<dsl::TaskSpec>& tasks,
                     Millis limit = Millis(10000));
  // How many standbys the leader holds in sync (sync mode; 0 without a leader).
  size_t InSync() const;
  // Whether every run in `runs` is journaled SUCCESS on the leader.
  bool AllSucceeded(const std::vector<std::string>& runs) const;

  void Kill(size_t node);
  // Starts a killed coordinator again on its journal, as a standby (a new
  // process: new lease, new elector).
  void Restart(size_t node);
  // Registers pipeline `name` of `tasks` with the leader, firing every
  // second (overlap allow, catch-up of every missed time within 10 min), and
  // runs until it answers. False when no leader took it within `limit`.
  bool RegisterEverySecond(const std::string& name, const std::vector<dsl::TaskSpec>& tasks,
                           Millis limit = Millis(10000));
  // Every run any coordinator's journal says a fire of `pipeline` started,
  // by scheduled time (a dead leader's journal included).
  std::map<Micros, std::set<std::string>> FireRuns(const std::string& pipeline);
  // The scheduled times of `pipeline` the leader's journal holds a started
  // fire for.
  std::set<Micros> LeaderFires(const std::string& pipeline);
  // Whether some worker launched execution `exec_id` (any attempt).
  bool Launched(const std::string& exec_id) const;
  // SIGSTOP for `d`: nothing of the node runs meanwhile; frames to it wait.
  void Pause(size_t node, Millis d);
  void CutEtcd(size_t node, bool cut);
  // Cuts the replication link of a standby (both directions).
  void CutReplication(size_t node, bool cut);

  const std::vector<std::string>& violations() const { return violations_; }
  // How often each execution completed successfully on some worker.
  const std::map<std::string, int>& completions() const { return completions_; }
  FakeClock& clock() { return clock_; }
  // Leadership changes seen (a node starting to lead), in order: node index.
  const std::vector<size_t>& terms() const { return terms_; }

 private:
  struct Node;
  struct Worker;
  class NodeWorkers;
  class Replicator;

  void StartNode(size_t i);
  void ElectorTurn(Node& n);
  void RunRoleStep(Node& n, const ha::RoleStep& step);
  void StartReplicationLeader(Node& n, uint64_t epoch);
  void Follow(Node& n, const std::string& endpoint, const std::string& leader);
  void SendReplication(Node& from, const std::string& peer, const std::string& frame);
  void SendCopy(Node& leader, const std::string& peer);
  void StartCoordinator(Node& n, bool standby, uint64_t epoch);
  void StopCoordinator(Node& n);
  void SchedulerTurn(Node& n);
  void CommitTurn(Node& n);
  void ReleaseScheduler(Node& n);
  void DispatcherTurn(Node& n);
  void ReconcilerTurn(Node& n);
  void ReplicationTurn(Node& n);
  void ResolveWait(Node& n);
  void RecordInSync(Node& n);
  void WorkerTurn(Worker& w);
  void DeliverToWorker(Node& from, Worker& w, const std::string& frame);
  void DeliverToClient(Node& n, actors::ClientFrame f);
  bool Runs(const Node& n) const;
  void Violation(const std::string& what);
  // With $APOLLO11_SIM_TRACE set: one line on stderr, stamped with the
  // simulated time (what a test needs to read an interleaving).
  void Trace(const std::string& what) const;

  ClusterOptions options_;
  FakeClock clock_;
  std::mt19937_64 random_;
  std::unique_ptr<engine::RandomSource> scheduler_random_;
  SimEtcd etcd_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::unique_ptr<Worker>> workers_;
  std::vector<std::string> worker_endpoints_;
  std::vector<std::string> violations_;
  std::map<std::string, int> completions_;      // exec id -> successful completions
  std::map<std::string, std::string> replies_;  // run ids answered to the client
  std::vector<size_t> terms_;
  bool trace_ = false;
  Micros start_ = 0;  // Steady() at construction
};

// A shell task `id` depending on `deps`.
dsl::TaskSpec ClusterTask(const std::string& id, std::vector<std::string> deps = {});

}  // namespace apollo11::sim
