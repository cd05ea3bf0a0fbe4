#pragma once
// The leader's replication actor: one thread that owns a ROUTER socket on
// --replication-bind (its own socket pair, apart from the worker and client
// ports) and a ReplicationLeaderCore. The journal's writer thread hands it
// each committed batch through OnCommitted (a CommitObserver).
//
// In sync mode the leader keeps two sets of standbys. Waited-for: every
// batch's OnCommitted returns once each of them acknowledged it durably; a
// standby joins when it streams (no copy under way) and answers, so commits
// wait while it catches up (one that missed the timeout this term joins
// again only when it is at most kJoinLag batches behind).
// In-sync: the waited-for standbys that have acknowledged every batch
// handed over up to their joining, so they hold every batch released; only
// these may take over (record_in_sync). A standby that does not acknowledge
// within the timeout leaves both sets, recorded before the batch is
// released (log, alert). With no standby in sync the leader is lagging
// (apollo11_replication_lagging) and, with none waited for, releases at the
// local commit. A term starts with both sets empty.

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <zmq.hpp>

#include "alerts/sink.h"
#include "common/clock.h"
#include "common/duration.h"
#include "common/mutex.h"
#include "common/status.h"
#include "replication/in_sync_set.h"
#include "replication/replication_leader_core.h"
#include "replication/replication_status.h"
#include "storage/commit_observer.h"
#include "storage/journal.h"
#include "transport/actor.h"
#include "transport/security.h"

namespace apollo11::replication {

class CopySender;

struct ReplicationLeaderConfig {
  std::string bind = "tcp://127.0.0.1:0";
  std::string name = "leader";     // the sender of its frames
  std::set<std::string> standbys;  // admitted names; empty admits any
  bool sync = true;
  Millis timeout{1000};
  size_t window_batches = 4096;
  size_t copy_chunk = 1 << 20;
  // A standby whose journal copy makes no progress this long loses its turn
  // (CopySender).
  Millis copy_stall{30000};
  uint64_t epoch = 0;
  alerts::Sink* alerts = nullptr;  // may be null
  // The coordinators' shared key pair: the link is a CURVE server in ZAP
  // domain kReplicationZapDomain, where the node admits only that pair's
  // public key (a ZapHandler must run in the context). Unset: plain TCP.
  std::optional<transport::CurveKeyPair> curve;
  // Records the in-sync set, this leader's name included, where a standby
  // reads it before it campaigns (etcd, ha/in_sync.h); empty: not recorded.
  // Calls are serialized, and each carries the set as it is then. A removal
  // is retried until recorded (or the leader stands down) before the batch
  // is released; an addition is retried at the next tick.
  std::function<Status(const std::set<std::string>& in_sync)> record_in_sync;
};

class ReplicationLeader final : public storage::CommitObserver {
 public:
  // Binds, then serves standbys. `journal`, `clock` and `ctx` must outlive
  // it. Register it with journal->SetCommitObserver only after Start.
  static Result<std::unique_ptr<ReplicationLeader>> Start(zmq::context_t& ctx,
                                                          storage::Journal* journal,
                                                          const Clock* clock,
                                                          ReplicationLeaderConfig config);
  ~ReplicationLeader() override;
  ReplicationLeader(const ReplicationLeader&) = delete;
  ReplicationLeader& operator=(const ReplicationLeader&) = delete;

  // The journal's writer thread only (see storage::CommitObserver).
  void OnCommitted(uint64_t batch_no, uint64_t first_seq, const storage::RunBatch& batch) override;

  // The endpoint bound (port 0 resolved).
  const std::string& endpoint() const { return endpoint_; }
  // A copy of the current state. Any thread.
  ReplicationStatus Snapshot() const;
  // Cheap reads for /metrics (any thread).
  uint64_t worst_lag_seq() const { return worst_lag_seq_.load(); }
  double worst_lag_seconds() const { return worst_lag_ms_.load() / 1000.0; }
  bool lagging() const { return lagging_.load(); }
  // A leader standing down: commits (the last of its coordinator, stopping)
  // stop waiting for acknowledgements from now on, so the coordinator stops
  // at once instead of after --replication-timeout. Its frames to workers are
  // fenced by the lease already. Any thread.
  void StopWaiting();
  uint64_t refused() const { return refused_.load(); }

 private:
  ReplicationLeader(storage::Journal* journal, const Clock* clock, ReplicationLeaderConfig config);
  void Body(transport::ActorPipe& pipe, zmq::context_t& ctx);
  void Serve(transport::ActorPipe& pipe, zmq::socket_t& router,
             const ReplicationLeaderCore::Position& start);
  // Sends `out`'s frames and hands its copy requests and acknowledgements
  // to `copier`, then lets it send.
  void Deliver(zmq::socket_t& router, const ReplicationLeaderCore& core,
               const ReplicationLeaderCore::Output& out, CopySender& copier);
  void Publish(const ReplicationLeaderCore& core) EXCLUDES(mu_);
  // Records the in-sync set when it changed since it was last recorded,
  // and wakes a commit waiting for that; false when recording failed (it is
  // retried at the next tick). The replication actor's thread.
  bool RecordInSync() EXCLUDES(mu_, record_mu_);
  // Waits for the in-sync standbys to acknowledge `batch_no`; when the
  // timeout runs out first, drops the late ones and waits until the record
  // no longer names them (InSyncSet's release rule). The writer thread.
  void AwaitInSync(uint64_t batch_no) EXCLUDES(mu_);
  // Asks the replication actor to record the in-sync set now.
  void NudgeRecord();

  storage::Journal* journal_;
  const Clock* clock_;
  const ReplicationLeaderConfig config_;
  std::string endpoint_;
  std::string feed_name_;
  zmq::socket_t feed_out_;  // the writer thread's end
  zmq::socket_t feed_in_;   // the actor's end
  std::unique_ptr<transport::Actor> actor_;

  Mutex record_mu_;  // serializes record_in_sync
  mutable Mutex mu_ ACQUIRED_AFTER(record_mu_);
  CondVar acked_cv_;  // acknowledgements, records, stopping
  InSyncSet in_sync_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  ReplicationStatus status_ GUARDED_BY(mu_);
  std::atomic<bool> lagging_{false};
  std::atomic<uint64_t> worst_lag_seq_{0}, worst_lag_ms_{0}, refused_{0};
};

}  // namespace apollo11::replication
