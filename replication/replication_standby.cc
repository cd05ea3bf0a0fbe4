#include "replication/replication_standby.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <utility>
#include <vector>

#include "transport/sockets.h"

namespace apollo11::replication {
namespace {

constexpr auto kStandbyTick = std::chrono::milliseconds(200);

}  // namespace

ReplicationStandby::ReplicationStandby(storage::Journal* journal, const Clock* clock,
                                       ReplicationStandbyConfig config)
    : journal_(journal), clock_(clock), config_(std::move(config)), replica_(journal) {}

Result<std::unique_ptr<ReplicationStandby>> ReplicationStandby::Start(
    zmq::context_t& ctx, storage::Journal* journal, const Clock* clock,
    ReplicationStandbyConfig config) {
  std::unique_ptr<ReplicationStandby> standby(
      new ReplicationStandby(journal, clock, std::move(config)));
  {
    MutexLock lock(&standby->mu_);
    standby->status_.role = "standby";
    standby->status_.last_batch = journal->last_batch();
    standby->status_.last_seq = journal->last_seq();
  }
  ReplicationStandby* self = standby.get();
  auto actor = transport::Actor::Start(
      ctx, "replica", [self, &ctx](transport::ActorPipe& pipe) { self->Body(pipe, ctx); });
  if (!actor.ok()) return actor.status();
  standby->actor_ = std::move(*actor);
  return standby;
}

ReplicationStandby::~ReplicationStandby() { Stop(); }

void ReplicationStandby::Stop() {
  if (actor_) (void)actor_->Stop(std::chrono::seconds(10));
  actor_.reset();
}

ReplicationStatus ReplicationStandby::Snapshot() const {
  MutexLock lock(&mu_);
  return status_;
}

void ReplicationStandby::Body(transport::ActorPipe& pipe, zmq::context_t& ctx) {
  zmq::socket_t dealer(ctx, zmq::socket_type::dealer);
  transport::SocketOptions options;
  options.max_msg_size = int64_t{256} << 20;
  Status configured = transport::ConfigureDealer(dealer, config_.name, options);
  if (configured.ok() && config_.curve) {
    configured = transport::ConfigureCurveClient(dealer, *config_.curve, config_.curve->public_z85);
  }
  if (configured.ok()) configured = transport::Connect(dealer, config_.leader_endpoint);
  if (!configured.ok()) {
    return pipe.SignalReady(Status::Error(
        configured.code(),
        "replication connect " + config_.leader_endpoint + ": " + configured.message()));
  }
  pipe.SignalReady(Status::Ok());
  StandbyOptions core_options;
  core_options.name = config_.name;
  core_options.leader = config_.leader_name;
  core_options.leader_epoch = config_.leader_epoch;
  core_options.credit = config_.credit;
  ReplicationStandbyCore core(core_options, &replica_);
  const Micros idle = config_.idle_hello.count() * 1000;
  // A hello at once: a leader that knew this name from before sends it
  // heartbeats, and would never stream to it without one. Then again when
  // the leader is silent, or when it is ahead and nothing flows (it
  // restarted and forgot us, or frames were lost).
  bool said_hello = false;
  Micros last_heard = clock_->Steady(), last_flow = last_heard;
  Micros upkeep_due = config_.upkeep ? last_heard : 0;  // 0: none
  uint64_t copies = 0, flowed = 0;
  for (;;) {
    std::array<zmq::pollitem_t, 2> items = {pipe.PollItem(),
                                            zmq::pollitem_t{dealer.handle(), 0, ZMQ_POLLIN, 0}};
    if (!transport::Poll(items, PollWait(upkeep_due)).ok()) return;
    if (items[0].revents & ZMQ_POLLIN) {
      auto cmd = pipe.Recv();
      if (!cmd.ok() || pipe.IsTerm(*cmd)) return;
    }
    std::vector<std::string> replies;
    for (;;) {
      auto msg = transport::Recv(dealer, /*dontwait=*/true);
      if (!msg.ok()) break;
      core.OnFrame(msg->to_string_view(), clock_->Now(), &replies);
      last_heard = clock_->Steady();
    }
    const Micros now = clock_->Steady();
    const bool behind = core.leader_seq() > journal_->last_seq();
    if (core.counters().stream_frames != flowed || !behind) {
      flowed = core.counters().stream_frames;
      last_flow = now;
    }
    if (!said_hello || now - last_heard >= idle || now - last_flow >= idle) {
      replies.push_back(core.Hello());
      said_hello = true;
      last_heard = last_flow = now;
    }
    for (const std::string& r : replies) (void)transport::Send(dealer, r, /*dontwait=*/true);
    if (core.counters().copies_installed != copies) {
      copies = core.counters().copies_installed;
      spdlog::info("replication: installed a journal copy from the leader at batch {} seq {}",
                   journal_->last_batch(), journal_->last_seq());
    }
    if (upkeep_due != 0 && clock_->Steady() >= upkeep_due) {
      upkeep_due = config_.upkeep(clock_->Now(), clock_->Steady());
    }
    Publish(core);
  }
}

std::chrono::milliseconds ReplicationStandby::PollWait(Micros upkeep_due) const {
  if (upkeep_due == 0) return kStandbyTick;
  const Micros now = clock_->Steady();
  if (upkeep_due <= now) return std::chrono::milliseconds(0);
  return std::min<std::chrono::milliseconds>(
      kStandbyTick, std::chrono::milliseconds((upkeep_due - now + 999) / 1000));
}

void ReplicationStandby::Publish(const ReplicationStandbyCore& core) {
  const uint64_t seq = journal_->last_seq();
  const uint64_t lag = core.leader_seq() > seq ? core.leader_seq() - seq : 0;
  const Micros now = clock_->Now();
  const double seconds =
      lag > 0 && core.applied_committed_at() > 0 && now > core.applied_committed_at()
          ? (now - core.applied_committed_at()) / 1e6
          : 0;
  lag_seq_ = lag;
  lag_ms_ = static_cast<uint64_t>(seconds * 1000);
  refused_ = core.counters().refused();
  MutexLock lock(&mu_);
  status_.epoch = core.epoch();
  status_.last_batch = journal_->last_batch();
  status_.last_seq = seq;
  status_.lag_seq = lag;
  status_.lag_seconds = seconds;
  status_.refused = core.counters().refused();
  status_.copies = core.counters().copies_installed;
}

}  // namespace apollo11::replication
