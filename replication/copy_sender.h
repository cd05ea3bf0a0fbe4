#pragma once
// Journal copies for standbys, streamed by the leader's replication actor
// one at a time and paced by the standby: it acknowledges each chunk it has
// written (a kAck whose `offset` is the bytes received), and at most
// kCopyWindowChunks chunks are ever sent and not yet acknowledged. So a
// standby that does not read costs the leader at most that window of
// queued bytes (plus the copy file on disk), however many ask, and one that
// makes no progress for `stall` loses its turn (it asks again with its
// next kHello). A peer that asks while queued keeps its place; one that asks
// while its copy is under way starts again (its kHello dropped the copy).
//
// Not thread-safe: the replication actor's thread calls everything.

#include <cstdint>
#include <cstdio>
#include <deque>
#include <optional>
#include <string>
#include <zmq.hpp>

#include "common/clock.h"
#include "replication/replication_leader_core.h"
#include "storage/journal.h"

namespace apollo11::replication {

inline constexpr uint64_t kCopyWindowChunks = 8;

// The copy CopySender is sending (at namespace scope: clang will not
// default-construct, through std::optional, a nested struct with member
// initializers inside its enclosing class).
struct CopyUnderWay {
  std::string peer;
  std::FILE* file = nullptr;
  uint64_t size = 0, sent = 0, acked = 0;
  uint32_t crc = 0;
  bool end_sent = false;
  storage::Journal::CopyPosition position;
  Micros last_progress = 0;
  std::string pending;  // the next frame to send: kCopyBegin, or a chunk the queue refused
};

class CopySender {
 public:
  // `journal` must outlive the sender; each copy is made in
  // journal->dir() + ".send-copy" and removed when it ends.
  CopySender(storage::Journal* journal, size_t chunk_bytes, Micros stall);
  ~CopySender();
  CopySender(const CopySender&) = delete;
  CopySender& operator=(const CopySender&) = delete;

  // `peer` needs a copy.
  void Request(const std::string& peer);
  // `peer` has written `offset` bytes of its copy.
  void OnAck(const std::string& peer, uint64_t offset, Micros steady_now);
  // Starts the next copy when none is under way and sends what the window
  // allows. Returns the number of copies completed by this call (0 or 1).
  int Pump(zmq::socket_t& router, const ReplicationLeaderCore& core, Micros steady_now);
  // True when Pump could send more right away (the actor polls without
  // waiting then).
  bool Ready() const;
  // The peer whose copy is under way, empty when none.
  std::string current() const { return copy_ ? copy_->peer : std::string(); }
  size_t queued() const { return queue_.size(); }

 private:
  // Makes the journal copy and queues kCopyBegin as the first frame to send;
  // false when the copy could not be made.
  bool Start(const ReplicationLeaderCore& core, const std::string& peer, Micros now);
  // Sends chunks while the window has room; false when the peer is gone.
  bool SendChunks(zmq::socket_t& router, const ReplicationLeaderCore& core);
  void Finish(const char* why);

  storage::Journal* journal_;
  const size_t chunk_bytes_;
  const Micros stall_;
  std::deque<std::string> queue_;
  std::optional<CopyUnderWay> copy_;
  bool blocked_ = false;  // the last send found the peer's queue full
  std::string chunk_;     // the read buffer, chunk_bytes_ once a copy is sent
};

}  // namespace apollo11::replication
