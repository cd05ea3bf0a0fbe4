#include "executor/containment.h"

#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <map>
#include <thread>

#include "common/small_file.h"

namespace apollo11::executor {

namespace {

constexpr char kTokenVar[] = "APOLLO11_CONTAINMENT_TOKEN";
constexpr Micros kScanEvery = 500 * kMicrosPerMilli;
constexpr size_t kEndedGroupsKept = 4096;
// How long the death watch and the worker's cgroup directory outlive the
// last execution. A worker between two tasks (a DAG's next layer, a queue
// about to refill) keeps them, rather than stopping a guardian shell it
// starts again a moment later: that restart cost as much CPU as the task's
// own `sh -c true` on the 2-core bench VM, and the stop waited for the
// guardian to exit on the executor's thread.
constexpr Micros kIdleRelease = 2 * kMicrosPerSecond;
// Linux caps a process's environment with its argv at a quarter of the stack limit.
constexpr size_t kMaxEnviron = 8 << 20;

// The APOLLO11_CONTAINMENT_TOKEN value in the environment `pid` started with.
std::string EnvToken(pid_t pid) {
  std::optional<std::string> read =
      ReadSmallFile("/proc/" + std::to_string(pid) + "/environ", kMaxEnviron);
  if (!read.has_value()) return "";
  const std::string& env = *read;
  const std::string key = std::string(kTokenVar) + "=";
  for (size_t at = 0; at < env.size();) {
    size_t end = env.find('\0', at);
    if (end == std::string::npos) end = env.size();
    if (env.compare(at, key.size(), key) == 0)
      return env.substr(at + key.size(), end - at - key.size());
    at = end + 1;
  }
  return "";
}

// Adds to each execution's known processes the live orphans (children of
// the worker that are nobody's leader) carrying its token.
void AttributeOrphans(const std::vector<ProcEntry>& all, pid_t self,
                      const std::vector<ContainedExec*>& execs) {
  std::map<std::string, ContainedExec*> by_token;
  std::set<pid_t> claimed;
  for (ContainedExec* e : execs) {
    by_token[e->token] = e;
    if (!e->reaped) claimed.insert(e->pgid);
    for (const auto& [pid, start] : e->known) claimed.insert(pid);
  }
  for (const ProcEntry& p : all) {
    if (p.stat.ppid != self || p.stat.state == 'Z' || claimed.count(p.pid) > 0) continue;
    auto it = by_token.find(EnvToken(p.pid));
    if (it != by_token.end()) it->second->known.emplace(p.pid, p.stat.start_time);
  }
}

}  // namespace

std::string LeftoverNote(size_t killed) {
  return "killed " + std::to_string(killed) + " leftover process" + (killed == 1 ? "" : "es");
}

Containment::Containment(ContainmentMode mode, const std::string& name)
    : name_(name), self_(::getpid()) {
  std::string why = "not tried";
  if (mode != ContainmentMode::kProcessTree) {
    auto tree = CgroupTree::Open((name.empty() ? "apollo11" : name) + "-" + std::to_string(self_));
    if (tree.ok()) {
      tree_ = std::move(*tree);
      description_ = "cgroup v2 " + tree_->dir();
      return;
    }
    why = tree.status().message();
  }
  if (mode == ContainmentMode::kCgroup) {
    description_ = "none: " + why;
    return;
  }
  ::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
  description_ = "process tree (subreaper): " + why;
}

void Containment::StartWatch() {
  if (watch_ != nullptr) return;
  auto watch = DeathWatch::Start(tree_ != nullptr ? tree_->dir() : "", std::to_string(self_) + "-");
  if (watch.ok()) {
    watch_ = std::move(*watch);
  } else if (!watch_failed_) {
    watch_failed_ = true;  // tasks still run; only the cleanup after a kill -9 waits for a restart
    spdlog::warn("{}", watch.status().message());
  }
}

Containment::~Containment() {
  if (tree_ == nullptr) return;
  for (int i = 0; i < 100 && !leaves_to_remove_.empty(); ++i) {
    Tick(0, {});
    if (!leaves_to_remove_.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

std::vector<std::pair<std::string, size_t>> Containment::KillLeftovers() {
  if (tree_ == nullptr || name_.empty()) return {};
  return tree_->KillSiblings(name_ + "-");
}

Status Containment::Prepare(const std::string& leaf, ContainedExec* exec, SpawnOptions* options) {
  if (exec->token.empty())
    exec->token = std::to_string(self_) + "-" + std::to_string(next_token_++);
  exec->leaf = leaf;
  idle_released_ = false;
  StartWatch();
  options->die_with_parent = true;
  options->extra_env.push_back(std::string(kTokenVar) + "=" + exec->token);
  if (tree_ != nullptr) {
    auto fd = tree_->Create(leaf);
    if (!fd.ok()) return Status::Io("could not start: " + fd.status().message());
    options->cgroup_procs_fd = *fd;
  } else if (description_.rfind("none", 0) == 0) {
    return Status::Unsupported("could not start: no cgroup for the task (" + description_ + ")");
  }
  return Status::Ok();
}

void Containment::Started(ContainedExec* exec, SpawnOptions* options, pid_t pid) {
  Release(options);
  exec->pgid = pid;
  exec->reaped = false;
  // In cgroup mode the guardian kills every leaf, so it need not hear of each
  // group: a line it reads byte by byte, and a wake-up, per task start and end.
  const bool told = tree_ != nullptr ? watch_ != nullptr && watch_->Alive()
                                     : watch_ != nullptr && watch_->Add(pid);
  if (!told) watch_.reset();  // the next task starts another
}

void Containment::Abandon(ContainedExec* exec, SpawnOptions* options) {
  Release(options);
  if (tree_ != nullptr && !tree_->Remove(exec->leaf)) leaves_to_remove_.push_back(exec->leaf);
}

void Containment::Release(SpawnOptions* options) {
  if (options->cgroup_procs_fd >= 0) ::close(options->cgroup_procs_fd);
  options->cgroup_procs_fd = -1;
}

void Containment::Signal(ContainedExec* exec, int sig) {
  if (!exec->reaped) ::kill(-exec->pgid, sig);
  if (tree_ != nullptr) {
    tree_->Signal(exec->leaf, sig);
    return;
  }
  std::vector<ProcEntry> all = ScanProcesses();
  TrackDescendants(all, self_, exec->reaped ? 0 : exec->pgid, exec->pgid, &exec->known);
  AttributeOrphans(all, self_, {exec});
  for (const auto& [pid, start] : exec->known) ::kill(pid, sig);
}

size_t Containment::KillRest(ContainedExec* exec) {
  if (tree_ == nullptr && watch_ != nullptr && exec->pgid > 0 && !watch_->Remove(exec->pgid)) {
    watch_.reset();
  }
  size_t killed = 0;
  if (tree_ != nullptr) {
    killed = tree_->Procs(exec->leaf).size();
    if (killed > 0) tree_->Signal(exec->leaf, SIGKILL);
    if (!tree_->Remove(exec->leaf)) leaves_to_remove_.push_back(exec->leaf);
    return killed;
  }
  std::vector<ProcEntry> all = ScanProcesses();
  TrackDescendants(all, self_, 0, exec->pgid, &exec->known);
  AttributeOrphans(all, self_, {exec});
  for (const auto& [pid, start] : exec->known) {
    if (::kill(pid, SIGKILL) == 0) ++killed;
    orphans_.emplace(pid, start);  // ours to reap if it was reparented to us
  }
  exec->known.clear();
  if (ended_groups_.size() >= kEndedGroupsKept) ended_groups_.erase(ended_groups_.begin());
  ended_groups_.insert(exec->pgid);
  return killed;
}

void Containment::Tick(Micros now, const std::vector<ContainedExec*>& running) {
  for (size_t i = 0; tree_ != nullptr && i < leaves_to_remove_.size();) {
    if (tree_->Remove(leaves_to_remove_[i])) {
      leaves_to_remove_.erase(leaves_to_remove_.begin() + static_cast<long>(i));
    } else {
      ++i;
    }
  }
  ReleaseWhenIdle(now, running.empty() && leaves_to_remove_.empty());
  if (tree_ != nullptr || now < next_scan_) return;
  if (running.empty() && orphans_.empty()) return;
  next_scan_ = now + kScanEvery;
  Scan(running);
}

void Containment::ReleaseWhenIdle(Micros now, bool idle) {
  if (!idle) {
    idle_since_.reset();
    return;
  }
  if (idle_released_) return;
  // Without a guardian (a worker that has run nothing yet, or one whose
  // guardian could not start) nobody would remove the directory after a
  // kill -9: it goes at once, as CgroupTree::Create makes it again.
  if (watch_ != nullptr) {
    if (!idle_since_.has_value()) idle_since_ = now;
    if (now - *idle_since_ < kIdleRelease) return;
  }
  watch_.reset();  // started again with the next task
  if (tree_ != nullptr) tree_->RemoveIfEmpty();
  idle_released_ = true;
  idle_since_.reset();
}

void Containment::Scan(const std::vector<ContainedExec*>& running) {
  std::vector<ProcEntry> all = ScanProcesses();
  ReapOrphans(all, running);
  for (ContainedExec* e : running) {
    TrackDescendants(all, self_, e->reaped ? 0 : e->pgid, e->pgid, &e->known);
  }
  AttributeOrphans(all, self_, running);
}

void Containment::ReapOrphans(const std::vector<ProcEntry>& all,
                              const std::vector<ContainedExec*>& running) {
  std::set<pid_t> leaders, groups(ended_groups_.begin(), ended_groups_.end());
  KnownProcs ours = orphans_;
  for (ContainedExec* e : running) {
    if (!e->reaped) leaders.insert(e->pgid);
    groups.insert(e->pgid);
    ours.insert(e->known.begin(), e->known.end());
  }
  KnownProcs still;
  for (const ProcEntry& p : all) {
    auto it = ours.find(p.pid);
    const bool known = it != ours.end() && it->second == p.stat.start_time;
    if (p.stat.ppid != self_ || leaders.count(p.pid) > 0) {
      if (known && orphans_.count(p.pid) > 0) still.emplace(p.pid, p.stat.start_time);
      continue;
    }
    if (p.stat.state == 'Z' && (known || groups.count(p.stat.pgid) > 0)) {
      ::waitpid(p.pid, nullptr, WNOHANG);
    } else if (known && orphans_.count(p.pid) > 0) {
      still.emplace(p.pid, p.stat.start_time);
    }
  }
  orphans_ = std::move(still);
}

}  // namespace apollo11::executor
