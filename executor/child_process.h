#pragma once
// Starting one child process the way the worker needs it: vfork + execve
// (never a plain fork: the worker is multi-threaded and may be large), in a
// new process group of its own, stdin from /dev/null, stdout/stderr into
// non-blocking pipes, and a pidfd to learn of its exit through poll. Every fd
// is close-on-exec. Between vfork and execve the child makes raw system calls
// only: it joins its containment (a cgroup) and asks to be SIGKILLed when the
// thread that started it dies, so nothing it starts can run outside the
// cgroup and a worker killed -9 takes its task leaders down.

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "common/status.h"

namespace apollo11::executor {

// A started child. The caller owns the fds (close them) and must reap `pid`
// with waitpid(pid, ..., WNOHANG) once `pidfd` is readable.
struct ChildProcess {
  pid_t pid = -1;      // also the process group id
  int pidfd = -1;      // readable once the child has exited
  int stdout_fd = -1;  // read ends, O_NONBLOCK
  int stderr_fd = -1;
};

struct SpawnOptions {
  // An open, writable cgroup.procs of the cgroup the child must run in; the
  // child moves itself there before execve. -1: stay in the worker's cgroup.
  int cgroup_procs_fd = -1;
  // PR_SET_PDEATHSIG(SIGKILL): the child dies when the calling thread does
  // (the worker actor's thread, so a worker killed -9 kills it too).
  bool die_with_parent = true;
  // The child's stdin; -1: /dev/null.
  int stdin_fd = -1;
  // "NAME=VALUE" entries added to the child's environment after `env`.
  std::vector<std::string> extra_env;
  // The signals this process ignores, which the child gets back at their
  // defaults, as IgnoredSignals() returned them; null: looked up at the
  // spawn (one sigaction call per signal).
  const std::vector<int>* ignored_signals = nullptr;
};

// The signals this process ignores now (SIG_IGN survives execve).
std::vector<int> IgnoredSignals();

// Spawns argv[0] (looked up in the worker's PATH when it has no '/') with the
// current environment plus `env` (entries in `env` win), in `workdir` when
// not empty. An error reads "could not start: <reason>" (a missing workdir or
// program, a cgroup that refused the child).
Result<ChildProcess> SpawnChild(const std::vector<std::string>& argv,
                                const std::map<std::string, std::string>& env,
                                const std::string& workdir, const SpawnOptions& options = {});

}  // namespace apollo11::executor
