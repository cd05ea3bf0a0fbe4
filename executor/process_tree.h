#pragma once
// Finding a task's processes by ancestry when no cgroup holds them: one scan
// of /proc gives every process's parent, group and start time, and a task's
// processes are the descendants of its leader, what is still in the leader's
// process group, and whatever was known to be one of them before (a process
// whose parent died is reparented, to the worker when it is a subreaper).

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <vector>

#include "executor/process_group.h"

namespace apollo11::executor {

// One process of a scan.
struct ProcEntry {
  pid_t pid = 0;
  ProcStat stat;
};

// Every process /proc lists (threads are not listed), zombies included.
std::vector<ProcEntry> ScanProcesses();

// A process told apart from a later one with the same pid.
using KnownProcs = std::map<pid_t, uint64_t>;  // pid -> start time

// Adds to `known` every live (non-zombie) process of `all` that descends
// from `leader` (when it is not 0), from a live process already in `known`,
// or is in process group `pgid` (when not 0); drops the entries of `known`
// that are gone or whose pid now names another process. `self` (the
// worker) and its ancestors are never added.
void TrackDescendants(const std::vector<ProcEntry>& all, pid_t self, pid_t leader, pid_t pgid,
                      KnownProcs* known);

}  // namespace apollo11::executor
