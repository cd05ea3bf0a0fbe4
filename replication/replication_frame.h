#pragma once
// The frames a leader and its standbys exchange on the replication socket
// pair (leader ROUTER, standby DEALER), one msgpack array per ZeroMQ frame.
// Decoded once at the edge; bytes from the network that are not a frame
// EncodeFrame wrote are Corrupt, never a crash.

#include <cstdint>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/status.h"

namespace apollo11::replication {

// The ZAP domain of a CURVE replication link: a node admits on it only the
// coordinators' own public key (they share one key pair).
inline constexpr char kReplicationZapDomain[] = "apollo11-replication";

enum class FrameType : uint8_t {
  kHello = 1,      // standby -> leader: my position (batch, seq), credit
  kAck = 2,        // standby -> leader: batch applied durably; credit returned
                   // (during a copy: `offset` = the copy's bytes written)
  kBatch = 3,      // leader -> standby: one committed batch
  kCopyBegin = 4,  // leader -> standby: a journal copy follows (size, position)
  kCopyChunk = 5,  // leader -> standby: bytes of the copy at offset
  kCopyEnd = 6,    // leader -> standby: the copy is complete (whole checksum)
  kResync = 7,     // standby -> leader: refused something; restart from my position
  kHeartbeat = 8,  // leader -> standby: my position, while nothing else flows
};
inline constexpr uint8_t kFrameTypeLast = 8;

struct ReplicationFrame {
  FrameType type = FrameType::kHello;
  uint64_t epoch = 0;  // the leader's epoch (standbys echo the newest seen)
  std::string sender;  // the sender's replication name
  uint64_t batch =
      0;  // kBatch: its number; kHello/kAck/kResync/kHeartbeat/kCopyBegin: last batch held
  uint64_t seq = 0;         // kBatch: its first seq; others as batch: the last seq held
  uint64_t credit = 0;      // kHello: batches the standby takes; kAck: batches returned
  Micros committed_at = 0;  // kBatch, kHeartbeat: the leader's wall clock at commit
  uint64_t offset = 0;    // kCopyChunk: byte offset; kCopyBegin/kCopyEnd: total size; kAck: copied
  uint32_t checksum = 0;  // CRC-32 of payload (kBatch, kCopyChunk) or of the whole copy (kCopyEnd)
  std::string payload;    // kBatch: storage::codec::EncodeBatch; kCopyChunk: bytes; kResync: reason
  // kHello, kAck, kResync: the epoch the standby's last batch was committed
  // in (RunStore::last_batch_epoch); kHeartbeat: the leader's. With `batch`
  // it names a position exactly: equal (batch, batch_epoch) on two journals
  // means the same batches, equal numbers alone do not after a failover.
  uint64_t batch_epoch = 0;
};

// CRC-32 (IEEE) of `data`, continuing from `crc` (0 to start).
uint32_t Crc32(std::string_view data, uint32_t crc = 0);

// Never fails.
std::string EncodeFrame(const ReplicationFrame& frame);
// Corrupt for anything EncodeFrame did not write; does not check the
// checksum (the receiver counts a mismatch apart).
Result<ReplicationFrame> DecodeFrame(std::string_view bytes);

}  // namespace apollo11::replication
