#pragma once
// Helpers for storage tests: a temporary state dir and running a function in
// a forked child process.

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>

#include "storage/journal.h"

namespace apollo11::storage::testing {

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it.
class TempDir {
 public:
  TempDir() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp != nullptr ? tmp : "/tmp") + "/apollo11-storage-XXXXXX";
    char* made = mkdtemp(pattern.data());
    if (made == nullptr) std::abort();
    path_ = made;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Forks; the child runs `body` and reports the string it returns ("ok" on
// success, a description of what went wrong otherwise) through a pipe, then
// _exit()s without running destructors. Returns the child's report, or a
// description of how the child died.
inline std::string RunInChild(const std::function<std::string()>& body) {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  pid_t pid = fork();
  if (pid < 0) return "fork failed";
  if (pid == 0) {
    close(fds[0]);
    std::string report;
    try {
      report = body();
    } catch (...) {
      report = "child threw";
    }
    ssize_t ignored = write(fds[1], report.data(), report.size());
    (void)ignored;
    _exit(0);
  }
  close(fds[1]);
  std::string report;
  char buf[512];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) report.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status)) return "child died with signal " + std::to_string(WTERMSIG(status));
  return report;
}

// A transition of `task` in `run` with a short reason.
inline TransitionRecord MakeTransition(const std::string& run, const std::string& task,
                                       TaskState from, TaskState to, Micros ts = 1) {
  TransitionRecord t;
  t.ts = ts;
  t.run_id = run;
  t.task_id = task;
  t.exec_id = run + "." + task;
  t.attempt = 1;
  t.from = from;
  t.to = to;
  t.reason = "dependency a succeeded";
  t.actor = "scheduler";
  return t;
}

}  // namespace apollo11::storage::testing
