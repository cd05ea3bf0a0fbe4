#pragma once
// What a node reports about replication (metrics, logs, `apollo11 cluster`):
// plain values, copied out of the replication actor under its lock.

#include <cstdint>
#include <string>
#include <vector>

namespace apollo11::replication {

// One standby as its leader sees it.
struct StandbyStatus {
  std::string name;
  uint64_t acked_batch = 0, acked_seq = 0;  // durable on the standby
  uint64_t lag_seq = 0;                     // leader's last seq - acked_seq
  double lag_seconds = 0;  // age of the oldest batch it has not acknowledged; 0 when caught up
  bool copying = false;    // taking a journal copy
};

struct ReplicationStatus {
  std::string role;  // "leader", "standby" or "" (no replication)
  std::string mode;  // "sync" or "async" (leader)
  uint64_t epoch = 0;
  uint64_t last_batch = 0, last_seq = 0;  // this node's journal
  // Leader, sync mode: no standby is in sync (at the start of a term, or
  // after the last one missed --replication-timeout).
  bool lagging = false;
  std::vector<StandbyStatus> standbys;  // leader
  // Leader, sync mode: the standbys that hold every batch released so far
  // (each batch waits for all of them; only they may take over in HA).
  std::vector<std::string> in_sync;
  // Standby: its own lag behind the leader as it last heard of it.
  uint64_t lag_seq = 0;
  double lag_seconds = 0;
  uint64_t refused = 0;  // replication frames refused (all reasons)
  uint64_t copies = 0;   // journal copies sent (leader) or installed (standby)
};

}  // namespace apollo11::replication
