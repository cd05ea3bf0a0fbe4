// WorkerCore: following the leader among several coordinators (HA, issue
// 14). Which coordinator is current is CoordinatorFollower's decision; this
// is what the worker does when it changes: HELLO there, with the executions
// it holds and every result not yet acknowledged.

#include <spdlog/spdlog.h>

#include "actors/worker/worker_core.h"
#include "common/log_event.h"

namespace apollo11::actors {

void WorkerCore::FollowLeader(const std::string& leader) {
  const std::string refuser = follower_.endpoint(frame_from_);
  const bool at_once = follower_.OnNotLeader(frame_from_, leader);
  LogEvent(spdlog::level::info, "coordinator_not_leader",
           {{"endpoint", refuser},
            {"leader", leader.empty() ? "unknown" : leader},
            {"next", follower_.current_endpoint()}},
           "worker {}: the coordinator at {} is not the leader (the leader is {}); following {}",
           options_.worker_id, refuser, leader.empty() ? "unknown" : leader,
           follower_.current_endpoint());
  if (at_once) {
    Hello();
    return;
  }
  // No other coordinator named: ask the next one a heartbeat from now (Tick
  // says HELLO again when no answer came), not in a loop between standbys.
  const Micros now = clock_->Steady();
  last_hello_ = now;
  last_heard_ = now;
  heard_since_hello_ = false;
  hello_deferred_ = true;
}

void WorkerCore::FollowNext() {
  if (follower_.size() < 2) return;
  const std::string silent = follower_.current_endpoint();
  follower_.OnSilent();
  LogEvent(spdlog::level::warn, "coordinator_silent",
           {{"endpoint", silent}, {"next", follower_.current_endpoint()}},
           "worker {}: the coordinator at {} is silent; following {}", options_.worker_id, silent,
           follower_.current_endpoint());
}

void WorkerCore::Followed(uint64_t hellos_before) {
  LogEvent(spdlog::level::info, "coordinator_leader", {{"endpoint", follower_.current_endpoint()}},
           "worker {}: the coordinator at {} leads a newer term; following it", options_.worker_id,
           follower_.current_endpoint());
  // Called after the frame's handler: a DISPATCH is then in the HELLO's list
  // and its slot out of the credit; a heartbeat of a new term said HELLO.
  if (hellos_ == hellos_before) Hello();
}

}  // namespace apollo11::actors
