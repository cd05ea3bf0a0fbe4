#include "ha/role_change.h"

#include <utility>

namespace apollo11::ha {
namespace {

using Kind = RoleStep::Kind;

RoleStep Step(Kind kind, bool standby = false, uint64_t epoch = 0, std::string endpoint = "",
              std::string leader = "") {
  RoleStep step;
  step.kind = kind;
  step.standby = standby;
  step.epoch = epoch;
  step.endpoint = std::move(endpoint);
  step.leader = std::move(leader);
  return step;
}

// A standby follows the leader the board names, when the cluster
// replicates and that leader advertises where.
void PlanFollow(const NodeRoles& now, const RoleState& board, std::vector<RoleStep>* steps) {
  if (!now.replicates) return;
  const std::string& endpoint = board.leader.replication_endpoint;
  // No leader known (or one that does not replicate): keep following the
  // last one, whose frames stop when it stops leading.
  if (board.leader.name.empty() || board.leader.name == board.self.name || endpoint.empty()) {
    return;
  }
  // The same leader re-elected in a newer term is followed again in that
  // term: the follower accepts only the epoch etcd backs.
  if (endpoint == now.following && board.epoch == now.following_epoch) return;
  if (!now.following.empty()) steps->push_back(Step(Kind::kStopFollower));
  steps->push_back(Step(Kind::kFollow, true, board.epoch, endpoint, board.leader.name));
}

}  // namespace

std::vector<RoleStep> PlanRoleChange(const NodeRoles& now, const RoleState& board) {
  std::vector<RoleStep> steps;
  if (!now.coordinator_running) return steps;
  const bool standby = board.role != Role::kLeader;
  if (standby == now.coordinator_standby && (standby || board.epoch == now.epoch)) {
    if (standby) PlanFollow(now, board, &steps);
    return steps;
  }
  steps.push_back(Step(Kind::kAnnounce, standby, board.epoch));
  if (standby && now.replication_leader) steps.push_back(Step(Kind::kStopWaitingStandbys));
  steps.push_back(Step(Kind::kStopCoordinator));
  // An old leader stops serving standbys; so does one re-elected in a newer
  // term, whose stream starts again in that term.
  if (now.replication_leader) steps.push_back(Step(Kind::kStopReplicationLeader));
  if (!standby) {
    if (!now.following.empty()) steps.push_back(Step(Kind::kStopFollower));
    if (now.replicates) steps.push_back(Step(Kind::kStartReplicationLeader, false, board.epoch));
  }
  // A standby keeps the epoch of its journal; a leader runs in its term's.
  steps.push_back(Step(Kind::kStartCoordinator, standby, standby ? now.epoch : board.epoch));
  if (standby) PlanFollow(now, board, &steps);
  return steps;
}

const char* RoleStepName(RoleStep::Kind kind) {
  switch (kind) {
    case Kind::kAnnounce:
      return "announce";
    case Kind::kStopWaitingStandbys:
      return "stop waiting for standbys";
    case Kind::kStopCoordinator:
      return "stop coordinator";
    case Kind::kStopReplicationLeader:
      return "stop replication leader";
    case Kind::kStopFollower:
      return "stop follower";
    case Kind::kStartReplicationLeader:
      return "start replication leader";
    case Kind::kStartCoordinator:
      return "start coordinator";
    case Kind::kFollow:
      return "follow";
  }
  return "?";
}

}  // namespace apollo11::ha
