#pragma once
// The standby's replication actor: one thread that owns a DEALER connected
// to the leader's --replication-bind endpoint, a ReplicationStandbyCore and
// (through a JournalReplicaStore) the only writes to this node's journal. It
// says kHello on start, whenever it heard nothing for `idle_hello` (a
// leader that restarted does not know it yet), and when the leader's
// heartbeats say it is ahead while no batch or copy frame came for
// `idle_hello` (heartbeats alone never start a stream). Readers of the journal (the
// CLI, a coordinator answering read-only queries) may run meanwhile.

#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <zmq.hpp>

#include "common/clock.h"
#include "common/duration.h"
#include "common/mutex.h"
#include "common/status.h"
#include "replication/journal_replica_store.h"
#include "replication/replication_standby_core.h"
#include "replication/replication_status.h"
#include "storage/journal.h"
#include "transport/actor.h"
#include "transport/security.h"

namespace apollo11::replication {

struct ReplicationStandbyConfig {
  std::string leader_endpoint;  // the leader's --replication-bind
  std::string leader_name;      // expected sender of frames; empty accepts any
  // The epoch etcd names for that leader (ha::RoleState::epoch): frames of
  // any other epoch are refused, so a forged epoch cannot outrank the real
  // leader. 0: none known (a static --replication-follow), any newer accepted.
  uint64_t leader_epoch = 0;
  std::string name;  // this standby's name (its routing id)
  uint64_t credit = 64;
  Millis idle_hello{1000};
  // The coordinators' shared key pair: the link is a CURVE client with it,
  // trusting only a leader holding the same pair. Unset: plain TCP.
  std::optional<transport::CurveKeyPair> curve;
  // Work on the journal that the leader does in its scheduler and a standby
  // must do too, on the data it applied (retention: docs/ha.md,
  // "Retention"). Called on the standby's thread, the journal's one writer,
  // between frames, with the wall and steady times; returns the Steady()
  // time it wants to run next (0: never; at or before now: at once). Unset:
  // none.
  std::function<Micros(Micros wall_now, Micros steady_now)> upkeep;
};

class ReplicationStandby {
 public:
  // Connects and starts applying. `journal`, `clock` and `ctx` must outlive
  // it; nothing else may write to the journal until Stop.
  static Result<std::unique_ptr<ReplicationStandby>> Start(zmq::context_t& ctx,
                                                           storage::Journal* journal,
                                                           const Clock* clock,
                                                           ReplicationStandbyConfig config);
  ~ReplicationStandby();
  ReplicationStandby(const ReplicationStandby&) = delete;
  ReplicationStandby& operator=(const ReplicationStandby&) = delete;

  // Stops applying and joins the thread (promotion: the node then recovers
  // from the journal as a restarted coordinator). Idempotent.
  void Stop();
  // A copy of the current state. Any thread.
  ReplicationStatus Snapshot() const;
  uint64_t lag_seq() const { return lag_seq_.load(); }
  double lag_seconds() const { return lag_ms_.load() / 1000.0; }
  uint64_t refused() const { return refused_.load(); }

 private:
  ReplicationStandby(storage::Journal* journal, const Clock* clock,
                     ReplicationStandbyConfig config);
  void Body(transport::ActorPipe& pipe, zmq::context_t& ctx);
  void Publish(const ReplicationStandbyCore& core);
  // How long the loop may wait for a frame: a tick, or less when the upkeep
  // is due sooner (`upkeep_due` 0: no upkeep).
  std::chrono::milliseconds PollWait(Micros upkeep_due) const;

  storage::Journal* journal_;
  const Clock* clock_;
  const ReplicationStandbyConfig config_;
  JournalReplicaStore replica_;
  std::unique_ptr<transport::Actor> actor_;
  mutable Mutex mu_;
  ReplicationStatus status_ GUARDED_BY(mu_);
  std::atomic<uint64_t> lag_seq_{0}, lag_ms_{0}, refused_{0};
};

}  // namespace apollo11::replication
