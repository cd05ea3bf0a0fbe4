#include "replication/replication_leader_core.h"

#include <algorithm>

namespace apollo11::replication {

ReplicationLeaderCore::ReplicationLeaderCore(LeaderOptions options, uint64_t epoch, Position start)
    : options_(std::move(options)),
      epoch_(epoch),
      start_(start),
      last_batch_(start.batch),
      last_seq_(start.seq) {}

ReplicationFrame ReplicationLeaderCore::Header(FrameType type) const {
  ReplicationFrame f;
  f.type = type;
  f.epoch = epoch_;
  f.sender = options_.name;
  return f;
}

void ReplicationLeaderCore::OnCommitted(uint64_t batch_no, uint64_t first_seq, uint64_t transitions,
                                        const std::string& encoded, Micros committed_at,
                                        Output* out) {
  ReplicationFrame f = Header(FrameType::kBatch);
  f.batch = batch_no;
  f.seq = first_seq;
  f.committed_at = committed_at;
  f.checksum = Crc32(encoded);
  f.payload = encoded;
  Kept kept;
  kept.batch = batch_no;
  kept.first_seq = first_seq;
  kept.end_seq = first_seq + transitions - 1;
  kept.committed_at = committed_at;
  kept.frame = EncodeFrame(f);
  window_.push_back(std::move(kept));
  while (window_.size() > options_.window_batches) window_.pop_front();
  last_batch_ = batch_no;
  last_seq_ = first_seq + transitions - 1;
  for (auto& [name, s] : standbys_) Pump(s, out);
}

void ReplicationLeaderCore::OnFrame(const std::string& peer, std::string_view bytes,
                                    Micros steady_now, Output* out) {
  if (!options_.standbys.empty() && options_.standbys.count(peer) == 0) {
    ++refused_.unknown_peer;
    return;
  }
  Result<ReplicationFrame> decoded = DecodeFrame(bytes);
  if (!decoded.ok()) {
    ++refused_.corrupt;
    return;
  }
  const ReplicationFrame& f = *decoded;
  if (f.sender != peer) {
    ++refused_.unknown_peer;
    return;
  }
  if (f.epoch > epoch_) {  // it follows a newer leader: not ours to feed
    ++refused_.stale_epoch;
    return;
  }
  StandbyView* view = ViewOf(peer, steady_now);
  if (view == nullptr) {
    ++refused_.unknown_peer;
    return;
  }
  StandbyView& s = *view;
  s.last_heard = steady_now;
  switch (f.type) {
    case FrameType::kHello:
    case FrameType::kResync:
      OnHello(s, f, out);
      break;
    case FrameType::kAck:
      if (s.copying) {  // a chunk of its copy written
        out->copy_acks.emplace_back(peer, f.offset);
        break;
      }
      if (f.batch > s.acked_batch && f.batch <= s.sent_batch) {
        s.acked_batch = f.batch;
        s.acked_seq = f.seq;
      }
      s.credit = std::min(kMaxStandbyCredit, s.credit + std::min(f.credit, kMaxStandbyCredit));
      Pump(s, out);
      break;
    default:
      ++refused_.corrupt;  // a leader's frame sent to the leader
      break;
  }
}

StandbyView* ReplicationLeaderCore::ViewOf(const std::string& peer, Micros steady_now) {
  auto it = standbys_.find(peer);
  if (it != standbys_.end()) return &it->second;
  if (standbys_.size() >= kMaxStandbys) {
    auto idlest = std::min_element(standbys_.begin(), standbys_.end(), [](auto& a, auto& b) {
      return a.second.last_heard < b.second.last_heard;
    });
    if (steady_now - idlest->second.last_heard < kStandbyIdle) return nullptr;
    standbys_.erase(idlest);
  }
  StandbyView& s = standbys_[peer];
  s.name = peer;
  return &s;
}

void ReplicationLeaderCore::OnHello(StandbyView& s, const ReplicationFrame& f, Output* out) {
  s.credit = std::min(f.credit, kMaxStandbyCredit);
  s.acked_batch = f.batch;
  s.acked_seq = f.seq;
  s.copying = false;
  Position expected;
  const bool known = f.batch <= last_batch_ && PositionAfter(f.batch, &expected);
  if (!known || expected.seq != f.seq || expected.batch_epoch != f.batch_epoch) {
    s.sent_batch = f.batch;
    s.copying = true;
    out->copies.push_back(s.name);
    return;
  }
  s.sent_batch = f.batch;
  Pump(s, out);
}

std::string ReplicationLeaderCore::HeartbeatFrame() const {
  ReplicationFrame f = Header(FrameType::kHeartbeat);
  f.batch = last_batch_;
  f.seq = last_seq_;
  f.batch_epoch = LastBatchEpoch();
  f.committed_at = window_.empty() ? 0 : window_.back().committed_at;
  return EncodeFrame(f);
}

std::string ReplicationLeaderCore::CopyBeginFrame(uint64_t size) const {
  ReplicationFrame f = Header(FrameType::kCopyBegin);
  f.offset = size;
  return EncodeFrame(f);
}

std::string ReplicationLeaderCore::CopyChunkFrame(uint64_t offset, std::string_view bytes) const {
  ReplicationFrame f = Header(FrameType::kCopyChunk);
  f.offset = offset;
  f.checksum = Crc32(bytes);
  f.payload.assign(bytes);
  return EncodeFrame(f);
}

std::string ReplicationLeaderCore::CopyEndFrame(uint64_t size, uint32_t crc) const {
  ReplicationFrame f = Header(FrameType::kCopyEnd);
  f.offset = size;
  f.checksum = crc;
  return EncodeFrame(f);
}

uint64_t ReplicationLeaderCore::LastBatchEpoch() const {
  return last_batch_ > start_.batch ? epoch_ : start_.batch_epoch;
}

bool ReplicationLeaderCore::PositionAfter(uint64_t batch_no, Position* at) const {
  at->batch = batch_no;
  // Batches after the start were committed in this term; the start batch
  // in whichever term its journal says.
  at->batch_epoch = batch_no > start_.batch ? epoch_ : start_.batch_epoch;
  if (batch_no == last_batch_) {
    at->seq = last_seq_;
    return true;
  }
  if (batch_no < start_.batch) return false;  // before this term: unknown
  if (window_.empty() || batch_no + 1 < window_.front().batch) return false;
  if (batch_no + 1 == window_.front().batch) {
    at->seq = window_.front().first_seq - 1;
    return true;
  }
  at->seq = window_[batch_no - window_.front().batch].end_seq;
  return true;
}

void ReplicationLeaderCore::Pump(StandbyView& s, Output* out) {
  if (s.copying || window_.empty()) return;
  while (s.credit > 0 && s.sent_batch < last_batch_) {
    const uint64_t next = s.sent_batch + 1;
    if (next < window_.front().batch) {  // fell out of the window meanwhile
      s.copying = true;
      out->copies.push_back(s.name);
      return;
    }
    out->frames.emplace_back(s.name, window_[next - window_.front().batch].frame);
    s.sent_batch = next;
    --s.credit;
  }
}

uint64_t ReplicationLeaderCore::best_acked_batch() const {
  uint64_t best = 0;
  for (const auto& [name, s] : standbys_) best = std::max(best, s.acked_batch);
  return best;
}

Micros ReplicationLeaderCore::CommittedAt(uint64_t batch_no) const {
  if (window_.empty() || batch_no < window_.front().batch || batch_no > window_.back().batch) {
    return 0;
  }
  return window_[batch_no - window_.front().batch].committed_at;
}

}  // namespace apollo11::replication
