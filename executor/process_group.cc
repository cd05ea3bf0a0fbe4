#include "executor/process_group.h"

#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <sstream>
#include <string>

#include "common/small_file.h"
#include "executor/process_tree.h"

namespace apollo11::executor {

namespace {

// After SIGKILL, how long to wait for the leader to be gone (a process in
// uninterruptible sleep dies only when it wakes).
constexpr std::chrono::milliseconds kAfterKill{5000};

// A pidfd of the group's leader if it still runs as the process recorded:
// opened first and checked second, so the pidfd cannot name a later process
// that reused the pid. -1 otherwise (gone, a zombie, or someone else's pid).
int OpenLeader(const GroupToStop& g) {
  if (g.pgid <= 1) return -1;
  int fd = static_cast<int>(::syscall(SYS_pidfd_open, g.pgid, 0));
  if (fd < 0) return -1;
  std::optional<ProcStat> st = ReadProcStat(g.pgid);
  if (!st.has_value() || st->start_time != g.start_time || st->state == 'Z') {
    ::close(fd);
    return -1;
  }
  return fd;
}

// True when the group `g` lost its leader and still has members: its id
// cannot have been reused (a pgid stays taken while it has members, and a
// live process with the leader's pid but another start time means reuse).
bool LeaderlessMembers(const GroupToStop& g) {
  if (g.pgid <= 1) return false;
  std::optional<ProcStat> leader = ReadProcStat(g.pgid);
  if (leader.has_value() && leader->start_time != g.start_time) return false;
  for (const ProcEntry& p : ScanProcesses()) {
    if (p.stat.pgid == g.pgid && p.pid != g.pgid && p.stat.state != 'Z') return true;
  }
  return false;
}

}  // namespace

std::optional<ProcStat> ParseProcStat(std::string_view text) {
  const size_t close = text.rfind(')');
  if (close == std::string_view::npos) return std::nullopt;
  // After ") ": field 3 (state) is the first token, field 22 the twentieth.
  std::istringstream in{std::string(text.substr(close + 1))};
  std::string token;
  ProcStat st;
  for (int field = 3; field <= 22; ++field) {
    if (!(in >> token)) return std::nullopt;
    if (field == 3) {
      if (token.size() != 1) return std::nullopt;
      st.state = token[0];
    } else if (field == 4 || field == 5) {
      char* end = nullptr;
      const long v = std::strtol(token.c_str(), &end, 10);
      if (end == token.c_str() || *end != '\0') return std::nullopt;
      (field == 4 ? st.ppid : st.pgid) = static_cast<pid_t>(v);
    }
  }
  if (token.empty() || token.find_first_not_of("0123456789") != std::string::npos) {
    return std::nullopt;
  }
  try {
    st.start_time = std::stoull(token);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  return st;
}

std::optional<ProcStat> ReadProcStat(pid_t pid) {
  if (pid <= 0) return std::nullopt;
  std::optional<std::string> text = ReadSmallFile("/proc/" + std::to_string(pid) + "/stat", 4096);
  if (!text.has_value()) return std::nullopt;
  return ParseProcStat(*text);
}

std::vector<StopResult> StopGroups(const std::vector<GroupToStop>& groups) {
  using Clock = std::chrono::steady_clock;
  struct Pending {
    size_t index;
    int pidfd;
    Clock::time_point deadline;  // SIGKILL at; after SIGKILL, stop waiting at
    bool killed;
  };
  std::vector<StopResult> results(groups.size(), StopResult::kNotRunning);
  std::vector<Pending> pending;
  const Clock::time_point start = Clock::now();
  for (size_t i = 0; i < groups.size(); ++i) {
    int fd = OpenLeader(groups[i]);
    if (fd < 0) {
      if (LeaderlessMembers(groups[i])) {
        ::kill(-groups[i].pgid, SIGKILL);
        results[i] = StopResult::kMembersKilled;
      }
      continue;
    }
    ::kill(-groups[i].pgid, SIGTERM);
    results[i] = StopResult::kTerminated;
    pending.push_back(Pending{i, fd, start + groups[i].kill_grace, false});
  }
  while (!pending.empty()) {
    Clock::time_point next = pending.front().deadline;
    std::vector<pollfd> fds;
    for (const Pending& p : pending) {
      next = std::min(next, p.deadline);
      fds.push_back(pollfd{p.pidfd, POLLIN, 0});
    }
    const auto wait = std::chrono::ceil<std::chrono::milliseconds>(next - Clock::now());
    if (::poll(fds.data(), fds.size(), static_cast<int>(std::max<int64_t>(0, wait.count()))) < 0 &&
        errno != EINTR) {
      break;
    }
    const Clock::time_point now = Clock::now();
    std::vector<Pending> still;
    for (size_t j = 0; j < pending.size(); ++j) {
      Pending p = pending[j];
      const pid_t pgid = groups[p.index].pgid;
      if (fds[j].revents != 0) {
        // The leader exited. What it left in its group must not outlive the
        // task (as in the executor); the pgid cannot be reused while the
        // group has members.
        ::kill(-pgid, SIGKILL);
        ::close(p.pidfd);
      } else if (now < p.deadline) {
        still.push_back(p);
      } else if (!p.killed) {
        ::kill(-pgid, SIGKILL);
        results[p.index] = StopResult::kKilled;
        p.killed = true;
        p.deadline = now + kAfterKill;
        still.push_back(p);
      } else {
        ::close(p.pidfd);  // SIGKILLed and still there: nothing more to do
      }
    }
    pending = std::move(still);
  }
  for (const Pending& p : pending) ::close(p.pidfd);
  return results;
}

}  // namespace apollo11::executor
