#pragma once
// What keeps every process of an execution findable, so that nothing a task
// started outlives it: at its end (success included), on timeout and on
// cancel, whatever is left is killed and counted.
//
// Two ways, chosen when the executor starts:
// - cgroup: one cgroup v2 leaf per execution (CgroupTree). The child joins it
//   before execve, so no process escapes it by setsid or double fork; SIGKILL
//   is cgroup.kill. A restarted worker kills the leaves its predecessor left.
// - process tree, when no cgroup can be made: this process becomes a child
//   subreaper (PR_SET_CHILD_SUBREAPER), so an orphaned descendant is
//   reparented to the worker instead of init; an execution's processes are
//   its leader's descendants, its process group, what was seen to be one of
//   them, and orphans carrying its APOLLO11_CONTAINMENT_TOKEN token. Gap: a
//   process that leaves the group and the environment token behind and whose
//   parent dies between two scans (500 ms) is not found.
// Either way each task leader gets PR_SET_PDEATHSIG(SIGKILL) (SpawnChild),
// and a DeathWatch kills the task groups, token carriers and cgroup leaves of
// a worker that died (kill -9) at once. Left, in process tree mode: a process
// that left its group and cleared its environment survives a worker killed -9.
//
// Single-threaded: the executor's thread makes every call.

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "executor/cgroup_tree.h"
#include "executor/child_process.h"
#include "executor/death_watch.h"
#include "executor/exec_types.h"
#include "executor/process_tree.h"

namespace apollo11::executor {

// One execution's containment; owned by the executor's record of it.
struct ContainedExec {
  std::string leaf;    // cgroup mode: its leaf under the tree
  std::string token;   // the value of APOLLO11_CONTAINMENT_TOKEN in its environment
  pid_t pgid = 0;      // the current leader's group (precheck, then task)
  bool reaped = true;  // the leader has been reaped
  KnownProcs known;    // process tree mode: its processes seen so far
};

class Containment {
 public:
  // Chooses the mode (see ContainmentMode). `name` names this worker's
  // cgroup directory, NAME-PID (empty: "apollo11-PID"): one per process, so
  // the death watch of a killed predecessor never touches it, while a
  // worker restarted with the same name finds the predecessors' directories
  // (KillLeftovers).
  Containment(ContainmentMode mode, const std::string& name);
  // Kills what is still contained, reaps, removes the leaves (waits up to
  // 1 s for them to empty).
  ~Containment();
  Containment(const Containment&) = delete;
  Containment& operator=(const Containment&) = delete;

  bool cgroup() const { return tree_ != nullptr; }
  // "cgroup v2 DIR" or "process tree (subreaper): WHY NO CGROUP", for the log.
  const std::string& description() const { return description_; }

  // Cgroup mode with a name: kills and removes what previous processes of
  // this worker left (the NAME-* directories but its own); returns each
  // leaf's name with the number of processes it held. Call before the first
  // Prepare.
  std::vector<std::pair<std::string, size_t>> KillLeftovers();

  // Before a leader is spawned for `exec` (named `leaf`, unique among the
  // running executions): its cgroup, environment token and spawn options.
  // The cgroup.procs fd in `options` is closed by Started or Abandon.
  Status Prepare(const std::string& leaf, ContainedExec* exec, SpawnOptions* options);
  // The leader `pid` runs (its pgid is its pid).
  void Started(ContainedExec* exec, SpawnOptions* options, pid_t pid);
  // The spawn failed: releases what Prepare opened.
  void Abandon(ContainedExec* exec, SpawnOptions* options);
  // The leader has been reaped.
  void LeaderReaped(ContainedExec* exec) { exec->reaped = true; }

  // Sends `sig` to every process of `exec`, its leader's group included
  // (SIGKILL through cgroup.kill in cgroup mode).
  void Signal(ContainedExec* exec, int sig);
  // At the end of `exec` (its leader reaped): SIGKILLs what is left of it and
  // returns how many processes that was; its leaf is removed once empty.
  size_t KillRest(ContainedExec* exec);

  // Periodic work, from the executor's Process (also once after the last
  // execution ended): in process tree mode, every 500 ms, learns the
  // processes of `running` and reaps the orphans that ended; removes emptied
  // leaves; once nothing has run and no leaf has waited to be removed for
  // 2 s (`now` on the steady clock), stops the DeathWatch (waiting a moment
  // for it to exit) and removes the worker's cgroup directory, at once when
  // there is no DeathWatch to remove it after a kill -9.
  void Tick(Micros now, const std::vector<ContainedExec*>& running);

 private:
  void StartWatch();
  // Tick's release of the idle worker's DeathWatch and cgroup directory.
  void ReleaseWhenIdle(Micros now, bool idle);
  void Release(SpawnOptions* options);
  void Scan(const std::vector<ContainedExec*>& running);
  void ReapOrphans(const std::vector<ProcEntry>& all, const std::vector<ContainedExec*>& running);

  std::string name_;  // as given; empty: no predecessors to look for
  std::unique_ptr<CgroupTree> tree_;
  // While tasks run and for 2 s after: null when idle or when it could not start.
  std::unique_ptr<DeathWatch> watch_;
  bool watch_failed_ = false;
  // Since when nothing has run (no leaf waiting either); whether the watch
  // and the directory have been released since the last Prepare (the
  // directory CgroupTree::Open made has not).
  std::optional<Micros> idle_since_;
  bool idle_released_ = false;
  std::string description_;
  pid_t self_ = 0;
  uint64_t next_token_ = 1;
  Micros next_scan_ = 0;
  std::vector<std::string> leaves_to_remove_;
  // Process tree mode: orphans of ours to reap once they are zombies (pid ->
  // start time), and the groups of executions that ended (their members
  // that exit later are reaped too).
  KnownProcs orphans_;
  std::set<pid_t> ended_groups_;
};

// "1 leftover process" / "N leftover processes".
std::string LeftoverNote(size_t killed);

}  // namespace apollo11::executor
