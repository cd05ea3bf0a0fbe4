#include "executor/child_process.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>

extern char** environ;

namespace apollo11::executor {

namespace {

// Closes the fds it holds unless released.
struct FdGuard {
  int fds[7] = {-1, -1, -1, -1, -1, -1, -1};
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

// `name` itself when it holds a '/', else the first executable regular file
// of that name on the worker's PATH (as posix_spawnp and execvp look it up);
// empty with `*err` set when there is none.
std::string ResolveProgram(const std::string& name, int* err) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr && *path != '\0' ? path : "/usr/local/bin:/usr/bin:/bin";
  *err = ENOENT;
  size_t begin = 0;
  while (begin <= dirs.size()) {
    size_t end = dirs.find(':', begin);
    if (end == std::string::npos) end = dirs.size();
    std::string dir = dirs.substr(begin, end - begin);
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    struct stat st;
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      if (::access(candidate.c_str(), X_OK) == 0) return candidate;
      *err = EACCES;
    }
    begin = end + 1;
  }
  return "";
}

// Everything the vforked child needs, prepared by the parent: the child
// shares the parent's memory and may not allocate or take a lock.
struct ChildArgs {
  const char* path;
  char* const* argv;
  char* const* envp;
  const char* workdir;  // null: stay in the worker's
  int devnull;
  int out_w;
  int err_w;
  int report_w;  // close-on-exec: EOF at execve, the errno of a failed step otherwise
  int cgroup_procs_fd;
  bool die_with_parent;
  pid_t parent;
  const int* ignored;  // signals the worker ignores: the child gets them back
  size_t ignored_count;
};

#define APOLLO11_CHILD_CODE __attribute__((noinline, no_sanitize("address", "thread", "undefined")))

// Reports `err` to the parent and ends the child.
[[noreturn]] APOLLO11_CHILD_CODE void ChildFail(const ChildArgs* a, int err) {
  ::syscall(SYS_write, a->report_w, &err, sizeof(err));
  ::syscall(SYS_exit_group, 127);
  __builtin_unreachable();
}

// Makes `fd` the child's `target` fd, without close-on-exec.
APOLLO11_CHILD_CODE void ChildDup(const ChildArgs* a, int fd, int target) {
  if (fd == target) {
    if (::syscall(SYS_fcntl, fd, F_SETFD, 0) != 0) ChildFail(a, errno);
  } else if (::syscall(SYS_dup3, fd, target, 0) < 0) {
    ChildFail(a, errno);
  }
}

// The child between vfork and execve: raw system calls only (no libc state,
// no sanitizer runtime), every signal blocked until just before execve.
[[noreturn]] APOLLO11_CHILD_CODE void ChildMain(const ChildArgs* a) {
  for (size_t i = 0; i < a->ignored_count; ++i) {
    // The kernel's sigaction with every field 0 but the handler: SIG_DFL.
    unsigned long act[4] = {0, 0, 0, 0};
    ::syscall(SYS_rt_sigaction, a->ignored[i], act, nullptr, sizeof(unsigned long));
  }
  if (::syscall(SYS_setpgid, 0, 0) != 0) ChildFail(a, errno);
  // Before anything else can run in the child: what it starts is born in
  // the cgroup too, whatever session or group it moves to.
  if (a->cgroup_procs_fd >= 0 && ::syscall(SYS_write, a->cgroup_procs_fd, "0", 1) != 1) {
    ChildFail(a, errno);
  }
  if (a->die_with_parent) {
    if (::syscall(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) ChildFail(a, errno);
    // The parent died before the request took effect: nobody would kill us.
    if (::syscall(SYS_getppid) != a->parent) ChildFail(a, ESRCH);
  }
  ChildDup(a, a->devnull, 0);
  ChildDup(a, a->out_w, 1);
  ChildDup(a, a->err_w, 2);
  if (a->workdir != nullptr && ::syscall(SYS_chdir, a->workdir) != 0) ChildFail(a, errno);
  unsigned long none = 0;
  ::syscall(SYS_rt_sigprocmask, SIG_SETMASK, &none, nullptr, sizeof(none));
  ::syscall(SYS_execve, a->path, a->argv, a->envp);
  ChildFail(a, errno);
}

// vfork in a frame of its own, so the child cannot clobber the caller's.
__attribute__((noinline)) pid_t VforkChild(const ChildArgs* a) {
  pid_t pid = ::vfork();
  if (pid == 0) ChildMain(a);
  return pid;
}

// Opens into `guard` the stdout, stderr and report pipes (close-on-exec, our
// read ends of stdout and stderr non-blocking) and /dev/null; the errno of
// the step that failed, 0 on success.
int OpenChildFds(FdGuard* guard) {
  for (int i = 0; i < 6; i += 2) {
    if (::pipe2(&guard->fds[i], O_CLOEXEC) != 0) return errno;
  }
  guard->fds[6] = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (guard->fds[6] < 0) return errno;
  // Only our read ends are non-blocking; the child sees ordinary pipes.
  for (int fd : {guard->fds[0], guard->fds[2]}) {
    if (::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK) != 0) return errno;
  }
  return 0;
}

}  // namespace

std::vector<int> IgnoredSignals() {
  std::vector<int> ignored;
  for (int sig = 1; sig < SIGRTMAX; ++sig) {
    struct sigaction current;
    if (::sigaction(sig, nullptr, &current) == 0 && current.sa_handler == SIG_IGN) {
      ignored.push_back(sig);
    }
  }
  return ignored;
}

Result<ChildProcess> SpawnChild(const std::vector<std::string>& argv,
                                const std::map<std::string, std::string>& env,
                                const std::string& workdir, const SpawnOptions& options) {
  if (argv.empty()) return Status::Internal("SpawnChild without argv");
  int resolve_err = 0;
  const std::string path = ResolveProgram(argv[0], &resolve_err);
  if (path.empty()) return StartError(resolve_err);
  FdGuard guard;  // out_read, out_write, err_read, err_write, report_read, report_write, devnull
  if (int err = OpenChildFds(&guard); err != 0) return StartError(err);

  std::vector<char*> cargv;
  for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
  cargv.push_back(nullptr);
  std::vector<std::string> env_strings = MergeEnv(env);
  env_strings.insert(env_strings.end(), options.extra_env.begin(), options.extra_env.end());
  std::vector<char*> cenv;
  for (auto& e : env_strings) cenv.push_back(e.data());
  cenv.push_back(nullptr);
  std::vector<int> looked_up;
  if (options.ignored_signals == nullptr) looked_up = IgnoredSignals();
  const std::vector<int>& ignored =
      options.ignored_signals != nullptr ? *options.ignored_signals : looked_up;

  const ChildArgs args{path.c_str(),
                       cargv.data(),
                       cenv.data(),
                       workdir.empty() ? nullptr : workdir.c_str(),
                       options.stdin_fd >= 0 ? options.stdin_fd : guard.fds[6],
                       guard.fds[1],
                       guard.fds[3],
                       guard.fds[5],
                       options.cgroup_procs_fd,
                       options.die_with_parent,
                       ::getpid(),
                       ignored.data(),
                       ignored.size()};
  // No signal handler may run in the child while it shares our memory.
  sigset_t all;
  sigset_t saved;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &saved);
  const pid_t pid = VforkChild(&args);
  const int vfork_err = errno;
  pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  if (pid < 0) return StartError(vfork_err);

  ::close(guard.fds[5]);
  guard.fds[5] = -1;
  int child_err = 0;
  ssize_t n;
  do {
    n = ::read(guard.fds[4], &child_err, sizeof(child_err));
  } while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(sizeof(child_err))) {
    while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
    }
    return StartError(child_err);
  }

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
  child.stdout_fd = guard.fds[0];
  child.stderr_fd = guard.fds[2];
  guard.fds[0] = -1;
  guard.fds[2] = -1;
  return child;  // the guard closes our copies of the write ends
}

}  // namespace apollo11::executor
