// The Node's replication side (docs/ha.md, "Replication"): a leader's
// replication actor, observing the journal's commits, and a static
// standby's, applying the leader's batches instead of running a coordinator.

#include <spdlog/spdlog.h>

#include <set>

#include "cli/node.h"

namespace apollo11::cli {

Status Node::StartReplicationLeader() {
  const ReplicationSettings& r = config_.replication;
  if (r.bind.empty()) return Status::Ok();
  replication::ReplicationLeaderConfig lc;
  lc.bind = r.bind;
  lc.name = r.name;
  lc.standbys = std::set<std::string>(r.peers.begin(), r.peers.end());
  lc.sync = r.sync;
  lc.timeout = r.timeout;
  lc.epoch = epoch_;
  lc.alerts = &alerts_;
  auto leader = replication::ReplicationLeader::Start(ctx_, journal_.get(), clock_, std::move(lc));
  if (!leader.ok()) return Fail(NodeStage::kReplication, leader.status());
  replication_leader_ = std::move(*leader);
  journal_->SetCommitObserver(replication_leader_.get());
  listening_["replication"] = replication_leader_->endpoint();
  listening_["replication_mode"] = r.sync ? "sync" : "async";
  spdlog::info("replication: leader {} streams the journal on {} ({}{})", r.name,
               replication_leader_->endpoint(), r.sync ? "sync, timeout " : "async",
               r.sync ? std::to_string(r.timeout.count()) + " ms" : "");
  return Status::Ok();
}

Status Node::StartStandby() {
  const ReplicationSettings& r = config_.replication;
  replication::ReplicationStandbyConfig sc;
  sc.leader_endpoint = r.follow;
  sc.leader_name = r.peers.empty() ? "" : r.peers.front();
  sc.name = r.name;
  auto standby =
      replication::ReplicationStandby::Start(ctx_, journal_.get(), clock_, std::move(sc));
  if (!standby.ok()) return Fail(NodeStage::kReplication, standby.status());
  replication_standby_ = std::move(*standby);
  listening_["replication_follow"] = r.follow;
  listening_["replication_name"] = r.name;
  spdlog::info("replication: standby {} follows {} from batch {} seq {}", r.name, r.follow,
               journal_->last_batch(), journal_->last_seq());
  return Status::Ok();
}

void Node::AddReplicationMetrics() {
  replication::ReplicationLeader* leader = replication_leader_.get();
  replication::ReplicationStandby* standby = replication_standby_.get();
  if (leader == nullptr && standby == nullptr) return;
  // Read at scrape time; the HTTP server stops before these are destroyed.
  registry_.AddComputedGauge(
      "apollo11_replication_lag_seq",
      "transitions committed by the leader and not yet durable on the standby (leader: the "
      "worst standby)",
      [leader, standby] {
        return static_cast<double>(leader ? leader->worst_lag_seq() : standby->lag_seq());
      });
  registry_.AddComputedGauge(
      "apollo11_replication_lag_seconds",
      "age of the oldest batch a standby has not acknowledged (leader: the worst standby)",
      [leader, standby] { return leader ? leader->worst_lag_seconds() : standby->lag_seconds(); });
  registry_.AddComputedCounter(
      "apollo11_replication_refused_total",
      "replication frames refused: unknown peer, older epoch, bad checksum, gap, undecodable",
      [leader, standby] {
        return static_cast<double>(leader ? leader->refused() : standby->refused());
      });
  if (leader != nullptr) {
    registry_.AddComputedGauge(
        "apollo11_replication_lagging",
        "1 while no standby acknowledged within --replication-timeout (sync releases at the "
        "local commit meanwhile)",
        [leader] { return leader->lagging() ? 1.0 : 0.0; });
  }
}

void Node::StopReplication() {
  if (replication_leader_) {
    journal_->SetCommitObserver(nullptr);
    replication_leader_.reset();
  }
  if (replication_standby_) replication_standby_->Stop();
  replication_standby_.reset();
}

replication::ReplicationStatus Node::replication_status() const {
  if (replication_leader_) return replication_leader_->Snapshot();
  if (replication_standby_) return replication_standby_->Snapshot();
  return {};
}

}  // namespace apollo11::cli
