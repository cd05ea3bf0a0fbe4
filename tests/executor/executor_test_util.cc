#include "tests/executor/executor_test_util.h"

#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/small_file.h"

namespace apollo11::executor::testing {

std::vector<ExecOutcome> RunToCompletion(
    Executor& executor, const Clock& clock, std::chrono::milliseconds limit,
    const std::function<bool(const std::vector<ExecOutcome>&)>& until) {
  std::vector<ExecOutcome> out;
  const Micros end = clock.Steady() + limit.count() * kMicrosPerMilli;
  while (true) {
    executor.Process(clock.Steady(), &out);
    if (until ? until(out) : executor.running() == 0) break;
    const Micros now = clock.Steady();
    if (now >= end) break;
    std::vector<zmq_pollitem_t> items;
    executor.AppendPollItems(&items);
    Micros wake = end;
    Micros deadline = executor.NextDeadline();
    if (deadline != 0 && deadline < wake) wake = deadline;
    auto wait = std::chrono::milliseconds(std::max<Micros>(0, (wake - now + 999) / 1000));
    // A caller's condition may change without any fd event: look again soon.
    if (until && wait > std::chrono::milliseconds(10)) wait = std::chrono::milliseconds(10);
    try {
      zmq::poll(items, wait);
    } catch (const zmq::error_t&) {
      // EINTR: loop again.
    }
  }
  return out;
}

TempDir::TempDir() {
  char tmpl[] = "/tmp/apollo11-executor-test-XXXXXX";
  char* p = ::mkdtemp(tmpl);
  path_ = p != nullptr ? p : "/tmp";
}

TempDir::~TempDir() {
  std::error_code ec;
  if (path_ != "/tmp") std::filesystem::remove_all(path_, ec);
}

std::string ReadFile(const std::string& path) {
  // Not std::ifstream: a /proc file of a process that just ended fails its read with ESRCH.
  return ReadSmallFile(path, 64 << 20).value_or("");
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

namespace {

// Fields of /proc/PID/stat after the command name: state, ppid, pgrp.
bool ReadStat(int pid, char* state, int* pgrp) {
  std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  auto close = stat.rfind(')');
  if (close == std::string::npos) return false;
  std::istringstream rest(stat.substr(close + 2));
  int ppid = 0;
  rest >> *state >> ppid >> *pgrp;
  return static_cast<bool>(rest);
}

}  // namespace

bool ProcessAlive(int pid) {
  char state = 0;
  int pgrp = 0;
  if (::kill(pid, 0) != 0 && errno == ESRCH) return false;
  if (!ReadStat(pid, &state, &pgrp)) return false;
  return state != 'Z' && state != 'X';
}

std::string UniqueSleepMarker() {
  // Fixed width (7-digit pid, 4-digit count), so that no marker is a prefix
  // of another test process's: "30.<pid>0<n>" of pid 1230 matched pid 123's.
  static int n = 0;
  char text[32];
  std::snprintf(text, sizeof(text), "30.%07d%04d", static_cast<int>(::getpid()), ++n % 10000);
  return text;
}

namespace {

// Every pid /proc lists now.
std::vector<int> ProcPids() {
  std::vector<int> out;
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return out;
  while (dirent* e = ::readdir(dir)) {
    const int pid = std::atoi(e->d_name);
    if (pid > 0) out.push_back(pid);
  }
  ::closedir(dir);
  return out;
}

}  // namespace

std::vector<int> LiveWithMarker(const std::string& marker) {
  std::vector<int> out;
  for (int pid : ProcPids()) {
    const std::string cmd = ReadFile("/proc/" + std::to_string(pid) + "/cmdline");
    if (cmd.find(marker) != std::string::npos && ProcessAlive(pid)) out.push_back(pid);
  }
  return out;
}

std::vector<int> OwnChildren(const std::string& marker) {
  std::vector<int> out;
  for (int pid : ProcPids()) {
    const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
    const size_t paren = stat.rfind(')');
    int ppid = 0;
    if (paren == std::string::npos ||
        std::sscanf(stat.c_str() + paren + 1, " %*c %d", &ppid) != 1 || ppid != ::getpid()) {
      continue;
    }
    const std::string cmd = ReadFile("/proc/" + std::to_string(pid) + "/cmdline");
    if (cmd.find(marker) != std::string::npos) out.push_back(pid);
  }
  return out;
}

std::vector<int> LiveGroupMembers(int pgid) {
  std::vector<int> pids;
  if (::kill(-pgid, 0) != 0 && errno == ESRCH) return pids;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    char state = 0;
    int pgrp = 0;
    int pid = std::stoi(name);
    if (ReadStat(pid, &state, &pgrp) && pgrp == pgid && state != 'Z' && state != 'X') {
      pids.push_back(pid);
    }
  }
  return pids;
}

bool WaitUntilGone(int pid, std::chrono::milliseconds limit) {
  int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) return !ProcessAlive(pid);  // ESRCH: already gone
  pollfd p{fd, POLLIN, 0};
  int r = ::poll(&p, 1, static_cast<int>(limit.count()));
  ::close(fd);
  return r == 1 || !ProcessAlive(pid);
}

bool WaitUntilGroupGone(int pgid, std::chrono::milliseconds limit) {
  for (int pid : LiveGroupMembers(pgid)) {
    if (!WaitUntilGone(pid, limit)) return false;
  }
  return LiveGroupMembers(pgid).empty();
}

}  // namespace apollo11::executor::testing
