#pragma once
// The mutexes production code uses: thin wrappers of the standard ones that
// carry Clang's capability attributes (common/thread_annotations.h), which
// libstdc++'s std::mutex lacks, so -Wthread-safety can check that what a
// GUARDED_BY member names is held. Same costs and semantics as std::mutex,
// std::shared_mutex and std::condition_variable_any; the model is LevelDB's
// port/port_stdcxx.h.

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <shared_mutex>
#include <stop_token>

#include "common/thread_annotations.h"

namespace apollo11 {

class CondVar;

// A non-recursive exclusive lock (std::mutex).
class CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  // Tells the analysis the caller holds it (where it cannot see so itself).
  void AssertHeld() ASSERT_CAPABILITY(this) {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds a Mutex for its scope; Unlock and Lock let it go and take it back
// within the scope (around a slow call that must not run under it).
class SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() RELEASE() {
    if (held_) mu_->Unlock();
  }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() RELEASE() {
    mu_->Unlock();
    held_ = false;
  }
  void Lock() ACQUIRE() {
    mu_->Lock();
    held_ = true;
  }

 private:
  Mutex* const mu_;
  bool held_ = true;
};

// A readers-writer lock (std::shared_mutex): GUARDED_BY state may be read
// with it held shared and written with it held exclusively.
class CAPABILITY("mutex") SharedMutex {
 public:
  SharedMutex() = default;
  SharedMutex(const SharedMutex&) = delete;
  SharedMutex& operator=(const SharedMutex&) = delete;

  void Lock() ACQUIRE() { mu_.lock(); }
  void Unlock() RELEASE() { mu_.unlock(); }
  void LockShared() ACQUIRE_SHARED() { mu_.lock_shared(); }
  void UnlockShared() RELEASE_SHARED() { mu_.unlock_shared(); }

 private:
  std::shared_mutex mu_;
};

// Holds a SharedMutex exclusively for its scope (Unlock lets it go early).
class SCOPED_CAPABILITY WriterMutexLock {
 public:
  explicit WriterMutexLock(SharedMutex* mu) ACQUIRE(mu) : mu_(mu) { mu_->Lock(); }
  ~WriterMutexLock() RELEASE() {
    if (held_) mu_->Unlock();
  }
  WriterMutexLock(const WriterMutexLock&) = delete;
  WriterMutexLock& operator=(const WriterMutexLock&) = delete;

  void Unlock() RELEASE() {
    mu_->Unlock();
    held_ = false;
  }

 private:
  SharedMutex* const mu_;
  bool held_ = true;
};

// Holds a SharedMutex shared for its scope.
class SCOPED_CAPABILITY ReaderMutexLock {
 public:
  explicit ReaderMutexLock(SharedMutex* mu) ACQUIRE_SHARED(mu) : mu_(mu) { mu_->LockShared(); }
  ~ReaderMutexLock() RELEASE_GENERIC() { mu_->UnlockShared(); }
  ReaderMutexLock(const ReaderMutexLock&) = delete;
  ReaderMutexLock& operator=(const ReaderMutexLock&) = delete;

 private:
  SharedMutex* const mu_;
};

// A condition variable waited on with a Mutex held (std::condition_variable_any,
// for the waits a jthread's stop request interrupts). Every wait may also
// return spuriously: callers loop on their condition, which the analysis then
// checks like any other access, e.g.
//   MutexLock lock(&mu_);
//   while (!done_) cv_.Wait(mu_);
class CondVar {
 public:
  using Deadline = std::chrono::steady_clock::time_point;

  CondVar() = default;
  CondVar(const CondVar&) = delete;
  CondVar& operator=(const CondVar&) = delete;

  // Releases `mu` until notified, takes it again before returning.
  void Wait(Mutex& mu) REQUIRES(mu);
  // As Wait, returning at `deadline` at the latest; false once it has passed.
  bool WaitUntil(Mutex& mu, Deadline deadline) REQUIRES(mu);
  // As Wait, also returning once `stop` is requested.
  void Wait(Mutex& mu, std::stop_token stop) REQUIRES(mu);
  // As WaitUntil, also returning once `stop` is requested; false once the
  // deadline has passed or stop was requested.
  bool WaitUntil(Mutex& mu, Deadline deadline, std::stop_token stop) REQUIRES(mu);

  // Wakes one waiter / every waiter. Either holding the mutex or not.
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable_any cv_;
};

}  // namespace apollo11
