#pragma once
// Telling a process apart from a later one that reused its pid, and stopping
// a task's process group that is not (or no longer) our child: what a worker
// restarted after kill -9 needs to end the tasks its previous process left.

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "common/duration.h"

namespace apollo11::executor {

// The fields of /proc/PID/stat this code needs.
struct ProcStat {
  char state = '?';         // field 3: R, S, D, Z (zombie), ...
  pid_t ppid = 0;           // field 4
  pid_t pgid = 0;           // field 5
  uint64_t start_time = 0;  // field 22: clock ticks after boot
};

// Parses the text of /proc/PID/stat; nullopt when malformed. The command name
// (field 2) may hold spaces and parentheses, so fields are counted after its
// last ')'.
std::optional<ProcStat> ParseProcStat(std::string_view text);
// Reads /proc/PID/stat; nullopt when the process does not exist.
std::optional<ProcStat> ReadProcStat(pid_t pid);

// A process group to stop: its leader's pid (= pgid) and the leader's start
// time when it was started.
struct GroupToStop {
  pid_t pgid = 0;
  uint64_t start_time = 0;
  Millis kill_grace{0};
};

enum class StopResult {
  kNotRunning,     // nothing of the group runs, or its pid belongs to another process: nothing sent
  kTerminated,     // SIGTERM was enough
  kKilled,         // SIGKILL after the kill grace
  kMembersKilled,  // the leader was gone (PR_SET_PDEATHSIG): what it left in its group got SIGKILL
};

// Sends SIGTERM to each group whose leader still runs with the recorded start
// time (a group whose leader is gone but which still has members, as after
// the leader's PR_SET_PDEATHSIG, gets SIGKILL at once: no process can take
// its id while it has members), waits (on a pidfd of the leader) up to each group's kill grace for
// the leader to exit, then sends SIGKILL to the group; once the leader has exited, what it left in
// its group gets SIGKILL at once, as in the executor. A group whose leader's pid now belongs to
// another process is never signalled. Blocks until every leader is gone: the longest grace, plus at
// most 5 s for a SIGKILLed process to die. Results are in the order of `groups`.
std::vector<StopResult> StopGroups(const std::vector<GroupToStop>& groups);

}  // namespace apollo11::executor
