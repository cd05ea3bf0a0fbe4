#pragma once
// The leader's side of journal replication, socket-free: it keeps a bounded
// window of recently committed batches (encoded frames), each standby's
// position and credit, and decides what to send to whom. The replication
// actor feeds it committed batches and frames from the socket and sends what
// it returns; tests drive it with fakes.
//
// Protocol: a standby says kHello with its position (last batch, its epoch
// and the last seq held) and its credit. When the next batch is still in the
// window and the position matches the leader's at that batch (same seq, same
// batch epoch: a standby that led an older term and committed batches no one
// received has the numbers but not the epoch), the leader streams from
// there, one batch per credit;
// each kAck returns credit and advances the standby's durable position.
// Otherwise (new, too far behind, or a position the leader never had) the
// standby is sent a journal copy first (the actor makes it; see
// Output::copies) and says kHello again once it is installed.
//
// Not thread-safe: one thread (the replication actor) calls everything.

#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "replication/replication_frame.h"

namespace apollo11::replication {

// The most batches a standby may have in flight, whatever credit it asks
// for, and the most standbys tracked at once (past it, the one heard from
// least recently, if silent for kStandbyIdle, makes room; otherwise the
// newcomer is refused): what a peer says cannot grow the leader's queues or
// tables without bound.
inline constexpr uint64_t kMaxStandbyCredit = 1024;
inline constexpr size_t kMaxStandbys = 64;
inline constexpr Micros kStandbyIdle = 10 * kMicrosPerSecond;

struct LeaderOptions {
  std::string name;  // sender of every frame
  // Standby names admitted; empty admits any (frames from others are
  // refused and counted).
  std::set<std::string> standbys;
  size_t window_batches = 4096;  // batches kept for catch-up
};

// A standby as the leader sees it.
struct StandbyView {
  std::string name;
  uint64_t acked_batch = 0, acked_seq = 0;  // durable on the standby
  uint64_t sent_batch = 0;                  // last batch sent
  uint64_t credit = 0;
  bool copying = false;   // a copy was requested and not yet answered by kHello
  Micros last_heard = 0;  // steady clock of its last frame
};

class ReplicationLeaderCore {
 public:
  // Frames to send: (peer routing id, encoded frame), in order; peers that
  // need a copy now; copies acknowledged: (peer, bytes it has written).
  struct Output {
    std::vector<std::pair<std::string, std::string>> frames;
    std::vector<std::string> copies;
    std::vector<std::pair<std::string, uint64_t>> copy_acks;
  };
  // Counters of refused frames.
  struct Refused {
    uint64_t unknown_peer = 0, corrupt = 0, stale_epoch = 0;
  };

  // The leader's journal position when it starts leading.
  struct Position {
    uint64_t batch = 0, seq = 0, batch_epoch = 0;
  };
  // `epoch`: this term's; every batch OnCommitted is committed in it.
  ReplicationLeaderCore(LeaderOptions options, uint64_t epoch, Position start);

  // A batch the leader committed: number, first seq, transitions in it, its
  // EncodeBatch bytes and commit time. Kept in the window and sent to every
  // standby that is up to date and has credit.
  void OnCommitted(uint64_t batch_no, uint64_t first_seq, uint64_t transitions,
                   const std::string& encoded, Micros committed_at, Output* out);
  // A frame from `peer` (its routing id, which must equal the frame's sender).
  void OnFrame(const std::string& peer, std::string_view bytes, Micros steady_now, Output* out);

  // The frames of a journal copy of `size` bytes, sent in this order:
  // kCopyBegin, kCopyChunk for consecutive byte ranges, kCopyEnd with the
  // CRC-32 of all the bytes.
  std::string CopyBeginFrame(uint64_t size) const;
  std::string CopyChunkFrame(uint64_t offset, std::string_view bytes) const;
  std::string CopyEndFrame(uint64_t size, uint32_t crc) const;

  // A kHeartbeat with the leader's position (standbys measure their lag
  // and notice a silent leader with it).
  std::string HeartbeatFrame() const;

  // The highest batch some standby holds durably (0 when none).
  uint64_t best_acked_batch() const;
  uint64_t last_batch() const { return last_batch_; }
  uint64_t last_seq() const { return last_seq_; }
  // Commit time of batch `batch_no` if still in the window, else 0.
  Micros CommittedAt(uint64_t batch_no) const;
  // Commit time of the oldest batch in the window, 0 when empty.
  Micros OldestCommittedAt() const { return window_.empty() ? 0 : window_.front().committed_at; }
  const std::map<std::string, StandbyView>& standbys() const { return standbys_; }
  const Refused& refused() const { return refused_; }
  uint64_t epoch() const { return epoch_; }
  const std::string& name() const { return options_.name; }

 private:
  struct Kept {
    uint64_t batch = 0, first_seq = 0, end_seq = 0;
    Micros committed_at = 0;
    std::string frame;
  };
  // A frame of `type` from this leader in its epoch.
  ReplicationFrame Header(FrameType type) const;
  void OnHello(StandbyView& s, const ReplicationFrame& f, Output* out);
  // The view of `peer`, made if there is room (kMaxStandbys); null if not.
  StandbyView* ViewOf(const std::string& peer, Micros steady_now);
  // Sends window batches after s.sent_batch while s has credit.
  void Pump(StandbyView& s, Output* out);
  // The leader's position after batch `batch_no` (its last seq and its
  // epoch); false when not known (before the start, or out of the window).
  bool PositionAfter(uint64_t batch_no, Position* at) const;
  uint64_t LastBatchEpoch() const;

  const LeaderOptions options_;
  const uint64_t epoch_;
  const Position start_;
  uint64_t last_batch_, last_seq_;
  std::deque<Kept> window_;
  std::map<std::string, StandbyView> standbys_;
  Refused refused_;
};

}  // namespace apollo11::replication
