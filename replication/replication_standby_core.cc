#include "replication/replication_standby_core.h"

#include <algorithm>
#include <utility>

#include "storage/batch_codec.h"

namespace apollo11::replication {

ReplicationStandbyCore::ReplicationStandbyCore(StandbyOptions options, ReplicaStore* replica)
    : options_(std::move(options)), replica_(replica) {}

std::string ReplicationStandbyCore::Frame(FrameType type, uint64_t credit, std::string reason) {
  ReplicationFrame f;
  f.type = type;
  f.epoch = epoch_;
  f.sender = options_.name;
  if (storage::RunLog* store = replica_->store()) {
    f.batch = store->last_batch();
    f.seq = store->last_seq();
    f.batch_epoch = store->last_batch_epoch();
  }
  f.credit = credit;
  f.payload = std::move(reason);
  return EncodeFrame(f);
}

uint64_t ReplicationStandbyCore::OwnTerm() {
  storage::RunLog* store = replica_->store();
  if (store == nullptr) return 0;
  Result<uint64_t> epoch = store->Epoch();
  // A journal that cannot say its epoch applies nothing.
  return epoch.ok() ? *epoch : UINT64_MAX;
}

std::string ReplicationStandbyCore::CopyAck() {
  ReplicationFrame f;
  f.type = FrameType::kAck;
  f.epoch = epoch_;
  f.sender = options_.name;
  f.offset = copy_received_;
  return EncodeFrame(f);
}

std::string ReplicationStandbyCore::Hello() {
  copying_ = false;
  return Frame(FrameType::kHello, options_.credit);
}

void ReplicationStandbyCore::OnFrame(std::string_view bytes, Micros wall_now,
                                     std::vector<std::string>* out) {
  (void)wall_now;
  Result<ReplicationFrame> decoded = DecodeFrame(bytes);
  if (!decoded.ok()) {
    ++counters_.refused_corrupt;
    return;
  }
  const ReplicationFrame& f = *decoded;
  if (!options_.leader.empty() && f.sender != options_.leader) {
    ++counters_.refused_peer;
    return;
  }
  if (f.epoch < epoch_ || f.epoch < OwnTerm() ||
      (options_.leader_epoch != 0 && f.epoch != options_.leader_epoch)) {
    ++counters_.refused_epoch;
    return;
  }
  if (f.type == FrameType::kBatch && Crc32(f.payload) != f.checksum) {
    ++counters_.refused_checksum;  // before it may change anything, the epoch included
    out->push_back(Frame(FrameType::kResync, options_.credit, "bad checksum"));
    return;
  }
  if (f.epoch > epoch_) {  // a new leader (or our first frame): start from our position
    const bool first = epoch_ == 0;
    epoch_ = f.epoch;
    if (!first && f.type == FrameType::kBatch) {
      out->push_back(Frame(FrameType::kResync, options_.credit, "new epoch"));
      return;
    }
  }
  if (f.type != FrameType::kHeartbeat) ++counters_.stream_frames;
  switch (f.type) {
    case FrameType::kBatch:
      OnBatch(f, out);
      break;
    case FrameType::kHeartbeat:
      leader_seq_ = std::max(leader_seq_, f.seq);
      break;
    case FrameType::kCopyBegin:
    case FrameType::kCopyChunk:
    case FrameType::kCopyEnd:
      OnCopyFrame(f, out);
      break;
    default:
      ++counters_.refused_corrupt;  // a standby's frame sent to a standby
      break;
  }
}

void ReplicationStandbyCore::OnBatch(const ReplicationFrame& f, std::vector<std::string>* out) {
  if (copying_) {
    ++counters_.refused_order;
    return;
  }
  storage::RunLog* store = replica_->store();
  if (store == nullptr) {
    ++counters_.apply_errors;
    return;
  }
  const uint64_t next = store->last_batch() + 1;
  if (f.batch != next || f.seq != store->last_seq() + 1) {
    ++counters_.refused_order;
    // A replay of what we hold needs nothing; a gap or a mismatch a resync.
    if (f.batch >= next) {
      out->push_back(Frame(FrameType::kResync, options_.credit, "out of order"));
    }
    return;
  }
  Result<storage::RunBatch> batch = storage::codec::DecodeBatch(f.payload);
  if (!batch.ok()) {
    ++counters_.refused_corrupt;
    out->push_back(Frame(FrameType::kResync, options_.credit, "undecodable batch"));
    return;
  }
  Status applied = store->ApplyReplicated(f.batch, f.seq, f.epoch, *batch);
  if (!applied.ok()) {
    ++counters_.apply_errors;
    out->push_back(Frame(FrameType::kResync, options_.credit, applied.message()));
    return;
  }
  ++counters_.applied;
  leader_seq_ = std::max(leader_seq_, store->last_seq());
  applied_committed_at_ = f.committed_at;
  out->push_back(Frame(FrameType::kAck, 1));
}

void ReplicationStandbyCore::OnCopyFrame(const ReplicationFrame& f, std::vector<std::string>* out) {
  auto ask_again = [&](const char* why) {
    copying_ = false;
    out->push_back(Frame(FrameType::kResync, options_.credit, why));
  };
  switch (f.type) {
    case FrameType::kCopyBegin:
      if (!replica_->BeginCopy(f.offset).ok()) return ask_again("cannot start the copy");
      copying_ = true;
      copy_size_ = f.offset;
      copy_received_ = 0;
      copy_crc_ = 0;
      return;
    case FrameType::kCopyChunk:
      if (!copying_ || f.offset != copy_received_ || Crc32(f.payload) != f.checksum) {
        ++(copying_ && f.offset == copy_received_ ? counters_.refused_checksum
                                                  : counters_.refused_order);
        if (copying_) ask_again("bad copy chunk");
        return;
      }
      if (!replica_->AppendCopy(f.payload).ok()) return ask_again("cannot write the copy");
      copy_received_ += f.payload.size();
      copy_crc_ = Crc32(f.payload, copy_crc_);
      out->push_back(CopyAck());  // the leader sends more as these come back
      return;
    default:
      break;
  }
  if (!copying_) {
    ++counters_.refused_order;
    return;
  }
  if (copy_received_ != copy_size_ || f.offset != copy_size_ || copy_crc_ != f.checksum) {
    ++counters_.refused_checksum;
    return ask_again("copy checksum mismatch");
  }
  if (!replica_->InstallCopy().ok() || replica_->store() == nullptr) {
    ++counters_.apply_errors;
    return ask_again("cannot install the copy");
  }
  ++counters_.copies_installed;
  copying_ = false;
  leader_seq_ = std::max(leader_seq_, replica_->store()->last_seq());
  out->push_back(Hello());
}

}  // namespace apollo11::replication
