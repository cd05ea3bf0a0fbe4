#pragma once
// Exclusive ownership of a state dir between processes: an flock on DIR/LOCK
// that holds the owner's pid and command line. The kernel drops the lock when
// the owner dies, even by kill -9, so a stale LOCK file never blocks anyone.

#include <memory>
#include <string>

#include "common/status.h"

namespace apollo11::storage {

// Who holds, or last held, a state dir's lock.
struct StateDirOwner {
  std::string pid;      // as the owner recorded it in DIR/LOCK; "" when unknown
  std::string command;  // its command line, likewise
  bool holds = false;   // a process holds the lock now
};

class StateDirLock {
 public:
  // Who holds or last held `dir`'s lock, without taking it (so it never gets
  // in a writer's way): the pid and command DIR/LOCK records, and whether
  // the kernel lists a lock on that file (/proc/locks). NotFound without a
  // LOCK file; Unsupported when /proc/locks cannot be read.
  static Result<StateDirOwner> Owner(const std::string& dir);

  // Creates `dir` if needed and locks it. Busy when another process (or
  // another StateDirLock in this one) holds it, naming the holder's pid and
  // command. The lock lives as long as the returned object; any thread.
  static Result<std::unique_ptr<StateDirLock>> Acquire(const std::string& dir);
  ~StateDirLock();
  StateDirLock(const StateDirLock&) = delete;
  StateDirLock& operator=(const StateDirLock&) = delete;

  const std::string& dir() const { return dir_; }

 private:
  StateDirLock(std::string dir, int fd) : dir_(std::move(dir)), fd_(fd) {}
  std::string dir_;
  int fd_;
};

}  // namespace apollo11::storage
