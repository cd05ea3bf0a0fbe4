#include "ha/role_board.h"

#include <vector>

namespace apollo11::ha {

const char* RoleName(Role role) { return role == Role::kLeader ? "leader" : "standby"; }

RoleBoard::RoleBoard(const Clock* clock, Member self) : clock_(clock) {
  state_.self = std::move(self);
}

RoleState RoleBoard::Current() const {
  MutexLock lock(&mu_);
  RoleState s = state_;
  if (s.role == Role::kLeader && !MayAct()) {
    // Past its deadline a leader is no leader, even before the elector's
    // thread (maybe blocked in an etcd call) has said so.
    s.role = Role::kStandby;
    s.leader = Member{};
  }
  return s;
}

bool RoleBoard::MayAct() const { return leading_.load() && clock_->Steady() < act_until_.load(); }

uint64_t RoleBoard::Subscribe(Listener listener) {
  MutexLock lock(&mu_);
  const uint64_t id = next_id_++;
  listeners_.emplace(id, std::move(listener));
  return id;
}

void RoleBoard::Unsubscribe(uint64_t id) {
  MutexLock notifying(&notify_mu_);
  MutexLock lock(&mu_);
  listeners_.erase(id);
}

void RoleBoard::Publish(Role role, uint64_t epoch, Member leader, Micros act_until) {
  MutexLock notifying(&notify_mu_);
  RoleState now;
  std::vector<Listener> call;
  {
    MutexLock lock(&mu_);
    RoleState next = state_;
    next.role = role;
    next.epoch = epoch;
    if (role == Role::kLeader && state_.role != Role::kLeader) ++next.terms_won;
    if (!leader.name.empty() && leader.name != last_leader_) {
      if (!last_leader_.empty()) failovers_.fetch_add(1);
      last_leader_ = leader.name;
    }
    next.leader = std::move(leader);
    if (role == Role::kLeader) act_until_.store(act_until);
    leading_.store(role == Role::kLeader);
    epoch_.store(epoch);
    if (next == state_) return;
    state_ = next;
    now = state_;
    for (const auto& [id, l] : listeners_) call.push_back(l);
  }
  for (const auto& l : call) l(now);
}

}  // namespace apollo11::ha
