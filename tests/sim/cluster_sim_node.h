#pragma once
// The private parts of ClusterSim (tests/sim/cluster_sim.h): a simulated
// coordinator node, a simulated worker, and the small helpers the two
// source files share.

#include <deque>
#include <string>
#include <utility>

#include "storage/batch_codec.h"
#include "tests/sim/cluster_sim.h"

namespace apollo11::sim {
namespace cluster {

inline constexpr const char* kElection = "apollo11/sim";
inline constexpr Micros kReplicationTick = 200 * kMicrosPerMilli;  // the leader's heartbeat
inline constexpr Micros kStandbySilence = 1000 * kMicrosPerMilli;  // a standby says HELLO again

inline Micros Ms(Millis d) { return d.count() * kMicrosPerMilli; }

inline transport::Envelope Internal(const std::string& frame) {
  auto env = transport::DecodeEnvelope(frame.data(), frame.size(), actors::InternalLimits());
  return env.ok() ? std::move(*env) : transport::Envelope{};
}

template <class Handle>
void Drain(std::deque<std::string>* q, Handle&& handle) {
  while (!q->empty()) {
    std::string frame = std::move(q->front());
    q->pop_front();
    handle(Internal(frame));
  }
}

inline void MoveAll(std::vector<std::string>* from, std::deque<std::string>* to) {
  for (std::string& frame : *from) to->push_back(std::move(frame));
  from->clear();
}

}  // namespace cluster

// One coordinator: its journal, its view of etcd, its elector and board,
// the actors of its current role, and its side of replication.
struct ClusterSim::Node {
  Node(size_t i, SimEtcd* shared, const Clock* clock)
      : index(i),
        name("c" + std::to_string(i)),
        self{name, "inproc://" + name + "-workers", "inproc://" + name + "-clients",
             "inproc://" + name + "-replication"},
        etcd(shared, clock),
        board(clock, self) {}

  storage::MemoryRunStore& store() { return replica.memory(); }

  size_t index;
  std::string name;
  ha::Member self;
  replication::MemoryReplicaStore replica;  // the journal
  SimEtcdPort etcd;
  ha::RoleBoard board;
  std::unique_ptr<ha::HaElector> elector;
  Micros elector_due = 0;
  bool alive = true;
  Micros paused_until = 0;

  // The coordinator of the current role (none while stopped).
  std::unique_ptr<actors::SchedulerTurn> sched;
  std::unique_ptr<actors::DispatcherTurn> disp;
  std::unique_ptr<actors::ReconcilerTurn> recon;
  std::unique_ptr<NodeWorkers> link;
  actors::Watchers watchers;  // as the node keeps them, across restarts
  bool standby = true;
  uint64_t epoch = 0;
  std::deque<std::string> sched_from_disp, sched_from_recon, disp_from_sched, disp_from_recon,
      recon_from_sched, recon_from_disp;
  std::deque<std::pair<std::string, std::string>> from_workers, from_clients;

  // Replication.
  std::unique_ptr<replication::ReplicationLeaderCore> rep_leader;
  std::unique_ptr<replication::InSyncSet> in_sync;
  std::unique_ptr<Replicator> observer;
  std::unique_ptr<replication::ReplicationStandbyCore> rep_standby;
  std::string following;  // the replication endpoint followed
  size_t following_node = 0;
  Micros leader_heard = 0, next_beat = 0;
  std::deque<std::pair<std::string, std::string>> rep_in;  // (sender name, frame)
  bool replication_cut = false;
  // A commit waiting for its standbys (sync): the scheduler is blocked in it.
  uint64_t awaiting = 0;
  Micros await_since = 0;
  bool dropped = false;
  uint64_t needed_version = 0;
};

struct ClusterSim::Worker {
  std::string id;
  testing::FakeTaskRunner runner;
  std::unique_ptr<actors::WorkerCore> core;
  std::deque<std::pair<size_t, std::string>> inbox;  // (coordinator, frame)
  std::map<std::pair<std::string, uint32_t>, Micros> finish_at;
};

// The dispatcher's WorkerLink of one coordinator: a frame reaches the
// worker's inbox, tagged with the coordinator it came from.
class ClusterSim::NodeWorkers final : public actors::WorkerLink {
 public:
  NodeWorkers(ClusterSim* sim, Node* node) : sim_(sim), node_(node) {}
  bool Send(const std::string& identity, const std::string& frame) override {
    for (auto& w : sim_->workers_) {
      if (w->id != identity) continue;
      sim_->DeliverToWorker(*node_, *w, frame);
      return true;
    }
    return false;
  }

 private:
  ClusterSim* sim_;
  Node* node_;
};

// The leader's commit observer: hands each batch to the replication core
// and, in sync mode, blocks the scheduler in its commit (Node::awaiting)
// until ResolveWait releases it, as ReplicationLeader::OnCommitted does.
class ClusterSim::Replicator final : public storage::CommitObserver {
 public:
  Replicator(ClusterSim* sim, Node* node) : sim_(sim), node_(node) {}
  void OnCommitted(uint64_t batch_no, uint64_t first_seq, const storage::RunBatch& batch) override {
    replication::ReplicationLeaderCore::Output out;
    node_->rep_leader->OnCommitted(batch_no, first_seq, batch.transitions(),
                                   storage::codec::EncodeBatch(batch), sim_->clock_.Now(), &out);
    for (auto& [peer, frame] : out.frames) sim_->SendReplication(*node_, peer, frame);
    node_->in_sync->OnHandedOver(batch_no);
    if (!sim_->options_.sync) return;
    node_->awaiting = batch_no;
    node_->await_since = sim_->clock_.Steady();
    node_->dropped = false;
  }

 private:
  ClusterSim* sim_;
  Node* node_;
};

}  // namespace apollo11::sim
