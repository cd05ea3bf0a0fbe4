#include "executor/process_tree.h"

#include <dirent.h>

#include <cstdlib>
#include <set>

namespace apollo11::executor {

std::vector<ProcEntry> ScanProcesses() {
  std::vector<ProcEntry> out;
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return out;
  while (dirent* e = ::readdir(dir)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (end == e->d_name || *end != '\0' || pid <= 0) continue;
    std::optional<ProcStat> st = ReadProcStat(static_cast<pid_t>(pid));
    if (st.has_value()) out.push_back(ProcEntry{static_cast<pid_t>(pid), *st});
  }
  ::closedir(dir);
  return out;
}

void TrackDescendants(const std::vector<ProcEntry>& all, pid_t self, pid_t leader, pid_t pgid,
                      KnownProcs* known) {
  std::map<pid_t, const ProcEntry*> by_pid;
  std::multimap<pid_t, const ProcEntry*> children;
  for (const ProcEntry& p : all) {
    by_pid[p.pid] = &p;
    children.emplace(p.stat.ppid, &p);
  }
  // The worker and its ancestors are never a task's, whatever group they are in.
  std::set<pid_t> excluded;
  for (pid_t p = self; p > 0 && excluded.insert(p).second;) {
    auto it = by_pid.find(p);
    p = it == by_pid.end() ? 0 : it->second->stat.ppid;
  }
  KnownProcs found;
  std::vector<pid_t> frontier;
  auto add = [&](const ProcEntry& p) {
    if (p.stat.state == 'Z' || excluded.count(p.pid) > 0) return;
    if (found.emplace(p.pid, p.stat.start_time).second) frontier.push_back(p.pid);
  };
  for (const auto& [pid, start] : *known) {
    auto it = by_pid.find(pid);
    if (it != by_pid.end() && it->second->stat.start_time == start) add(*it->second);
  }
  for (const ProcEntry& p : all) {
    if ((leader != 0 && p.pid == leader) || (pgid != 0 && p.stat.pgid == pgid)) add(p);
  }
  if (leader != 0) {
    // The leader's children even when the leader is a zombie not yet reaped.
    frontier.push_back(leader);
  }
  while (!frontier.empty()) {
    const pid_t parent = frontier.back();
    frontier.pop_back();
    auto [begin, end] = children.equal_range(parent);
    for (auto it = begin; it != end; ++it) add(*it->second);
  }
  *known = std::move(found);
}

}  // namespace apollo11::executor
