#pragma once
// Exclusive ownership of a state dir between processes: an flock on DIR/LOCK
// that holds the owner's pid and command line. The kernel drops the lock when
// the owner dies, even by kill -9, so a stale LOCK file never blocks anyone.

#include <memory>
#include <string>

#include "common/status.h"

namespace apollo11::storage {

class StateDirLock {
 public:
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
