#pragma once
// The standby's side of journal replication, socket-free: it applies the
// leader's batches to its own store in order with the leader's numbering,
// takes a journal copy when the leader sends one, and refuses (and counts)
// everything else: a frame from another sender than its leader, from an
// older epoch, that does not decode, with a bad checksum, or a batch that is
// not the next one. A refusal that leaves it behind asks the leader to
// resync from its position; a torn or bad copy is dropped and asked again.
// Nothing refused is ever applied. Nor is anything from a leader whose
// epoch is below the store's own Epoch(): once this coordinator has begun a
// term of its own (it won an election; RunStore::BeginTerm, on another
// thread), the old leader's frames are refused even before the replication
// actor is stopped.
//
// Not thread-safe: one thread (the standby's replication actor) calls
// everything, and is the only writer of the store.

#include <cstdint>
#include <string>
#include <vector>

#include "common/clock.h"
#include "replication/replica_store.h"
#include "replication/replication_frame.h"
#include "storage/run_store.h"

namespace apollo11::replication {

struct StandbyOptions {
  std::string name;      // sender of every frame; the leader's routing id for us
  std::string leader;    // the leader's name; empty accepts any sender
  uint64_t credit = 64;  // batches in flight
  // The only epoch accepted (the one etcd backs); 0: any not older.
  uint64_t leader_epoch = 0;
};

class ReplicationStandbyCore {
 public:
  struct Counters {
    uint64_t applied = 0, copies_installed = 0;
    // Batch and copy frames taken from the leader (applied or not): the
    // stream is flowing. Heartbeats do not count.
    uint64_t stream_frames = 0;
    uint64_t refused_peer = 0, refused_epoch = 0, refused_corrupt = 0;
    uint64_t refused_checksum = 0, refused_order = 0, apply_errors = 0;
    uint64_t refused() const {
      return refused_peer + refused_epoch + refused_corrupt + refused_checksum + refused_order;
    }
  };

  // `replica` must outlive the core.
  ReplicationStandbyCore(StandbyOptions options, ReplicaStore* replica);

  // The kHello to send on (re)connecting.
  std::string Hello();
  // A frame from the leader; appends the frames to send back to `out`.
  void OnFrame(std::string_view bytes, Micros wall_now, std::vector<std::string>* out);

  uint64_t epoch() const { return epoch_; }
  const Counters& counters() const { return counters_; }
  // The leader's position from its last batch or heartbeat, and the commit
  // time of the newest batch applied (for lag).
  uint64_t leader_seq() const { return leader_seq_; }
  Micros applied_committed_at() const { return applied_committed_at_; }

 private:
  std::string Frame(FrameType type, uint64_t credit, std::string reason = "");
  // A kAck of the copy's bytes written so far (no credit, no batch).
  std::string CopyAck();
  // The store's own epoch (UINT64_MAX when it cannot be read).
  uint64_t OwnTerm();
  void OnBatch(const ReplicationFrame& f, std::vector<std::string>* out);
  void OnCopyFrame(const ReplicationFrame& f, std::vector<std::string>* out);

  const StandbyOptions options_;
  ReplicaStore* replica_;
  uint64_t epoch_ = 0;
  Counters counters_;
  uint64_t leader_seq_ = 0;
  Micros applied_committed_at_ = 0;
  // The copy being received.
  bool copying_ = false;
  uint64_t copy_size_ = 0, copy_received_ = 0;
  uint32_t copy_crc_ = 0;
};

}  // namespace apollo11::replication
