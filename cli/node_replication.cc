// The Node's replication side (docs/ha.md, "Replication"): a leader's
// replication actor, observing the journal's commits, and a standby's
// follower, applying the leader's batches. Static replication starts one
// of them for the node's life; with --ha-etcd, SyncHaRole (cli/node_ha.cc)
// moves them with the role: the leader serves standbys, a standby follows
// whoever leads.

#include <spdlog/spdlog.h>

#include <memory>
#include <set>
#include <thread>

#include "actors/scheduler/retention.h"
#include "cli/node.h"
#include "ha/in_sync.h"
#include "transport/sockets.h"

namespace apollo11::cli {

Status Node::ProbeReplicationBind() {
  const std::string& endpoint = config_.replication.bind;
  if (endpoint.empty()) return Status::Ok();
  zmq::socket_t probe(ctx_, zmq::socket_type::router);
  probe.set(zmq::sockopt::linger, 0);
  auto bound = transport::Bind(probe, endpoint);
  if (!bound.ok()) {
    return Status::Io("--replication-bind " + endpoint + " cannot be bound (" +
                      bound.status().message() +
                      "): this node could not serve its standbys once elected");
  }
  probe.close();
  return Status::Ok();
}

Status Node::StartReplicationLeader(uint64_t epoch) {
  const ReplicationSettings& r = config_.replication;
  if (r.bind.empty()) return Status::Ok();
  replication::ReplicationLeaderConfig lc;
  lc.bind = r.bind;
  lc.name = r.name;
  lc.standbys = std::set<std::string>(r.peers.begin(), r.peers.end());
  lc.sync = r.sync;
  lc.timeout = r.timeout;
  lc.epoch = epoch;
  lc.alerts = &alerts_;
  lc.curve = r.curve;
  if (in_sync_etcd_) {
    lc.record_in_sync = [this, epoch](const std::set<std::string>& members) -> Status {
      const std::optional<ha::EtcdLeaderKey> key = elector_->HeldKey();
      if (!key || key->rev != epoch) {
        return Status::Busy("no longer the leader of epoch " + std::to_string(epoch));
      }
      const ha::InSyncRecord record{epoch, config_.replication.name, members};
      auto put = in_sync_etcd_->PutIfLeader(*key, ha::InSyncKey(config_.ha.election),
                                            ha::EncodeInSync(record));
      if (!put.ok()) return put.status();
      if (!*put)
        return Status::Busy("etcd: the election key of epoch " + std::to_string(epoch) +
                            " is gone");
      return Status::Ok();
    };
  }
  auto leader = replication::ReplicationLeader::Start(ctx_, journal_.get(), clock_, lc);
  for (int i = 1; !leader.ok() && config_.ha.enabled() && i < kRebindAttempts; ++i) {
    std::this_thread::sleep_for(kRebindRetry);
    leader = replication::ReplicationLeader::Start(ctx_, journal_.get(), clock_, lc);
  }
  if (!leader.ok()) return leader.status();
  {
    MutexLock lock(&replication_mu_);
    replication_leader_ = std::move(*leader);
  }
  journal_->SetCommitObserver(replication_leader_.get());
  listening_["replication"] = replication_leader_->endpoint();
  listening_["replication_mode"] = r.sync ? "sync" : "async";
  spdlog::info("replication: leader {} streams the journal on {} in epoch {} ({}{})", r.name,
               replication_leader_->endpoint(), epoch, r.sync ? "sync, timeout " : "async",
               r.sync ? std::to_string(r.timeout.count()) + " ms" : "");
  return Status::Ok();
}

void Node::StopReplicationLeader() {
  if (!replication_leader_) return;
  journal_->SetCommitObserver(nullptr);  // the coordinator that committed is stopped
  MutexLock lock(&replication_mu_);
  refused_before_ += replication_leader_->refused();
  replication_leader_.reset();
}

Status Node::StartFollower(const std::string& endpoint, const std::string& leader_name,
                           uint64_t leader_epoch) {
  const ReplicationSettings& r = config_.replication;
  replication::ReplicationStandbyConfig sc;
  sc.leader_endpoint = endpoint;
  sc.leader_name = leader_name;
  sc.leader_epoch = leader_epoch;
  sc.name = r.name;
  sc.curve = r.curve;
  // The leader's --retention removes runs from its journal alone (it is no
  // commit, so nothing is shipped): a standby applies its own, the same
  // policy, to the runs and audit records it replicated (docs/ha.md,
  // "Retention").
  const actors::RetentionOptions& retention = config_.coordinator_config.retention;
  if (retention.older_than.count() > 0 || retention.audit_older_than.count() > 0) {
    auto rule = std::make_shared<actors::Retention>(journal_.get(), retention);
    sc.upkeep = [rule](Micros wall_now, Micros steady_now) {
      rule->RunDue(wall_now, steady_now);
      return rule->NextDue();
    };
  }
  auto standby = replication::ReplicationStandby::Start(ctx_, journal_.get(), clock_, sc);
  if (!standby.ok()) return standby.status();
  {
    MutexLock lock(&replication_mu_);
    replication_standby_ = std::move(*standby);
  }
  following_ = endpoint;
  following_epoch_ = leader_epoch;
  listening_["replication_follow"] = endpoint;
  listening_["replication_name"] = r.name;
  spdlog::info("replication: standby {} follows {} ({}) from batch {} seq {}", r.name,
               leader_name.empty() ? "its leader" : leader_name, endpoint, journal_->last_batch(),
               journal_->last_seq());
  return Status::Ok();
}

void Node::StopFollower() {
  if (!replication_standby_) return;
  replication_standby_->Stop();  // joins: nothing is applied from here on
  MutexLock lock(&replication_mu_);
  refused_before_ += replication_standby_->refused();
  replication_standby_.reset();
  following_.clear();
  following_epoch_ = 0;
}

void Node::AddReplicationMetrics() {
  if (config_.replication.bind.empty() && config_.replication.follow.empty()) return;
  // Read at scrape time through the node: with --ha-etcd the actors change
  // with the role. The HTTP server stops before the node's members go.
  registry_.AddComputedGauge(
      "apollo11_replication_lag_seq",
      "transitions committed by the leader and not yet durable on the standby (leader: the "
      "worst standby)",
      [this] {
        MutexLock lock(&replication_mu_);
        if (replication_leader_) return static_cast<double>(replication_leader_->worst_lag_seq());
        return replication_standby_ ? static_cast<double>(replication_standby_->lag_seq()) : 0.0;
      });
  registry_.AddComputedGauge(
      "apollo11_replication_lag_seconds",
      "age of the oldest batch a standby has not acknowledged (leader: the worst standby)", [this] {
        MutexLock lock(&replication_mu_);
        if (replication_leader_) return replication_leader_->worst_lag_seconds();
        return replication_standby_ ? replication_standby_->lag_seconds() : 0.0;
      });
  registry_.AddComputedCounter(
      "apollo11_replication_refused_total",
      "replication frames refused: unknown peer, older epoch, bad checksum, gap, undecodable",
      [this] {
        MutexLock lock(&replication_mu_);
        uint64_t n = refused_before_;
        if (replication_leader_) n += replication_leader_->refused();
        if (replication_standby_) n += replication_standby_->refused();
        return static_cast<double>(n);
      });
  registry_.AddComputedGauge(
      "apollo11_replication_lagging",
      "1 while no standby acknowledged within --replication-timeout (sync releases at the "
      "local commit meanwhile); 0 on a standby",
      [this] {
        MutexLock lock(&replication_mu_);
        return replication_leader_ && replication_leader_->lagging() ? 1.0 : 0.0;
      });
}

void Node::StopReplication() {
  StopReplicationLeader();
  StopFollower();
}

replication::ReplicationStatus Node::replication_status() const {
  MutexLock lock(&replication_mu_);
  if (replication_leader_) return replication_leader_->Snapshot();
  if (replication_standby_) return replication_standby_->Snapshot();
  return {};
}

}  // namespace apollo11::cli
