#pragma once
// A cgroup v2 directory of the worker's own in which it creates one child
// cgroup per execution: whatever a task starts (setsid, double fork, daemon)
// is born in that child cgroup and is killed with it (cgroup.kill).
//
// Layout: <the worker's cgroup>/<name>/<leaf>; `name` identifies the worker
// (a restarted worker finds the leaves its killed predecessor left), a leaf
// one execution. No controller is enabled anywhere, so the worker may stay in
// its own cgroup beside them. Single-threaded, like the executor.

#include <sys/types.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace apollo11::executor {

class CgroupTree {
 public:
  // Finds this process's cgroup v2 directory (the cgroup2 mount in
  // /proc/self/mountinfo, the "0::" line of /proc/self/cgroup) and creates
  // (or reuses) `name` under it. Unsupported, with the reason, when there is
  // no cgroup2 mount, the directory or its cgroup.procs is not writable
  // (not delegated to us), or cgroup.kill is missing (kernel before 5.14).
  static Result<std::unique_ptr<CgroupTree>> Open(const std::string& name);
  // Removes the directory if it is empty.
  ~CgroupTree();
  CgroupTree(const CgroupTree&) = delete;
  CgroupTree& operator=(const CgroupTree&) = delete;

  // <the worker's cgroup>/<name>.
  const std::string& dir() const { return dir_; }

  // Creates leaf `leaf` (reused if it exists) and returns its cgroup.procs
  // opened for writing (the caller closes it).
  Result<int> Create(const std::string& leaf) const;
  // The processes in `leaf` and below; empty when it has none or is gone.
  std::vector<pid_t> Procs(const std::string& leaf) const;
  // Sends `sig` to every process in `leaf` and below: SIGKILL through
  // cgroup.kill (which no process escapes by forking), others pid by pid.
  void Signal(const std::string& leaf, int sig) const;
  // Removes `leaf` (and sub-cgroups a task made); false while processes
  // remain (a killed process leaves a moment later).
  bool Remove(const std::string& leaf) const;
  // Kills the processes of every directory beside dir() whose name starts
  // with `prefix` (earlier processes of this worker) and removes them once
  // empty (waiting up to 1 s); each of their leaves with the number of
  // processes it held.
  std::vector<std::pair<std::string, size_t>> KillSiblings(const std::string& prefix) const;
  // Removes dir() if it is empty (Create makes it again): an idle worker
  // killed -9 leaves no directory behind.
  void RemoveIfEmpty() const;

 private:
  explicit CgroupTree(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
};

}  // namespace apollo11::executor
