// WorkerCore: following the leader among several coordinators (HA, issue
// 14). Which coordinator is current is CoordinatorFollower's decision; this
// is what the worker does when it changes: HELLO there, with the executions
// it holds and every result not yet acknowledged. Also what it does with a
// coordinator of another protocol version: log it once and keep trying; and
// its heartbeats (a new term, the answer to a HELLO that lets the queue start).

#include <spdlog/spdlog.h>

#include <algorithm>

#include "actors/worker/worker_core.h"
#include "common/log_event.h"
#include "transport/protocol_mismatch.h"

namespace apollo11::actors {

void WorkerCore::FollowLeader(const std::string& leader) {
  const std::string refuser = follower_.endpoint(frame_from_);
  // A refusal from a coordinator that is not the one it follows: the answer
  // to a frame sent before it moved (a standby refuses every frame: the
  // HELLO and each result resent with it), or an older coordinator's answer
  // to a WATCH. A HELLO and a log line per such refusal flooded the leader
  // and the log around every failover (issue 36), and following it would
  // leave the coordinator the worker chose for a reason of its own: dropped.
  if (frame_from_ != follower_.current()) return;
  hello_answered_ = false;  // another coordinator decides what the queue keeps
  const bool at_once = follower_.OnNotLeader(frame_from_, leader);
  const std::string named = leader.empty() ? "unknown" : leader;
  const std::string line = fmt::format(
      "worker {}: the coordinator at {} is not the leader (the leader is {}); following {}",
      options_.worker_id, refuser, named, follower_.current_endpoint());
  uint64_t folded = 0;
  if (log_folder_.Allow(line, clock_->Steady(), &folded)) {
    LogEvent(spdlog::level::info, "coordinator_not_leader",
             {{"endpoint", refuser},
              {"leader", named},
              {"next", follower_.current_endpoint()},
              {"not_logged", folded}},
             "{}{}", line, log_folder_.Suffix(folded));
  }
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
  const size_t silent_at = follower_.current();
  const std::string silent = follower_.current_endpoint();
  follower_.OnSilent();
  if (SpeaksOtherVersion(silent_at)) return;  // said once; quiet from here on
  const std::string line = fmt::format("worker {}: the coordinator at {} is silent; following {}",
                                       options_.worker_id, silent, follower_.current_endpoint());
  uint64_t folded = 0;
  if (!log_folder_.Allow(line, clock_->Steady(), &folded)) return;
  LogEvent(spdlog::level::warn, "coordinator_silent",
           {{"endpoint", silent}, {"next", follower_.current_endpoint()}, {"not_logged", folded}},
           "{}{}", line, log_folder_.Suffix(folded));
}

void WorkerCore::LogFolded(Micros now) {
  for (const auto& [line, count] : log_folder_.TakeStale(now)) {
    LogEvent(spdlog::level::info, "log_folded", {{"line", line}, {"not_logged", count}},
             "{} ({} more like it were not logged)", line, count);
  }
}

void WorkerCore::Followed(uint64_t hellos_before) {
  LogEvent(spdlog::level::info, "coordinator_leader", {{"endpoint", follower_.current_endpoint()}},
           "worker {}: the coordinator at {} leads a newer term; following it", options_.worker_id,
           follower_.current_endpoint());
  // Called after the frame's handler: a DISPATCH is then in the HELLO's list
  // and its slot out of the credit; a heartbeat of a new term said HELLO.
  if (hellos_ == hellos_before) Hello();
}

void WorkerCore::OnOtherVersion(size_t from, const std::string& why) {
  if (other_version_.size() < follower_.size()) other_version_.resize(follower_.size());
  if (from >= other_version_.size() || !other_version_[from].empty()) return;
  other_version_[from] = why;
  LogEvent(spdlog::level::err, "coordinator_other_version",
           {{"endpoint", follower_.endpoint(from)}, {"reason", why}},
           "worker {}: the coordinator at {} speaks another protocol version: {}; this worker "
           "speaks {} and keeps trying (this is logged once)",
           options_.worker_id, follower_.endpoint(from), why, transport::kProtocolVersion);
}

bool WorkerCore::RefusedForVersion(const transport::Envelope& envelope, size_t from) {
  if (envelope.type == transport::ToWire(transport::MsgType::kRefused)) {
    auto refused = transport::BodyAs<transport::Refused>(envelope);
    if (refused.ok() && transport::IsProtocolMismatch(refused->reason)) {
      OnOtherVersion(from, refused->reason.substr(0, 1024));
      return true;
    }
  }
  if (from < other_version_.size()) other_version_[from].clear();  // it speaks ours now
  return false;
}

bool WorkerCore::SpeaksOtherVersion(size_t coordinator) const {
  return coordinator < other_version_.size() && !other_version_[coordinator].empty();
}

Micros WorkerCore::WatchInterval() const {
  return std::min<Micros>(options_.heartbeat.count() * kMicrosPerMilli, kMaxWatchInterval);
}

void WorkerCore::WatchOthers() {
  if (follower_.size() < 2) return;
  last_watch_ = clock_->Steady();
  transport::Watch watch{options_.worker_id, epoch_seen_};
  for (size_t i = 0; i < follower_.size(); ++i) {
    if (i == follower_.current()) continue;
    watch_outbox_.emplace_back(i, transport::EncodeToString(transport::MsgType::kWatch, watch));
  }
}

bool WorkerCore::StaleRefusal(const transport::Envelope& envelope) {
  if (envelope.type != transport::ToWire(transport::MsgType::kRefused)) return false;
  auto refused = transport::BodyAs<transport::Refused>(envelope);
  if (!refused.ok() || refused->epoch == 0 || refused->epoch >= epoch_seen_) return false;
  ++stale_refusals_;
  return true;
}

bool WorkerCore::OnHeartbeatFrame(const transport::Envelope& envelope) {
  auto hb = transport::BodyAs<transport::Heartbeat>(envelope);
  if (!hb.ok()) return false;
  if (!hb->registered) {
    // The coordinator does not know us: our HELLO never arrived, or it
    // declared us lost and requeued what we held.
    DropQueued("the coordinator does not know this worker");
    epoch_seen_ = std::max(epoch_seen_, hb->epoch);
    Hello();
    return true;
  }
  if (hb->answers_hello) {
    // The answer to our HELLO, after the CANCELs of what the coordinator
    // gave to another worker: the queue may start.
    epoch_seen_ = std::max(epoch_seen_, hb->epoch);
    hello_answered_ = true;
    return true;
  }
  if (hb->epoch > epoch_seen_) {
    // A new coordinator term: introduce ourselves again.
    const bool first = epoch_seen_ == 0;
    epoch_seen_ = hb->epoch;
    if (!first) {
      hello_answered_ = false;  // a new term: its claims decide what we keep
      Hello();
      return true;
    }
  }
  // A coordinator that knows us in its current term (one older than the
  // answers_hello flag answers a HELLO this way too); not one we are only
  // now following, which has not seen our HELLO yet.
  if (!switching_) hello_answered_ = true;
  return true;
}

}  // namespace apollo11::actors
