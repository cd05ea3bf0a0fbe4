#include "executor/cgroup_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "common/small_file.h"

namespace apollo11::executor {

namespace {

// The sub-directories of `dir` (cgroups), without "." and "..".
std::vector<std::string> SubDirs(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == ".." || e->d_type != DT_DIR) continue;
    out.push_back(name);
  }
  ::closedir(d);
  return out;
}

void CollectProcs(const std::string& cg, std::vector<pid_t>* out) {
  std::ifstream in(cg + "/cgroup.procs");
  long pid = 0;
  while (in >> pid) out->push_back(static_cast<pid_t>(pid));
  for (const std::string& sub : SubDirs(cg)) CollectProcs(cg + "/" + sub, out);
}

bool RemoveTree(const std::string& cg) {
  // A leaf without sub-cgroups (a task's, as a rule) goes in one rmdir,
  // without listing its few dozen control files.
  if (::rmdir(cg.c_str()) == 0 || errno == ENOENT) return true;
  for (const std::string& sub : SubDirs(cg)) RemoveTree(cg + "/" + sub);
  return ::rmdir(cg.c_str()) == 0 || errno == ENOENT;
}

// False when cgroup.events says "populated 0": no process in `cg` or below
// it, and none can join but by a write to a cgroup.procs. True otherwise,
// unreadable included, so the caller looks.
bool MayHoldProcesses(const std::string& cg) {
  std::optional<std::string> events = ReadSmallFile(cg + "/cgroup.events", 4096);
  return !events.has_value() || events->find("populated 0") == std::string::npos;
}

bool WriteSmall(const std::string& path, const char* text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, text, std::strlen(text)) == static_cast<ssize_t>(std::strlen(text));
  ::close(fd);
  return ok;
}

// This process's cgroup v2 directory, or why there is none.
Result<std::string> OwnCgroupDir() {
  std::ifstream mountinfo("/proc/self/mountinfo");
  std::string line, mount_root, mount_point;
  while (std::getline(mountinfo, line)) {
    const size_t dash = line.find(" - ");
    if (dash == std::string::npos || line.compare(dash + 3, 8, "cgroup2 ") != 0) continue;
    std::istringstream fields(line.substr(0, dash));
    std::string id, parent, dev;
    fields >> id >> parent >> dev >> mount_root >> mount_point;
    break;
  }
  if (mount_point.empty()) return Status::Unsupported("no cgroup2 file system is mounted");
  std::ifstream cgroup("/proc/self/cgroup");
  std::string path;
  while (std::getline(cgroup, line)) {
    if (line.rfind("0::", 0) == 0) path = line.substr(3);
  }
  if (path.empty()) return Status::Unsupported("this process has no cgroup v2 path");
  if (mount_root != "/" && path.rfind(mount_root, 0) == 0) path = path.substr(mount_root.size());
  if (path == "/") path.clear();
  return mount_point + path;
}

}  // namespace

Result<std::unique_ptr<CgroupTree>> CgroupTree::Open(const std::string& name) {
  auto own = OwnCgroupDir();
  if (!own.ok()) return own.status();
  if (::access(own->c_str(), W_OK) != 0 || ::access((*own + "/cgroup.procs").c_str(), W_OK) != 0) {
    return Status::Unsupported("cgroup " + *own +
                               " is not writable by this worker (not delegated)");
  }
  const std::string dir = *own + "/" + name;
  if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return Status::Unsupported("cannot create cgroup " + dir + ": " + std::strerror(errno));
  }
  if (::access((dir + "/cgroup.kill").c_str(), W_OK) != 0) {
    ::rmdir(dir.c_str());
    return Status::Unsupported("cgroup " + dir + " has no cgroup.kill (kernel before 5.14?)");
  }
  return std::unique_ptr<CgroupTree>(new CgroupTree(dir));
}

CgroupTree::~CgroupTree() { ::rmdir(dir_.c_str()); }

Result<int> CgroupTree::Create(const std::string& leaf) const {
  const std::string cg = dir_ + "/" + leaf;
  // The directory itself may have been removed meanwhile (a DeathWatch
  // cleaning up after a predecessor with the same name).
  if (::mkdir(dir_.c_str(), 0755) != 0 && errno != EEXIST) {
    return Status::Io("cannot create cgroup " + dir_ + ": " + std::strerror(errno));
  }
  if (::mkdir(cg.c_str(), 0755) != 0 && errno != EEXIST) {
    return Status::Io("cannot create cgroup " + cg + ": " + std::strerror(errno));
  }
  const int fd = ::open((cg + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return Status::Io("cannot open " + cg + "/cgroup.procs: " + std::strerror(errno));
  return fd;
}

std::vector<pid_t> CgroupTree::Procs(const std::string& leaf) const {
  std::vector<pid_t> out;
  const std::string cg = dir_ + "/" + leaf;
  if (MayHoldProcesses(cg)) CollectProcs(cg, &out);
  return out;
}

void CgroupTree::Signal(const std::string& leaf, int sig) const {
  if (sig == SIGKILL && WriteSmall(dir_ + "/" + leaf + "/cgroup.kill", "1")) return;
  for (pid_t pid : Procs(leaf)) ::kill(pid, sig);
}

bool CgroupTree::Remove(const std::string& leaf) const { return RemoveTree(dir_ + "/" + leaf); }

std::vector<std::pair<std::string, size_t>> CgroupTree::KillSiblings(
    const std::string& prefix) const {
  std::vector<std::pair<std::string, size_t>> killed;
  const std::string parent = dir_.substr(0, dir_.rfind('/'));
  const std::string self = dir_.substr(dir_.rfind('/') + 1);
  std::vector<std::string> dirs;
  for (const std::string& name : SubDirs(parent)) {
    if (name.rfind(prefix, 0) != 0 || name == self) continue;
    const std::string dir = parent + "/" + name;
    dirs.push_back(dir);
    for (const std::string& leaf : SubDirs(dir)) {
      std::vector<pid_t> procs;
      CollectProcs(dir + "/" + leaf, &procs);
      if (!procs.empty()) WriteSmall(dir + "/" + leaf + "/cgroup.kill", "1");
      killed.emplace_back(leaf, procs.size());
    }
  }
  for (int i = 0; i < 100 && !dirs.empty(); ++i) {
    if (i > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::erase_if(dirs, [](const std::string& dir) { return RemoveTree(dir); });
  }
  return killed;
}

void CgroupTree::RemoveIfEmpty() const { ::rmdir(dir_.c_str()); }

}  // namespace apollo11::executor
