#include "alerts/command_hook.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <string_view>
#include <thread>
#include <vector>

#include "common/log_event.h"

extern char** environ;

namespace apollo11::alerts {

namespace {

using SteadyClock = std::chrono::steady_clock;

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
void Feed(int fd, const std::string& data, SteadyClock::time_point deadline) {
  sigset_t pipe_only, old;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
  size_t sent = 0;
  while (sent < data.size() && SteadyClock::now() < deadline) {
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

// What a hook printed (stdout and stderr, one pipe): the first kOutputCap
// bytes are kept for the log, the rest read and counted so the hook never
// blocks on a full pipe.
class OutputCapture {
 public:
  static constexpr size_t kOutputCap = 4096;
  static constexpr size_t kMaxLines = 20;

  explicit OutputCapture(int fd) : fd_(fd) {}
  ~OutputCapture() { ::close(fd_); }
  OutputCapture(const OutputCapture&) = delete;
  OutputCapture& operator=(const OutputCapture&) = delete;

  // Waits up to `ms` for output and reads what is there.
  void Poll(int ms) {
    pollfd p{fd_, POLLIN, 0};
    if (!open_ || ::poll(&p, 1, ms) <= 0) {
      if (!open_ && ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(ms));
      return;
    }
    Drain();
  }

  // Reads what is there now, without waiting (a background child of the
  // hook may keep the pipe open: EOF is not waited for).
  void Drain() {
    char buf[4096];
    while (open_) {
      const ssize_t n = ::read(fd_, buf, sizeof(buf));
      if (n > 0) {
        const size_t keep = std::min(static_cast<size_t>(n), kOutputCap - kept_.size());
        kept_.append(buf, keep);
        dropped_ += static_cast<size_t>(n) - keep;
      } else if (n == 0 || errno != EINTR) {
        open_ = n != 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
        return;
      }
    }
  }

  // One alert_hook_output event per line kept (at most kMaxLines), then one
  // saying how much was left out.
  void Log(const std::string& command) const {
    std::string_view rest = kept_;
    size_t lines = 0, skipped_lines = 0;
    while (!rest.empty()) {
      const size_t nl = rest.find('\n');
      const std::string_view line = rest.substr(0, nl);
      rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
      if (lines >= kMaxLines) {
        ++skipped_lines;
        continue;
      }
      ++lines;
      LogEvent(spdlog::level::info, "alert_hook_output", {{"command", command}, {"line", line}},
               "alert hook output: {}", line);
    }
    if (dropped_ > 0 || skipped_lines > 0) {
      LogEvent(
          spdlog::level::info, "alert_hook_output_truncated",
          {{"command", command}, {"dropped_bytes", dropped_}, {"dropped_lines", skipped_lines}},
          "alert hook output truncated: {} more bytes and {} more lines not logged", dropped_,
          skipped_lines);
    }
  }

 private:
  const int fd_;
  bool open_ = true;
  std::string kept_;
  size_t dropped_ = 0;
};

}  // namespace

Status RunCommandHook(const std::string& command, const std::string& json,
                      const std::map<std::string, std::string>& env, Millis timeout,
                      std::stop_token abort) {
  int in[2], out[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return Status::Io(std::string("pipe: ") + std::strerror(errno));
  if (::pipe2(out, O_CLOEXEC | O_NONBLOCK) != 0) {
    ::close(in[0]);
    ::close(in[1]);
    return Status::Io(std::string("pipe: ") + std::strerror(errno));
  }
  OutputCapture output(out[0]);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
  // Neither of the node's streams: its stdout carries the "listening" line
  // and its stderr one log record per line. The hook's output is captured
  // and logged as alert_hook_output events.
  posix_spawn_file_actions_adddup2(&actions, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, out[1], STDERR_FILENO);
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
  ::close(out[1]);
  if (err != 0) {
    ::close(in[1]);
    return Status::Io(std::string("could not start /bin/sh: ") + std::strerror(err));
  }

  const auto deadline = SteadyClock::now() + timeout;
  ::fcntl(in[1], F_SETFL, O_NONBLOCK);
  Feed(in[1], json, deadline);
  ::close(in[1]);

  int status = 0;
  for (;;) {
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) return Status::Io(std::string("waitpid: ") + std::strerror(errno));
    const bool aborted = abort.stop_requested();
    if (aborted || SteadyClock::now() >= deadline) {
      ::kill(-pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      output.Drain();
      output.Log(command);
      return Status::Io(aborted ? std::string("command hook killed: the node is stopping")
                                : "command hook killed after " + FormatDuration(timeout));
    }
    output.Poll(10);
  }
  output.Drain();
  output.Log(command);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return Status::Ok();
  if (WIFSIGNALED(status)) {
    return Status::Io("command hook killed by signal " + std::to_string(WTERMSIG(status)));
  }
  return Status::Io("command hook exited " + std::to_string(WEXITSTATUS(status)));
}

}  // namespace apollo11::alerts
