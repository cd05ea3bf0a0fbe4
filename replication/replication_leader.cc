#include "replication/replication_leader.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <utility>

#include "replication/copy_sender.h"
#include "storage/batch_codec.h"
#include "transport/sockets.h"

namespace apollo11::replication {
namespace {

constexpr auto kLeaderTick = std::chrono::milliseconds(200);
constexpr size_t kHeader = 32;  // batch_no, first_seq, transitions, committed_at

void PutU64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint64_t GetU64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

transport::SocketOptions LinkOptions() {
  transport::SocketOptions o;
  o.max_msg_size = int64_t{256} << 20;  // a large turn's batch, a copy chunk
  // Per peer: batches are bounded by credit (kMaxStandbyCredit) and copy
  // chunks by the copy window; this bounds heartbeats to a peer that does
  // not read.
  o.hwm = 4096;
  return o;
}

}  // namespace

ReplicationLeader::ReplicationLeader(storage::Journal* journal, const Clock* clock,
                                     ReplicationLeaderConfig config)
    : journal_(journal),
      clock_(clock),
      config_(std::move(config)),
      in_sync_(config_.name,
               std::chrono::duration_cast<std::chrono::microseconds>(config_.timeout).count(),
               journal->last_batch()) {}

Result<std::unique_ptr<ReplicationLeader>> ReplicationLeader::Start(
    zmq::context_t& ctx, storage::Journal* journal, const Clock* clock,
    ReplicationLeaderConfig config) {
  std::unique_ptr<ReplicationLeader> leader(
      new ReplicationLeader(journal, clock, std::move(config)));
  leader->feed_name_ =
      "replication-feed-" + std::to_string(reinterpret_cast<uintptr_t>(leader.get()));
  auto pair = transport::MakeInprocPair(ctx, leader->feed_name_);
  if (!pair.ok()) return pair.status();
  leader->feed_in_ = std::move(pair->first);
  leader->feed_out_ = std::move(pair->second);
  {
    MutexLock lock(&leader->mu_);
    leader->status_.role = "leader";
    leader->status_.mode = leader->config_.sync ? "sync" : "async";
    leader->status_.epoch = leader->config_.epoch;
    leader->status_.last_batch = journal->last_batch();
    leader->status_.last_seq = journal->last_seq();
    // No standby is in sync when a term starts (the elector recorded this
    // leader alone): sync release resumes as soon as one catches up.
    leader->lagging_ = leader->config_.sync;
    leader->status_.lagging = leader->config_.sync;
  }
  ReplicationLeader* self = leader.get();
  auto actor = transport::Actor::Start(
      ctx, "replication", [self, &ctx](transport::ActorPipe& pipe) { self->Body(pipe, ctx); });
  if (!actor.ok()) return actor.status();
  leader->actor_ = std::move(*actor);
  return leader;
}

void ReplicationLeader::StopWaiting() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  acked_cv_.SignalAll();
}

ReplicationLeader::~ReplicationLeader() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  acked_cv_.SignalAll();
  if (actor_) (void)actor_->Stop(std::chrono::seconds(10));
}

void ReplicationLeader::OnCommitted(uint64_t batch_no, uint64_t first_seq,
                                    const storage::RunBatch& batch) {
  std::string frame;
  frame.reserve(kHeader + 256);
  PutU64(frame, batch_no);
  PutU64(frame, first_seq);
  PutU64(frame, batch.transitions());
  PutU64(frame, static_cast<uint64_t>(clock_->Now()));
  frame += storage::codec::EncodeBatch(batch);
  {
    MutexLock lock(&mu_);
    in_sync_.OnHandedOver(batch_no);
  }
  Status sent = transport::Send(feed_out_, frame, /*dontwait=*/true);
  if (!sent.ok())
    spdlog::warn("replication: batch {} not handed over: {}", batch_no, sent.message());
  if (config_.sync) AwaitInSync(batch_no);
}

void ReplicationLeader::AwaitInSync(uint64_t batch_no) {
  MutexLock lock(&mu_);
  const CondVar::Deadline deadline = std::chrono::steady_clock::now() + config_.timeout;
  while (!stopping_ && !in_sync_.Acknowledged(batch_no)) {
    if (!acked_cv_.WaitUntil(mu_, deadline)) break;
  }
  if (stopping_ || in_sync_.Acknowledged(batch_no)) return;
  std::string late;
  for (const std::string& name : in_sync_.DropLate(batch_no)) {
    late += (late.empty() ? "" : ", ") + name;
  }
  const uint64_t needed = in_sync_.version();
  status_.in_sync.assign(in_sync_.in_sync().begin(), in_sync_.in_sync().end());
  if (in_sync_.lagging()) {
    lagging_ = true;
    status_.lagging = true;
  }
  lock.Unlock();
  const std::string reason =
      "standby " + late + " did not acknowledge batch " + std::to_string(batch_no) + " within " +
      std::to_string(config_.timeout.count()) +
      " ms; it leaves the in-sync set and may not lead until it catches up" +
      (lagging_.load() ? "; no standby is in sync: releasing at the local commit" : "");
  spdlog::warn("replication: {}", reason);
  if (config_.alerts != nullptr) {
    alerts::AlertEvent e;
    e.type = alerts::AlertType::kStandbyLagging;
    e.reason = reason;
    e.ts = clock_->Now();
    config_.alerts->Emit(std::move(e));
  }
  // The batch is released only once the record no longer names them: a
  // standby that lacks it must not be able to take over. The replication
  // actor records it (and retries every tick until etcd takes it).
  NudgeRecord();
  lock.Lock();
  while (!stopping_ && in_sync_.RecordedVersion() < needed) acked_cv_.Wait(mu_);
}

void ReplicationLeader::NudgeRecord() {
  // A frame shorter than a batch's header: the actor takes it as "record
  // now" (the writer thread owns this end of the feed).
  Status sent = transport::Send(feed_out_, std::string(), /*dontwait=*/true);
  if (!sent.ok()) spdlog::warn("replication: cannot wake the recorder: {}", sent.message());
}

bool ReplicationLeader::RecordInSync() {
  MutexLock record(&record_mu_);
  std::set<std::string> members;
  uint64_t version = 0;
  {
    MutexLock lock(&mu_);
    if (in_sync_.version() == in_sync_.RecordedVersion()) return true;
    members = in_sync_.RecordedMembers();
    version = in_sync_.version();
  }
  if (config_.record_in_sync) {
    Status s = config_.record_in_sync(members);
    if (!s.ok()) {
      spdlog::warn("replication: cannot record the in-sync set: {}", s.message());
      return false;
    }
  }
  {
    MutexLock lock(&mu_);
    in_sync_.Recorded(version);
  }
  acked_cv_.SignalAll();
  return true;
}

ReplicationStatus ReplicationLeader::Snapshot() const {
  MutexLock lock(&mu_);
  return status_;
}

void ReplicationLeader::Body(transport::ActorPipe& pipe, zmq::context_t& ctx) {
  zmq::socket_t router(ctx, zmq::socket_type::router);
  Status configured = transport::ConfigureRouter(router, LinkOptions());
  if (configured.ok() && config_.curve) {
    configured = transport::ConfigureCurveServer(router, *config_.curve, kReplicationZapDomain);
  }
  if (!configured.ok()) return pipe.SignalReady(configured);
  auto bound = transport::Bind(router, config_.bind);
  if (!bound.ok()) {
    return pipe.SignalReady(
        Status::Error(bound.status().code(),
                      "replication bind " + config_.bind + ": " + bound.status().message()));
  }
  endpoint_ = *bound;
  // Before the node's coordinator can commit: every later batch reaches the
  // core through the feed.
  const ReplicationLeaderCore::Position start{journal_->last_batch(), journal_->last_seq(),
                                              journal_->last_batch_epoch()};
  pipe.SignalReady(Status::Ok());
  Serve(pipe, router, start);
}

void ReplicationLeader::Serve(transport::ActorPipe& pipe, zmq::socket_t& router,
                              const ReplicationLeaderCore::Position& start) {
  LeaderOptions options;
  options.name = config_.name;
  options.standbys = config_.standbys;
  options.window_batches = config_.window_batches;
  ReplicationLeaderCore core(options, config_.epoch, start);
  CopySender copier(
      journal_, config_.copy_chunk,
      std::chrono::duration_cast<std::chrono::microseconds>(config_.copy_stall).count());
  Micros next_heartbeat = 0;
  for (;;) {
    std::array<zmq::pollitem_t, 3> items = {pipe.PollItem(),
                                            zmq::pollitem_t{router.handle(), 0, ZMQ_POLLIN, 0},
                                            zmq::pollitem_t{feed_in_.handle(), 0, ZMQ_POLLIN, 0}};
    const auto wait = copier.Ready() ? std::chrono::milliseconds(0) : kLeaderTick;
    if (!transport::Poll(items, wait).ok()) return;
    if (items[0].revents & ZMQ_POLLIN) {
      auto cmd = pipe.Recv();
      if (!cmd.ok() || pipe.IsTerm(*cmd)) return;
    }
    ReplicationLeaderCore::Output out;
    for (;;) {  // committed batches, in order
      auto msg = transport::Recv(feed_in_, /*dontwait=*/true);
      if (!msg.ok()) break;
      if (msg->size() < kHeader) continue;
      const char* p = static_cast<const char*>(msg->data());
      core.OnCommitted(GetU64(p), GetU64(p + 8), GetU64(p + 16),
                       std::string(p + kHeader, msg->size() - kHeader),
                       static_cast<Micros>(GetU64(p + 24)), &out);
    }
    for (;;) {
      auto msg = transport::RecvFrom(router, /*dontwait=*/true);
      if (!msg.ok()) break;
      core.OnFrame(msg->identity, msg->payload.to_string_view(), clock_->Steady(), &out);
    }
    const Micros now = clock_->Steady();
    if (now >= next_heartbeat) {
      next_heartbeat =
          now + std::chrono::duration_cast<std::chrono::microseconds>(kLeaderTick).count();
      for (const auto& [name, s] : core.standbys()) {
        out.frames.emplace_back(name, core.HeartbeatFrame());
      }
    }
    Deliver(router, core, out, copier);
    Publish(core);
  }
}

void ReplicationLeader::Deliver(zmq::socket_t& router, const ReplicationLeaderCore& core,
                                const ReplicationLeaderCore::Output& out, CopySender& copier) {
  // A frame that cannot go (peer gone, queue full) is dropped: the standby
  // finds the gap and asks to resync.
  for (const auto& [peer, frame] : out.frames) (void)transport::SendTo(router, peer, frame);
  const Micros now = clock_->Steady();
  for (const auto& [peer, offset] : out.copy_acks) copier.OnAck(peer, offset, now);
  for (const std::string& peer : out.copies) copier.Request(peer);
  if (copier.Pump(router, core, now) > 0) {
    MutexLock lock(&mu_);
    ++status_.copies;
  }
}

void ReplicationLeader::Publish(const ReplicationLeaderCore& core) {
  const Micros now = clock_->Now();
  uint64_t worst_seq = 0;
  double worst_seconds = 0;
  std::vector<StandbyStatus> standbys;
  for (const auto& [name, s] : core.standbys()) {
    StandbyStatus st;
    st.name = name;
    st.acked_batch = s.acked_batch;
    st.acked_seq = s.acked_seq;
    st.copying = s.copying;
    st.lag_seq = core.last_seq() > s.acked_seq ? core.last_seq() - s.acked_seq : 0;
    if (s.acked_batch < core.last_batch()) {
      Micros oldest = core.CommittedAt(s.acked_batch + 1);
      if (oldest == 0) oldest = core.OldestCommittedAt();
      st.lag_seconds = oldest > 0 && now > oldest ? (now - oldest) / 1e6 : 0;
    }
    worst_seq = std::max(worst_seq, st.lag_seq);
    worst_seconds = std::max(worst_seconds, st.lag_seconds);
    standbys.push_back(std::move(st));
  }
  worst_lag_seq_ = worst_seq;
  worst_lag_ms_ = static_cast<uint64_t>(worst_seconds * 1000);
  refused_ = core.refused().unknown_peer + core.refused().corrupt + core.refused().stale_epoch;
  bool caught_up = false;
  {
    MutexLock lock(&mu_);
    status_.last_batch = core.last_batch();
    status_.last_seq = core.last_seq();
    status_.standbys = std::move(standbys);
    status_.refused = refused_.load();
    if (config_.sync) {
      for (const std::string& name : in_sync_.Observe(core.standbys(), clock_->Steady())) {
        spdlog::info("replication: standby {} caught up: in sync", name);
      }
      status_.in_sync.assign(in_sync_.in_sync().begin(), in_sync_.in_sync().end());
      if (lagging_.load() && !in_sync_.lagging()) {
        lagging_ = false;
        status_.lagging = false;
        caught_up = true;
      }
    }
  }
  acked_cv_.SignalAll();
  // Late is safe (every batch already waits for the new members); a failure
  // is retried at the next tick.
  (void)RecordInSync();
  if (caught_up) spdlog::info("replication: a standby is in sync; sync release resumes");
}

}  // namespace apollo11::replication
