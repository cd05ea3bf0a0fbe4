#include "storage/state_dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "common/small_file.h"

namespace apollo11::storage {
namespace {

// This process's command line with arguments joined by spaces, for the
// holder line in the lock file; capped so the file stays one short line.
std::string OwnCommandLine() {
  std::string raw = ReadSmallFile("/proc/self/cmdline", 4096).value_or("");
  while (!raw.empty() && raw.back() == '\0') raw.pop_back();
  for (char& c : raw) {
    if (c == '\0' || c == '\n') c = ' ';
  }
  if (raw.size() > 200) raw = raw.substr(0, 200) + "...";
  return raw.empty() ? "unknown command" : raw;
}

std::string ReadAll(int fd) {
  std::string out;
  char buf[512];
  off_t offset = 0;
  ssize_t n;
  while ((n = pread(fd, buf, sizeof buf, offset)) > 0 && out.size() < 4096) {
    out.append(buf, static_cast<size_t>(n));
    offset += n;
  }
  return out;
}

// True when /proc/locks (as `locks`) lists a FLOCK on the file with device
// `dev` and inode `ino`; its lines read "N: FLOCK ADVISORY WRITE PID
// MAJ:MIN:INODE START END" (MAJ and MIN in hex), and "N: -> ..." for a
// waiter, which holds nothing.
bool ListsFlock(const std::string& locks, dev_t dev, ino_t ino) {
  char want[64];
  std::snprintf(want, sizeof want, "%02x:%02x:%lu", major(dev), minor(dev),
                static_cast<unsigned long>(ino));
  size_t start = 0;
  while (start < locks.size()) {
    size_t end = locks.find('\n', start);
    if (end == std::string::npos) end = locks.size();
    const std::string line = locks.substr(start, end - start);
    start = end + 1;
    if (line.find("FLOCK") == std::string::npos || line.find("->") != std::string::npos) continue;
    const size_t at = line.find(want);
    if (at == std::string::npos) continue;
    const size_t after = at + std::strlen(want);
    if (at > 0 && line[at - 1] == ' ' && (after == line.size() || line[after] == ' ')) return true;
  }
  return false;
}

}  // namespace

Result<StateDirOwner> StateDirLock::Owner(const std::string& dir) {
  const std::string path = dir + "/LOCK";
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::NotFound("no lock file in " + dir);
    return Status::Io("cannot stat " + path + ": " + std::strerror(errno));
  }
  auto locks = ReadSmallFile("/proc/locks", 4 << 20);
  if (!locks) return Status::Unsupported("cannot read /proc/locks");
  StateDirOwner owner;
  owner.holds = ListsFlock(*locks, st.st_dev, st.st_ino);
  const std::string content = ReadSmallFile(path, 4096).value_or("");
  const size_t nl = content.find('\n');
  owner.pid = content.substr(0, nl);
  if (nl != std::string::npos) {
    owner.command = content.substr(nl + 1);
    if (!owner.command.empty() && owner.command.back() == '\n') owner.command.pop_back();
  }
  return owner;
}

Result<std::unique_ptr<StateDirLock>> StateDirLock::Acquire(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::Io("cannot create state dir " + dir + ": " + ec.message());
  const std::string path = dir + "/LOCK";
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return Status::Io("cannot open " + path + ": " + std::strerror(errno));
  int rc;
  do {
    rc = flock(fd, LOCK_EX | LOCK_NB);
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    int err = errno;
    if (err != EWOULDBLOCK) {
      close(fd);
      return Status::Io("cannot lock " + path + ": " + std::strerror(err));
    }
    // The holder writes "pid\ncommand\n" right after locking; a reader may
    // see an empty file for that instant.
    std::string content = ReadAll(fd);
    close(fd);
    std::string pid = content.substr(0, content.find('\n'));
    std::string command;
    if (size_t nl = content.find('\n'); nl != std::string::npos) {
      command = content.substr(nl + 1);
      if (!command.empty() && command.back() == '\n') command.pop_back();
    }
    if (pid.empty()) pid = "unknown";
    if (command.empty()) command = "apollo11";
    return Status::Busy("state dir " + dir + " is in use by process " + pid + " (" + command +
                        "); wait for it or use another --state-dir");
  }
  const std::string content = std::to_string(getpid()) + "\n" + OwnCommandLine() + "\n";
  if (ftruncate(fd, 0) != 0 ||
      pwrite(fd, content.data(), content.size(), 0) != static_cast<ssize_t>(content.size())) {
    int err = errno;
    close(fd);
    return Status::Io("cannot write " + path + ": " + std::strerror(err));
  }
  return std::unique_ptr<StateDirLock>(new StateDirLock(dir, fd));
}

StateDirLock::~StateDirLock() {
  // Closing the descriptor releases the flock; the file stays (removing it
  // would race with a process that just opened it).
  close(fd_);
}

}  // namespace apollo11::storage
