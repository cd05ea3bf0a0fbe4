#include "executor/child_process.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

extern char** environ;

namespace apollo11::executor {

namespace {

// Closes the fds it holds unless released.
struct FdGuard {
  int fds[4] = {-1, -1, -1, -1};
  ~FdGuard() {
    for (int fd : fds) {
      if (fd >= 0) ::close(fd);
    }
  }
};

Status StartError(int err) {
  std::string why = std::strerror(err);
  if (err == E2BIG) why += " (the task's command line and environment exceed the system's limit)";
  return Status::Io("could not start: " + why);
}

// The environment block: ours, with `overrides` replacing or adding entries.
std::vector<std::string> MergeEnv(const std::map<std::string, std::string>& overrides) {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq != nullptr && overrides.count(std::string(*e, eq - *e)) > 0) continue;
    out.emplace_back(*e);
  }
  for (const auto& [k, v] : overrides) out.push_back(k + "=" + v);
  return out;
}

}  // namespace

Result<ChildProcess> SpawnChild(const std::vector<std::string>& argv,
                                const std::map<std::string, std::string>& env,
                                const std::string& workdir) {
  if (argv.empty()) return Status::Internal("SpawnChild without argv");
  FdGuard guard;  // out_read, out_write, err_read, err_write
  int out_pipe[2];
  int err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return StartError(errno);
  guard.fds[0] = out_pipe[0];
  guard.fds[1] = out_pipe[1];
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) return StartError(errno);
  guard.fds[2] = err_pipe[0];
  guard.fds[3] = err_pipe[1];
  // Only our read ends are non-blocking; the child sees ordinary pipes.
  for (int fd : {out_pipe[0], err_pipe[0]}) {
    if (::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK) != 0) return StartError(errno);
  }

  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  posix_spawn_file_actions_init(&actions);
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  if (!workdir.empty()) posix_spawn_file_actions_addchdir_np(&actions, workdir.c_str());
  // Own process group (pgid = pid), default signal dispositions and an empty
  // mask whatever the worker's threads have blocked or ignored.
  sigset_t all;
  sigset_t none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);

  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  std::vector<std::string> env_strings = MergeEnv(env);
  std::vector<char*> cenv;
  for (auto& e : env_strings) cenv.push_back(e.data());
  cenv.push_back(nullptr);

  pid_t pid = -1;
  int rc = ::posix_spawnp(&pid, cargv[0], &actions, &attr, cargv.data(), cenv.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return StartError(rc);

  int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (pidfd < 0) {
    int err = errno;
    ::kill(-pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    return StartError(err);
  }
  ChildProcess child;
  child.pid = pid;
  child.pidfd = pidfd;
  child.stdout_fd = out_pipe[0];
  child.stderr_fd = err_pipe[0];
  guard.fds[0] = -1;
  guard.fds[2] = -1;
  return child;  // the guard closes our copies of the write ends
}

}  // namespace apollo11::executor
