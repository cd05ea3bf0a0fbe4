#pragma once
// A guardian process that outlives the worker only to clean up after it: a
// small /bin/sh that reads the worker's list of task process groups from a
// socket and, when it reaches end of file because the worker died (kill
// -9 included), SIGKILLs those groups, the processes carrying the worker's
// environment token and every cgroup leaf of the worker. (A worker with
// cgroups tells it no groups: their leaves hold them.)
// Task leaders die with the worker on their own (PR_SET_PDEATHSIG); this is
// what ends the rest of them at once instead of at the worker's restart.
//
// Single-threaded: the executor's thread makes every call.

#include <sys/types.h>

#include <memory>
#include <string>

#include "common/status.h"

namespace apollo11::executor {

class DeathWatch {
 public:
  // Starts the guardian; `cgroup_dir` is the worker's cgroup directory whose
  // leaves it kills (empty: none); processes whose environment has an
  // APOLLO11_CONTAINMENT_TOKEN starting with `token_prefix` are killed too
  // (empty: none). Io when it cannot be started.
  static Result<std::unique_ptr<DeathWatch>> Start(const std::string& cgroup_dir,
                                                   const std::string& token_prefix);
  // Tells the guardian to exit without cleaning up, and waits (up to 1 s)
  // for it.
  ~DeathWatch();
  DeathWatch(const DeathWatch&) = delete;
  DeathWatch& operator=(const DeathWatch&) = delete;

  // A task's process group to kill should the worker die, and its end.
  // False when the guardian is gone (it died or was killed): start another.
  bool Add(pid_t pgid) { return Tell('+', pgid); }
  bool Remove(pid_t pgid) { return Tell('-', pgid); }
  // False once the guardian has exited (died or was killed): start another.
  // Asks the kernel, not the guardian, so it wakes nothing.
  bool Alive() const;

  pid_t pid() const { return pid_; }

 private:
  DeathWatch(pid_t pid, int pidfd, int socket) : pid_(pid), pidfd_(pidfd), socket_(socket) {}
  bool Tell(char op, pid_t pgid);

  pid_t pid_;
  int pidfd_;
  int socket_;  // close-on-exec: no task inherits it
};

}  // namespace apollo11::executor
