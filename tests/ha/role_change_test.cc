// The order of a role change (ha/role_change.h), step by step.

#include "ha/role_change.h"

#include <catch2/catch.hpp>

using namespace apollo11;      // NOLINT: test file
using namespace apollo11::ha;  // NOLINT: test file

namespace {

using Kind = RoleStep::Kind;

std::vector<Kind> Kinds(const std::vector<RoleStep>& steps) {
  std::vector<Kind> kinds;
  for (const RoleStep& s : steps) kinds.push_back(s.kind);
  return kinds;
}

Member Node(const std::string& name, const std::string& replication = "") {
  return {name, "tcp://" + name + ":1", "tcp://" + name + ":2", replication};
}

RoleState Board(Role role, uint64_t epoch, Member leader) {
  RoleState s;
  s.role = role;
  s.epoch = epoch;
  s.leader = std::move(leader);
  s.self = Node("self", "tcp://self:3");
  if (role == Role::kLeader) s.leader = s.self;
  return s;
}

NodeRoles Standby(std::string following = "", uint64_t following_epoch = 12) {
  NodeRoles n;
  n.coordinator_running = true;
  n.coordinator_standby = true;
  n.epoch = 4;
  n.following = std::move(following);
  n.following_epoch = n.following.empty() ? 0 : following_epoch;
  n.replicates = true;
  return n;
}

}  // namespace

TEST_CASE("a standby elected leader stops its coordinator and its follower before it recovers",
          "[ha][role_change]") {
  auto steps = PlanRoleChange(Standby("tcp://old:3"), Board(Role::kLeader, 9, {}));
  CHECK(Kinds(steps) == std::vector<Kind>{Kind::kAnnounce, Kind::kStopCoordinator,
                                          Kind::kStopFollower, Kind::kStartReplicationLeader,
                                          Kind::kStartCoordinator});
  CHECK(steps[3].epoch == 9);  // serves standbys in its term
  CHECK_FALSE(steps[4].standby);
  CHECK(steps[4].epoch == 9);
}

TEST_CASE("a leader standing down stops waiting for standbys first, then stops serving them",
          "[ha][role_change]") {
  NodeRoles leader = Standby();
  leader.coordinator_standby = false;
  leader.epoch = 9;
  leader.replication_leader = true;
  auto steps = PlanRoleChange(leader, Board(Role::kStandby, 12, Node("other", "tcp://other:3")));
  CHECK(Kinds(steps) == std::vector<Kind>{Kind::kAnnounce, Kind::kStopWaitingStandbys,
                                          Kind::kStopCoordinator, Kind::kStopReplicationLeader,
                                          Kind::kStartCoordinator, Kind::kFollow});
  CHECK(steps[4].standby);
  CHECK(steps[4].epoch == 9);  // a standby keeps its journal's epoch
  CHECK(steps[5].endpoint == "tcp://other:3");
  CHECK(steps[5].leader == "other");
  CHECK(steps[5].epoch == 12);  // the follower accepts only the epoch etcd backs
}

TEST_CASE("a standby follows a new leader's stream and nothing else changes", "[ha][role_change]") {
  auto steps =
      PlanRoleChange(Standby("tcp://old:3"), Board(Role::kStandby, 12, Node("new", "tcp://new:3")));
  CHECK(Kinds(steps) == std::vector<Kind>{Kind::kStopFollower, Kind::kFollow});
  CHECK(
      PlanRoleChange(Standby("tcp://new:3"), Board(Role::kStandby, 12, Node("new", "tcp://new:3")))
          .empty());
  // The same leader re-elected in a newer term: followed again, in that term.
  auto again =
      PlanRoleChange(Standby("tcp://new:3"), Board(Role::kStandby, 15, Node("new", "tcp://new:3")));
  CHECK(Kinds(again) == std::vector<Kind>{Kind::kStopFollower, Kind::kFollow});
  CHECK(again[1].epoch == 15);
  // No leader known, or one without a replication endpoint: keep following.
  CHECK(PlanRoleChange(Standby("tcp://old:3"), Board(Role::kStandby, 12, Member{})).empty());
  CHECK(PlanRoleChange(Standby("tcp://old:3"), Board(Role::kStandby, 12, Node("new"))).empty());
  // A cluster that does not replicate follows nobody.
  NodeRoles plain = Standby();
  plain.replicates = false;
  CHECK(PlanRoleChange(plain, Board(Role::kStandby, 12, Node("new", "tcp://new:3"))).empty());
}

TEST_CASE("a leader re-elected in a newer term restarts in that term", "[ha][role_change]") {
  NodeRoles leader = Standby();
  leader.coordinator_standby = false;
  leader.epoch = 9;
  leader.replication_leader = true;
  CHECK(PlanRoleChange(leader, Board(Role::kLeader, 9, {})).empty());
  auto steps = PlanRoleChange(leader, Board(Role::kLeader, 15, {}));
  CHECK(Kinds(steps) == std::vector<Kind>{Kind::kAnnounce, Kind::kStopCoordinator,
                                          Kind::kStopReplicationLeader,
                                          Kind::kStartReplicationLeader, Kind::kStartCoordinator});
  CHECK(steps.back().epoch == 15);
  // Not running a coordinator (starting up, or failed): nothing to change.
  NodeRoles off;
  CHECK(PlanRoleChange(off, Board(Role::kLeader, 15, {})).empty());
}
