#pragma once
// Starting one child process the way the worker needs it: posix_spawn (never
// fork: the worker is multi-threaded and may be large), in a new process group
// of its own, stdin from /dev/null, stdout/stderr into non-blocking pipes, and
// a pidfd to learn of its exit through poll. Every fd is close-on-exec.

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

// Spawns argv[0] (looked up in PATH when it has no '/') with the current
// environment plus `env` (entries in `env` win), in `workdir` when not empty.
// An error reads "could not start: <reason>".
Result<ChildProcess> SpawnChild(const std::vector<std::string>& argv,
                                const std::map<std::string, std::string>& env,
                                const std::string& workdir);

}  // namespace apollo11::executor
