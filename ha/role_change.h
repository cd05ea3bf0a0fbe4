#pragma once
// The order in which a node changes its coordinator's role when the
// election says so, as plain logic: PlanRoleChange looks at what the node
// runs and what the board says, and returns the steps, in order. The node
// (cli/node_ha.cc) carries them out on its threads; the simulator
// (tests/sim) carries the same plan out on its simulated parts, so the
// order is tested where interleavings are cheap.
//
// The order's reasons:
//   - a leader standing down stops waiting for its standbys first, so its
//     coordinator stops at once (its frames to workers are fenced by the
//     lease already);
//   - the old role's coordinator stops before anything else changes: no
//     commit of the old role happens after this point;
//   - a new leader stops applying the old leader's stream before it
//     recovers, and serves its standbys before its coordinator commits;
//     an old leader stops serving standbys;
//   - a standby then follows the leader the board names (when it
//     replicates and the leader advertises a replication endpoint).

#include <cstdint>
#include <string>
#include <vector>

#include "ha/role_view.h"

namespace apollo11::ha {

// What the node runs now.
struct NodeRoles {
  bool coordinator_running = false;
  bool coordinator_standby = true;
  uint64_t epoch = 0;               // the epoch its coordinator runs in
  bool replication_leader = false;  // serving standbys
  std::string following;            // the replication endpoint followed; "" none
  uint64_t following_epoch = 0;     // the leader epoch the follower accepts
  bool replicates = false;          // the cluster replicates its journal
};

struct RoleStep {
  enum class Kind : uint8_t {
    kAnnounce,                // log and alert the leadership change
    kStopWaitingStandbys,     // commits stop waiting for acknowledgements
    kStopCoordinator,         // the old role's actors stop; no commit after this
    kStopReplicationLeader,   // stop serving standbys
    kStopFollower,            // stop applying a leader's stream
    kStartReplicationLeader,  // serve standbys in `epoch`
    kStartCoordinator,        // in role `standby`, epoch `epoch`
    kFollow,                  // apply the stream of `leader` at `endpoint`
  };
  Kind kind = Kind::kAnnounce;
  bool standby = false;
  uint64_t epoch = 0;
  std::string endpoint;
  std::string leader;
  bool operator==(const RoleStep&) const = default;
};

// The steps that bring `now` in line with `board` (this node is
// board.self). Empty when nothing changes.
std::vector<RoleStep> PlanRoleChange(const NodeRoles& now, const RoleState& board);

// "stop coordinator", ...: for logs and test messages.
const char* RoleStepName(RoleStep::Kind kind);

}  // namespace apollo11::ha
