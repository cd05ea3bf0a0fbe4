#include "alerts/command_hook.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <thread>
#include <vector>

extern char** environ;

namespace apollo11::alerts {

namespace {

using Clock = std::chrono::steady_clock;

std::vector<std::string> MergedEnv(const std::map<std::string, std::string>& overrides) {
  std::vector<std::string> out;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq != nullptr && overrides.count(std::string(*e, eq - *e)) > 0) continue;
    out.emplace_back(*e);
  }
  for (const auto& [k, v] : overrides) out.push_back(k + "=" + v);
  return out;
}

// Feeds `data` to the hook's stdin until done, the hook closes it, or the
// deadline. A hook that ignores its stdin is fine: the write fails with EPIPE.
// SIGPIPE is blocked on this thread meanwhile (it is thread-directed), and a
// pending one is consumed before the old mask returns.
void Feed(int fd, const std::string& data, Clock::time_point deadline) {
  sigset_t pipe_only, old;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
  size_t sent = 0;
  while (sent < data.size() && Clock::now() < deadline) {
    ssize_t n = ::write(fd, data.data() + sent, data.size() - sent);
    if (n > 0) {
      sent += static_cast<size_t>(n);
    } else if (n < 0 && errno == EAGAIN) {
      pollfd p{fd, POLLOUT, 0};
      ::poll(&p, 1, 20);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      if (errno == EPIPE) {
        timespec zero{0, 0};
        ::sigtimedwait(&pipe_only, nullptr, &zero);
      }
      break;
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

}  // namespace

Status RunCommandHook(const std::string& command, const std::string& json,
                      const std::map<std::string, std::string>& env, Millis timeout,
                      std::stop_token abort) {
  int in[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return Status::Io(std::string("pipe: ") + std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
  // The node's stdout carries its "listening" line: hook output goes to stderr.
  posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigemptyset(&defaults);
  for (int s : {SIGPIPE, SIGTERM, SIGINT}) sigaddset(&defaults, s);
  posix_spawnattr_setsigmask(&attr, &none);  // the node blocks SIGTERM in all its threads
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);

  std::vector<std::string> env_strings = MergedEnv(env);
  std::vector<char*> envp;
  for (std::string& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string sh = "/bin/sh", dash_c = "-c", cmd = command;
  char* argv[] = {sh.data(), dash_c.data(), cmd.data(), nullptr};
  pid_t pid = -1;
  const int err = ::posix_spawn(&pid, "/bin/sh", &actions, &attr, argv, envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  ::close(in[0]);
  if (err != 0) {
    ::close(in[1]);
    return Status::Io(std::string("could not start /bin/sh: ") + std::strerror(err));
  }

  const auto deadline = Clock::now() + timeout;
  ::fcntl(in[1], F_SETFL, O_NONBLOCK);
  Feed(in[1], json, deadline);
  ::close(in[1]);

  int status = 0;
  for (;;) {
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) return Status::Io(std::string("waitpid: ") + std::strerror(errno));
    const bool aborted = abort.stop_requested();
    if (aborted || Clock::now() >= deadline) {
      ::kill(-pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      return Status::Io(aborted ? std::string("command hook killed: the node is stopping")
                                : "command hook killed after " + FormatDuration(timeout));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return Status::Ok();
  if (WIFSIGNALED(status)) {
    return Status::Io("command hook killed by signal " + std::to_string(WTERMSIG(status)));
  }
  return Status::Io("command hook exited " + std::to_string(WEXITSTATUS(status)));
}

}  // namespace apollo11::alerts
