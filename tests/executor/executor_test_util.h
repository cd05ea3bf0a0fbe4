#pragma once
// Helpers for the executor tests: a poll loop like the worker actor's, a
// temporary directory, and process-liveness checks that count zombies as
// dead (orphans may stay zombies when PID 1 does not reap).

#include <chrono>
#include <functional>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "common/clock.h"
#include "executor/executor.h"

namespace apollo11::executor::testing {

// Drives `executor` the way the worker does (zmq::poll on its items, bounded
// by NextDeadline, then Process) until nothing runs, `until` returns true, or
// `limit` passes. Returns every outcome seen.
std::vector<ExecOutcome> RunToCompletion(
    Executor& executor, const Clock& clock, std::chrono::milliseconds limit,
    const std::function<bool(const std::vector<ExecOutcome>&)>& until = nullptr);

// A fresh directory under /tmp, removed with its contents on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string ReadFile(const std::string& path);
void WriteFile(const std::string& path, const std::string& text);

// True when `pid` exists and is not a zombie.
bool ProcessAlive(int pid);

// A `sleep` argument no other process on this machine has, nor holds as a
// prefix (30.<pid:7><n:4>),
// to find a test's processes in /proc.
std::string UniqueSleepMarker();
// Pids of live (non-zombie) processes whose command line holds `marker`.
std::vector<int> LiveWithMarker(const std::string& marker);
// Pids of this process's children (zombies included) whose command line
// holds `marker` (a zombie's is empty); "apollo11-death-watch" finds its
// death watch (executor/death_watch.h), "" every child.
std::vector<int> OwnChildren(const std::string& marker);
// Pids of live (non-zombie) processes whose process group is `pgid`.
std::vector<int> LiveGroupMembers(int pgid);

// Waits (on pidfds, not by sleeping) until `pid` / every member of `pgid` has
// exited; false if one is still alive after `limit`. A signalled process dies
// asynchronously, so "SIGKILL sent" and "gone" differ by a scheduling delay.
bool WaitUntilGone(int pid, std::chrono::milliseconds limit);
bool WaitUntilGroupGone(int pgid, std::chrono::milliseconds limit);

}  // namespace apollo11::executor::testing
