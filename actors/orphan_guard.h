#pragma once
// Keeps a worker's running task process groups in its outbox (the "children"
// records of storage::Outbox) and, when the worker starts, stops the groups a
// previous process of the same worker left running when it was killed -9.
// Without it the coordinator requeues those executions and a second copy runs
// beside the orphan.
//
// Task leaders die with the worker (PR_SET_PDEATHSIG), so after a kill -9
// what is usually left is the leader's group without its leader; with cgroup
// containment, whatever was in the execution's cgroup. Each record is written
// right after the spawn, so a worker killed between
// posix_spawn and that write leaves one group unrecorded. The leader's start
// time makes sure a pid reused by another process is never signalled.
// Single-threaded: the worker actor's thread makes every call.

#include <string>

#include "executor/executor.h"
#include "storage/outbox.h"

namespace apollo11::actors {

class OrphanGuard : public executor::ProcessGroupObserver {
 public:
  // `store` must outlive the guard; null makes the guard do nothing.
  OrphanGuard(storage::Outbox* store, std::string worker_id);

  // Stops every recorded group whose leader still runs as recorded: SIGTERM,
  // then SIGKILL after the kill grace its task asked for. Logs each stop with
  // the exec id, then forgets every record. Blocks for at most the longest
  // kill grace (plus a moment); call before the executor starts anything.
  void StopLeftovers();
  // Cgroup containment: kills what a previous process of this worker left
  // in its cgroup (executor::Executor::KillLeftovers) and logs each leaf.
  // Call before the executor starts anything.
  void StopCgroupLeftovers(executor::Executor& executor);

  void GroupStarted(pid_t pgid, uint64_t start_time, const executor::ExecRequest& request) override;
  void GroupReaped(pid_t pgid) override;

 private:
  storage::Outbox* store_;
  std::string worker_id_;
};

}  // namespace apollo11::actors
