// The parts of a simulated cluster node, one turn each (cluster_sim.h), and
// the workers' turns.

#include <algorithm>

#include "ha/in_sync.h"
#include "ha/role_change.h"
#include "tests/sim/cluster_sim_node.h"
#include "transport/messages.h"

namespace apollo11::sim {

using transport::MsgType;
using namespace cluster;  // NOLINT: the simulator's own helpers

// ---- election and role ---------------------------------------------------------

void ClusterSim::ElectorTurn(Node& n) {
  const Micros now = clock_.Steady();
  if (now >= n.elector_due && !n.etcd.Blocked(kElection, now)) n.elector_due = n.elector->Step();
  // As the node's loop does after every wake: SyncHaRole.
  ha::NodeRoles roles;
  roles.coordinator_running = n.sched != nullptr;
  roles.coordinator_standby = n.standby;
  roles.epoch = n.epoch;
  roles.replication_leader = n.rep_leader != nullptr;
  roles.following = n.following;
  roles.replicates = true;
  for (const ha::RoleStep& step : ha::PlanRoleChange(roles, n.board.Current())) {
    Trace(n.name + ": " + ha::RoleStepName(step.kind) + (step.standby ? " (standby)" : "") +
          (step.epoch ? " epoch " + std::to_string(step.epoch) : "") +
          (step.leader.empty() ? "" : " " + step.leader));
    RunRoleStep(n, step);
  }
}

void ClusterSim::RunRoleStep(Node& n, const ha::RoleStep& step) {
  using Kind = ha::RoleStep::Kind;
  switch (step.kind) {
    case Kind::kAnnounce:
      if (!step.standby) terms_.push_back(n.index);
      break;
    case Kind::kStopWaitingStandbys:
      // The commit returns; what it held goes out (the dispatcher sends
      // workers nothing: the lease is gone), replies reach their clients.
      if (n.awaiting != 0) {
        n.awaiting = 0;
        ReleaseScheduler(n);
      }
      break;
    case Kind::kStopCoordinator:
      StopCoordinator(n);
      break;
    case Kind::kStopReplicationLeader:
      n.store().SetCommitObserver(nullptr);
      n.rep_leader.reset();
      n.in_sync.reset();
      n.observer.reset();
      break;
    case Kind::kStopFollower:
      n.rep_standby.reset();
      n.following.clear();
      break;
    case Kind::kStartReplicationLeader:
      StartReplicationLeader(n, step.epoch);
      break;
    case Kind::kStartCoordinator:
      StartCoordinator(n, step.standby, step.epoch);
      break;
    case Kind::kFollow:
      Follow(n, step.endpoint, step.leader);
      break;
  }
}

void ClusterSim::StartReplicationLeader(Node& n, uint64_t epoch) {
  storage::MemoryRunStore& store = n.store();
  replication::LeaderOptions lo;
  lo.name = n.name;
  for (const auto& other : nodes_) {
    if (other.get() != &n) lo.standbys.insert(other->name);
  }
  n.rep_leader = std::make_unique<replication::ReplicationLeaderCore>(
      lo, epoch,
      replication::ReplicationLeaderCore::Position{store.last_batch(), store.last_seq(),
                                                   store.last_batch_epoch()});
  n.in_sync = std::make_unique<replication::InSyncSet>(n.name, Ms(options_.replication_timeout),
                                                       store.last_batch());
  n.observer = std::make_unique<Replicator>(this, &n);
  store.SetCommitObserver(n.observer.get());
  n.next_beat = 0;
}

void ClusterSim::Follow(Node& n, const std::string& endpoint, const std::string& leader) {
  for (const auto& other : nodes_) {
    if (other->self.replication_endpoint != endpoint) continue;
    replication::StandbyOptions so{n.name, leader, 64};
    n.rep_standby = std::make_unique<replication::ReplicationStandbyCore>(so, &n.replica);
    n.following = endpoint;
    n.following_node = other->index;
    n.leader_heard = clock_.Steady();
    SendReplication(n, leader, n.rep_standby->Hello());
  }
}

void ClusterSim::StartCoordinator(Node& n, bool standby, uint64_t epoch) {
  n.standby = standby;
  n.epoch = epoch;
  actors::SchedulerTurnConfig sc;
  sc.store = &n.store();
  sc.clock = &clock_;
  sc.options.claim_window = options_.heartbeat * (options_.liveness + 1);  // as the node sets it
  sc.options.random = scheduler_random_.get();
  sc.journal_dir = n.name;
  sc.clients.standby = standby;
  sc.clients.leader_endpoint = [&n] { return n.board.Current().leader.client_endpoint; };
  n.sched = std::make_unique<actors::SchedulerTurn>(sc);
  actors::DispatcherOptions d;
  d.epoch = epoch;
  d.ha = &n.board;
  d.standby = standby;
  d.watchers = &n.watchers;
  n.disp = std::make_unique<actors::DispatcherTurn>(
      &clock_, d, actors::DispatcherTurnOptions{options_.heartbeat, options_.reconcile_interval});
  actors::ReconcilerOptions r;
  r.heartbeat = options_.heartbeat;
  r.liveness = options_.liveness;
  n.recon = std::make_unique<actors::ReconcilerTurn>(&clock_, r);
  n.link = std::make_unique<NodeWorkers>(this, &n);
  // As SchedulerLoop::Start: recovery, then a commit without early placement.
  n.sched->Start();
  (void)n.sched->Commit();
  if (n.awaiting == 0) ReleaseScheduler(n);
}

void ClusterSim::StopCoordinator(Node& n) {
  n.sched.reset();
  n.disp.reset();
  n.recon.reset();
  n.awaiting = 0;
  for (auto* q : {&n.sched_from_disp, &n.sched_from_recon, &n.disp_from_sched, &n.disp_from_recon,
                  &n.recon_from_sched, &n.recon_from_disp}) {
    q->clear();
  }
  n.from_workers.clear();
  n.from_clients.clear();
}

// ---- the coordinator's actors -----------------------------------------------------

void ClusterSim::SchedulerTurn(Node& n) {
  if (!n.sched || n.awaiting != 0) return;  // blocked in a commit
  while (!n.from_clients.empty()) {
    auto [identity, frame] = std::move(n.from_clients.front());
    n.from_clients.pop_front();
    n.sched->FromClient(identity, transport::PeerAuth{}, frame.data(), frame.size());
  }
  Drain(&n.sched_from_disp, [&](const transport::Envelope& e) { n.sched->FromDispatcher(e); });
  Drain(&n.sched_from_recon, [&](const transport::Envelope& e) { n.sched->FromReconciler(e); });
  n.sched->Tick();
  if (n.sched->CommitDue()) {
    // Place before commit: the dispatcher answers within the loop's wait.
    if (n.sched->BeginEarlyPlacement()) {
      MoveAll(&n.sched->frames().to_dispatcher, &n.disp_from_sched);
      DispatcherTurn(n);
      Drain(&n.sched_from_disp, [&](const transport::Envelope& e) { n.sched->FromDispatcher(e); });
    }
    (void)n.sched->Commit();
  }
  if (n.awaiting == 0) ReleaseScheduler(n);
}

void ClusterSim::ReleaseScheduler(Node& n) {
  if (!n.sched) return;
  MoveAll(&n.sched->frames().to_dispatcher, &n.disp_from_sched);
  MoveAll(&n.sched->frames().to_reconciler, &n.recon_from_sched);
  for (actors::ClientFrame& f : n.sched->TakeClientFrames()) DeliverToClient(n, std::move(f));
}

void ClusterSim::DispatcherTurn(Node& n) {
  if (!n.disp) return;
  while (!n.from_workers.empty()) {
    auto [identity, frame] = std::move(n.from_workers.front());
    n.from_workers.pop_front();
    n.disp->FromWorker(identity, transport::PeerAuth{}, frame.data(), frame.size());
  }
  Drain(&n.disp_from_sched, [&](const transport::Envelope& e) { n.disp->FromScheduler(e); });
  Drain(&n.disp_from_recon, [&](const transport::Envelope& e) { n.disp->FromReconciler(e); });
  actors::DispatcherFrames out;
  n.disp->End(*n.link, &out);
  MoveAll(&out.to_scheduler, &n.sched_from_disp);
  MoveAll(&out.to_reconciler, &n.recon_from_disp);
}

void ClusterSim::ReconcilerTurn(Node& n) {
  if (!n.recon) return;
  Drain(&n.recon_from_sched, [&](const transport::Envelope& e) { n.recon->FromScheduler(e); });
  Drain(&n.recon_from_disp, [&](const transport::Envelope& e) { n.recon->FromDispatcher(e); });
  actors::ReconcilerFrames out;
  n.recon->End(&out);
  MoveAll(&out.to_dispatcher, &n.disp_from_recon);
  MoveAll(&out.to_scheduler, &n.sched_from_recon);
}

// ---- replication -------------------------------------------------------------------

void ClusterSim::SendReplication(Node& from, const std::string& peer, const std::string& frame) {
  for (auto& to : nodes_) {
    if (to->name != peer) continue;
    if (!to->alive || from.replication_cut || to->replication_cut) return;  // lost on the way
    to->rep_in.emplace_back(from.name, frame);
  }
}

void ClusterSim::ReplicationTurn(Node& n) {
  const Micros now = clock_.Steady();
  replication::ReplicationLeaderCore::Output out;
  while (!n.rep_in.empty()) {
    auto [sender, frame] = std::move(n.rep_in.front());
    n.rep_in.pop_front();
    if (n.rep_leader) {
      n.rep_leader->OnFrame(sender, frame, now, &out);
    } else if (n.rep_standby && sender == nodes_[n.following_node]->name) {
      std::vector<std::string> replies;
      n.rep_standby->OnFrame(frame, clock_.Now(), &replies);
      n.leader_heard = now;
      for (const std::string& r : replies) SendReplication(n, sender, r);
    }
  }
  if (n.rep_standby && now - n.leader_heard > kStandbySilence) {
    n.leader_heard = now;  // the leader is silent: introduce ourselves again
    SendReplication(n, nodes_[n.following_node]->name, n.rep_standby->Hello());
  }
  if (!n.rep_leader) return;
  if (now >= n.next_beat) {
    n.next_beat = now + kReplicationTick;
    for (const auto& [name, s] : n.rep_leader->standbys()) {
      out.frames.emplace_back(name, n.rep_leader->HeartbeatFrame());
    }
  }
  for (auto& [peer, frame] : out.frames) SendReplication(n, peer, frame);
  for (const std::string& peer : out.copies) SendCopy(n, peer);
  // Observed in both modes (the tests read it); only a sync leader waits
  // for it and records it.
  n.in_sync->Observe(n.rep_leader->standbys(), now);
  if (!options_.sync) return;
  ResolveWait(n);
  RecordInSync(n);
}

void ClusterSim::SendCopy(Node& leader, const std::string& peer) {
  // The journal copy a diverged or far-behind standby is sent (the real
  // leader ships its LMDB file in chunks): here the store is copied whole,
  // and the standby, which installs it, says HELLO again from there.
  for (auto& to : nodes_) {
    if (to->name != peer || !to->alive || !to->rep_standby) continue;
    if (leader.replication_cut || to->replication_cut) return;
    Trace(leader.name + " sends a journal copy to " + peer);
    to->store().CopyFrom(leader.store());
    to->rep_standby = std::make_unique<replication::ReplicationStandbyCore>(
        replication::StandbyOptions{to->name, leader.name, 64, 0}, &to->replica);
    SendReplication(*to, leader.name, to->rep_standby->Hello());
  }
}

void ClusterSim::ResolveWait(Node& n) {
  if (n.awaiting == 0) return;
  if (!n.dropped) {
    if (n.in_sync->Acknowledged(n.awaiting)) {
      n.awaiting = 0;
      ReleaseScheduler(n);
      return;
    }
    if (clock_.Steady() - n.await_since < Ms(options_.replication_timeout)) return;
    (void)n.in_sync->DropLate(n.awaiting);
    n.needed_version = n.in_sync->version();
    n.dropped = true;
  }
  RecordInSync(n);
  if (n.in_sync->RecordedVersion() >= n.needed_version) {
    n.awaiting = 0;
    ReleaseScheduler(n);
  }
}

void ClusterSim::RecordInSync(Node& n) {
  if (n.in_sync->version() == n.in_sync->RecordedVersion()) return;
  const std::optional<ha::EtcdLeaderKey> key = n.elector->HeldKey();
  if (!key || key->rev != n.epoch) return;  // no longer this term's leader
  const ha::InSyncRecord record{n.epoch, n.name, n.in_sync->RecordedMembers()};
  auto put = n.etcd.PutIfLeader(*key, ha::InSyncKey(kElection), ha::EncodeInSync(record));
  if (put.ok() && *put) n.in_sync->Recorded(n.in_sync->version());
}

// ---- workers ----------------------------------------------------------------------

void ClusterSim::DeliverToWorker(Node& from, Worker& w, const std::string& frame) {
  auto env = transport::DecodeEnvelope(frame.data(), frame.size());
  if (env.ok() && env->type == transport::ToWire(MsgType::kDispatch)) {
    auto d = transport::BodyAs<transport::Dispatch>(*env);
    if (d.ok()) {
      auto rec = from.store().GetExecution(d->exec_id);
      if (!rec.ok() || !rec->has_value() || (*rec)->state != TaskState::kRunning ||
          (*rec)->attempt != d->attempt) {
        Violation(from.name + " dispatched " + d->exec_id + " before its RUNNING was durable");
      }
      if (d->attempt > 1)
        Trace(from.name + " dispatches " + d->exec_id + " attempt " + std::to_string(d->attempt) +
              " to " + w.id);
      if (completions_.count(d->exec_id) > 0) {
        Violation(d->exec_id + " ran again: " + from.name + " dispatched attempt " +
                  std::to_string(d->attempt) + " to " + w.id + " after it had completed");
      }
    }
  }
  w.inbox.emplace_back(from.index, frame);
}

void ClusterSim::WorkerTurn(Worker& w) {
  auto flush = [&] {
    Node& to = *nodes_[w.core->coordinators().current()];
    for (std::string& frame : w.core->outbox()) {
      if (to.alive && to.sched) to.from_workers.emplace_back(w.id, std::move(frame));
    }
    w.core->outbox().clear();
    for (auto& [i, frame] : w.core->watch_outbox()) {
      Node& other = *nodes_[i];
      if (other.alive && other.sched) other.from_workers.emplace_back(w.id, std::move(frame));
    }
    w.core->watch_outbox().clear();
  };
  const size_t was = w.core->coordinators().current();
  while (!w.inbox.empty()) {
    auto [from, frame] = std::move(w.inbox.front());
    w.inbox.pop_front();
    w.core->OnFrame(frame.data(), frame.size(), from);
    flush();
  }
  const Micros now = clock_.Steady();
  std::uniform_int_distribution<Micros> took(Ms(options_.task_min), Ms(options_.task_max));
  for (const executor::ExecRequest& req : w.runner.launched) {
    if (!w.runner.IsRunning(req.exec_id, req.attempt)) continue;
    auto [it, fresh] = w.finish_at.emplace(std::make_pair(req.exec_id, req.attempt), 0);
    if (fresh) it->second = now + took(random_);
    if (now < it->second) continue;
    if (w.runner.Complete(req.exec_id, req.attempt, executor::ExecOutcomeKind::kSuccess,
                          clock_.Now())) {
      if (++completions_[req.exec_id] > 1) {
        Violation(req.exec_id + " ran again: attempt " + std::to_string(req.attempt) + " on " +
                  w.id + " completed after an earlier one had");
      }
    }
  }
  std::vector<executor::ExecOutcome> finished = w.runner.Take();
  if (!finished.empty()) w.core->OnFinished(finished);
  w.core->EndTurn();
  if (w.core->Tick()) w.core->Hello();  // coordinator silent: a fresh connection
  flush();
  if (w.core->coordinators().current() != was) {
    Trace(w.id + " follows " + nodes_[w.core->coordinators().current()]->name);
  }
}

}  // namespace apollo11::sim
