#include "actors/worker/coordinator_follower.h"

#include <algorithm>

#include "transport/messages.h"

namespace apollo11::actors {
namespace {

using transport::MsgType;

bool Is(const transport::Envelope& e, MsgType type) {
  return e.type == static_cast<uint16_t>(type);
}

// The epoch a DISPATCH, CANCEL or HEARTBEAT carries; nullopt for other
// types or a body that does not decode.
std::optional<uint64_t> EpochOf(const transport::Envelope& e) {
  if (Is(e, MsgType::kDispatch)) {
    auto d = transport::BodyAs<transport::Dispatch>(e);
    if (d.ok()) return d->epoch;
  } else if (Is(e, MsgType::kCancel)) {
    auto c = transport::BodyAs<transport::Cancel>(e);
    if (c.ok()) return c->epoch;
  } else if (Is(e, MsgType::kHeartbeat)) {
    auto hb = transport::BodyAs<transport::Heartbeat>(e);
    if (hb.ok()) return hb->epoch;
  }
  return std::nullopt;
}

}  // namespace

CoordinatorFollower::CoordinatorFollower(std::vector<std::string> endpoints)
    : endpoints_(std::move(endpoints)) {
  if (endpoints_.empty()) endpoints_.emplace_back();
}

bool CoordinatorFollower::OnNotLeader(size_t from, const std::string& leader) {
  auto named = std::find(endpoints_.begin(), endpoints_.end(), leader);
  if (!leader.empty() && named != endpoints_.end() &&
      static_cast<size_t>(named - endpoints_.begin()) != from) {
    current_ = static_cast<size_t>(named - endpoints_.begin());
    return true;
  }
  current_ = (std::min(from, endpoints_.size() - 1) + 1) % endpoints_.size();
  return false;
}

void CoordinatorFollower::OnSilent() { current_ = (current_ + 1) % endpoints_.size(); }

CoordinatorFollower::Admit CoordinatorFollower::OnFrame(size_t from,
                                                        const transport::Envelope& envelope,
                                                        uint64_t epoch_seen) {
  if (from == current_ || from >= endpoints_.size()) {
    return from == current_ ? Admit::kDeliver : Admit::kDrop;
  }
  if (Is(envelope, MsgType::kRefused)) return Admit::kDeliver;
  const std::optional<uint64_t> epoch = EpochOf(envelope);
  if (!epoch) return Admit::kDrop;
  const bool command = Is(envelope, MsgType::kDispatch) || Is(envelope, MsgType::kCancel);
  if (command && *epoch < epoch_seen) return Admit::kDeliver;  // the fence refuses it
  const bool speaks = Is(envelope, MsgType::kDispatch) || Is(envelope, MsgType::kHeartbeat);
  // Epochs are terms: only the leader of the newest one speaks in it.
  if (speaks && *epoch > 0 && *epoch >= epoch_seen) {
    current_ = from;
    return Admit::kSwitchAndDeliver;
  }
  return Admit::kDrop;
}

}  // namespace apollo11::actors
