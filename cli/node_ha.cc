// election: the Node's HA side. The elector thread publishes the role into
// the board; the node's thread (Run) restarts the coordinator in the new role
// (SyncHaRole): a standby coordinator recovers and schedules nothing, a new
// leader's coordinator recovers from the journal exactly as a restarted one.
#include <spdlog/spdlog.h>

#include <memory>
#include <thread>

#include "cli/node.h"
#include "common/log_folder.h"
#include "ha/in_sync.h"
#include "ha/role_change.h"

namespace apollo11::cli {

ha::ElectorEvents Node::HaElectorEvents() {
  ha::ElectorEvents events;
  events.begin_term = [journal = journal_.get()](uint64_t epoch) {
    auto term = journal->BeginTerm(epoch);
    return term.ok() ? Status::Ok() : term.status();
  };
  events.lease_lost = [this](const std::string& why) {
    spdlog::error("HA: lost the leader lease, standing down: {}", why);
    if (ha_lease_lost_ != nullptr) ha_lease_lost_->Inc();
    alerts::AlertEvent e;
    e.type = alerts::AlertType::kLeaseLost;
    e.reason = why;
    e.ts = clock_->Now();
    alerts_.Emit(std::move(e));
  };
  // One line per kind of trouble per 10 s, with the count of those held
  // back: a journal epoch ahead of a fresh etcd made the elector refuse to
  // lead ~130 times a second ("refusing to lead in epoch N"), each campaign
  // climbing etcd's revision towards the journal's, and logged each one.
  // Called on the elector's thread only.
  events.etcd_error = [clock = clock_, folder = std::make_shared<LogFolder>(10 * kMicrosPerSecond)](
                          const Status& s) {
    uint64_t folded = 0;
    if (!folder->Allow(LogFolder::NumbersFolded(s.message()), clock->Steady(), &folded)) {
      return;
    }
    spdlog::warn("HA: {}{}", s.message(), folder->Suffix(folded));
  };
  // Someone with write access to etcd put a key under the election prefix
  // that no coordinator campaigned with: logged and alerted (folded per 10 s
  // while it cannot be removed).
  events.foreign_key =
      [this, folder = std::make_shared<LogFolder>(10 * kMicrosPerSecond)](const std::string& why) {
        uint64_t folded = 0;
        if (!folder->Allow(LogFolder::NumbersFolded(why), clock_->Steady(), &folded)) return;
        spdlog::error("HA: {}{}", why, folder->Suffix(folded));
        alerts::AlertEvent e;
        e.type = alerts::AlertType::kElectionKeyRefused;
        e.reason = why;
        e.ts = clock_->Now();
        alerts_.Emit(std::move(e));
      };
  events.eligibility = [](bool may, const std::string& why) {
    if (may) {
      spdlog::info("HA: may campaign again: {}", why);
    } else {
      spdlog::warn("HA: not campaigning: {}", why);
    }
  };
  return events;
}

void Node::StartHa() {
  const HaConfig& h = config_.ha;
  ha_board_ = std::make_unique<ha::RoleBoard>(clock_, h.self);
  etcd_ = std::make_unique<ha::EtcdClient>(ha::EtcdClientOptions{h.etcd, Millis(500), Millis(1500)},
                                           h.security);
  ha::ElectorEvents events = HaElectorEvents();
  ha::ElectorOptions options{h.election, h.lease_ttl_s, Millis(0), ""};
  // Gated only where a leader waits for its standbys: an async leader
  // releases before any standby has a batch, so its record would name it
  // alone and no standby could ever take over.
  if (!config_.replication.bind.empty() && config_.replication.sync) {
    options.in_sync_key = ha::InSyncKey(h.election);
    in_sync_etcd_ = std::make_unique<ha::EtcdClient>(
        ha::EtcdClientOptions{h.etcd, Millis(500), Millis(1500)}, h.security);
  }
  elector_ = std::make_unique<ha::HaElector>(etcd_.get(), clock_, ha_board_.get(), options,
                                             std::move(events));
  ha_board_->Subscribe([](const ha::RoleState& s) {
    spdlog::info("HA: role {} epoch {} leader {} ({})", ha::RoleName(s.role), s.epoch,
                 s.leader.name.empty() ? "unknown" : s.leader.name, s.leader.client_endpoint);
  });
  const ha::RoleBoard* board = ha_board_.get();
  registry_.AddComputedGauge("apollo11_ha_role", "1 while this coordinator leads, 0 on a standby",
                             [board] { return board->role() == ha::Role::kLeader ? 1.0 : 0.0; });
  registry_.AddComputedGauge("apollo11_ha_epoch",
                             "the epoch of the current leader term (etcd create_revision)",
                             [board] { return static_cast<double>(board->epoch()); });
  registry_.AddComputedCounter("apollo11_ha_failovers_total",
                               "leadership changes this coordinator has seen",
                               [board] { return static_cast<double>(board->failovers()); });
  ha_lease_lost_ = &registry_.AddCounter(
      "apollo11_ha_lease_lost_total",
      "times this coordinator stopped leading without resigning (lease expired, keepalive "
      "failed too long, etcd dropped the lease, another leader)");
  const ha::HaElector* elector = elector_.get();
  registry_.AddComputedCounter("apollo11_ha_elector_steps_total",
                               "decisions the HA elector has made (campaign, keepalive, step down)",
                               [elector] { return static_cast<double>(elector->steps()); });
  spdlog::info("HA: campaigning as {} (workers tcp {}, clients {}) in etcd {} with a {} s lease",
               h.self.name, h.self.worker_endpoint, h.self.client_endpoint, h.etcd.front(),
               h.lease_ttl_s);
  if (config_.replication.bind.empty()) {
    spdlog::warn(
        "HA without replication (--ha-without-replication): the journal is not replicated, so "
        "a standby that takes over knows only the runs in its own journal (docs/ha.md, "
        "\"Replication\")");
  }
  elector_thread_ = std::make_unique<ha::ElectorThread>(elector_.get(), clock_);
}

void Node::SyncHaRole() {
  if (!ha_board_ || !coordinator_ || ha_failure_) return;
  const ha::RoleState s = ha_board_->Current();
  ha::NodeRoles now;
  now.coordinator_running = true;
  now.coordinator_standby = coordinator_standby_;
  now.epoch = epoch_;
  now.replication_leader = replication_leader_ != nullptr;
  now.following = following_;
  now.following_epoch = following_epoch_;
  now.replicates = !config_.replication.bind.empty();
  for (const ha::RoleStep& step : ha::PlanRoleChange(now, s)) {
    Status done = RunRoleStep(step, s);
    if (!done.ok()) {
      ha_failure_ = Status::Internal("HA: " + std::string(ha::RoleStepName(step.kind)) +
                                     " failed: " + done.message());
      return;
    }
  }
}

Status Node::RunRoleStep(const ha::RoleStep& step, const ha::RoleState& s) {
  using Kind = ha::RoleStep::Kind;
  switch (step.kind) {
    case Kind::kAnnounce:
      AnnounceRole(step.standby, s);
      return Status::Ok();
    case Kind::kStopWaitingStandbys:
      if (replication_leader_) replication_leader_->StopWaiting();
      return Status::Ok();
    case Kind::kStopCoordinator:
      serving_leader_.store(false);
      coordinator_->Stop();  // the old role's: no commit from here on
      coordinator_.reset();
      return Status::Ok();
    case Kind::kStopReplicationLeader:
      StopReplicationLeader();
      return Status::Ok();
    case Kind::kStopFollower:
      StopFollower();
      return Status::Ok();
    case Kind::kStartReplicationLeader:
      return StartReplicationLeader(step.epoch);
    case Kind::kStartCoordinator:
      return RestartCoordinatorAs(step.standby, step.epoch);
    case Kind::kFollow:
      return StartFollower(step.endpoint, step.leader, step.epoch);
  }
  return Status::Internal("unknown role step");
}

void Node::AnnounceRole(bool standby, const ha::RoleState& s) {
  spdlog::warn("HA: {} in epoch {}: restarting the coordinator as {}",
               standby ? "standing down" : "elected leader", s.epoch, ha::RoleName(s.role));
  alerts::AlertEvent e;
  e.type = alerts::AlertType::kLeadershipChanged;
  e.reason = config_.ha.self.name + (standby ? " stood down" : " leads") + " in epoch " +
             std::to_string(s.epoch);
  e.ts = clock_->Now();
  alerts_.Emit(std::move(e));
}

Status Node::RestartCoordinatorAs(bool standby, uint64_t epoch) {
  Status started = Status::Ok();
  for (int i = 0; i < kRebindAttempts; ++i) {
    started = StartCoordinatorActors(standby, epoch);
    if (started.ok()) break;
    std::this_thread::sleep_for(kRebindRetry);  // the old role's ports are closing
  }
  if (!started.ok()) return started;
  if (standby) return Status::Ok();
  epoch_ = epoch;
  const actors::RecoveryReport& rec = coordinator_->recovery();
  spdlog::info("HA: leading in epoch {}: recovered {} unfinished runs ({} RUNNING to claim)",
               epoch_, rec.runs, rec.running);
  return Status::Ok();
}

void Node::ResignLeadership() {
  if (elector_thread_) elector_thread_->Resign();
}

nlohmann::json Node::ClusterJson() const {
  nlohmann::json out = {{"ha", ha_board_ != nullptr}};
  if (!ha_board_) {
    out["role"] = "leader";
    out["epoch"] = epoch_;
    return out;
  }
  const ha::RoleState s = ha_board_->Current();
  // The replication lag of a standby (null: not replicated or not known
  // here): the leader knows every standby's, a standby its own.
  const replication::ReplicationStatus rep = replication_status();
  auto lag_of = [&rep, &s](const std::string& name, nlohmann::json* m) {
    if (rep.role == "standby" && name == s.self.name) {
      (*m)["replication_lag_seq"] = rep.lag_seq;
      (*m)["replication_lag_ms"] = static_cast<uint64_t>(rep.lag_seconds * 1000);
    }
    for (const replication::StandbyStatus& st : rep.standbys) {
      if (st.name != name) continue;
      (*m)["replication_lag_seq"] = st.lag_seq;
      (*m)["replication_lag_ms"] = static_cast<uint64_t>(st.lag_seconds * 1000);
      (*m)["replication_copying"] = st.copying;
    }
  };
  auto member = [&lag_of](const ha::Member& m) {
    nlohmann::json out{
        {"name", m.name},
        {"workers", m.worker_endpoint},
        {"clients", m.client_endpoint},
        {"replication", m.replication_endpoint.empty() ? nlohmann::json(nullptr)
                                                       : nlohmann::json(m.replication_endpoint)},
        {"replication_lag_seq", nullptr},
        {"replication_lag_ms", nullptr}};
    lag_of(m.name, &out);
    return out;
  };
  out["self"] = member(s.self);
  out["self"]["eligible"] = elector_ ? elector_->eligible() : true;
  out["in_sync"] = rep.role == "leader" && rep.mode == "sync" ? nlohmann::json(rep.in_sync)
                                                              : nlohmann::json(nullptr);
  out["role"] = ha::RoleName(s.role);
  out["epoch"] = s.epoch;
  out["leader"] = s.leader.name.empty() ? nlohmann::json(nullptr) : member(s.leader);
  out["failovers"] = ha_board_->failovers();
  out["terms_won"] = s.terms_won;
  out["etcd"] = config_.ha.etcd;
  nlohmann::json coordinators = nlohmann::json::array({member(s.self)});
  coordinators[0]["role"] = ha::RoleName(s.role);
  if (!s.leader.name.empty() && s.leader.name != s.self.name) {
    coordinators.push_back(member(s.leader));
    coordinators[1]["role"] = "leader";
  }
  // The leader also knows the standbys that replicate from it.
  for (const replication::StandbyStatus& st : rep.standbys) {
    if (st.name == s.self.name) continue;
    nlohmann::json m{{"name", st.name}, {"role", "standby"}};
    lag_of(st.name, &m);
    coordinators.push_back(std::move(m));
  }
  out["coordinators"] = coordinators;
  return out;
}

}  // namespace apollo11::cli
