#include "common/mutex.h"

#include <utility>

namespace apollo11 {
namespace {

// The stop-token waits of std::condition_variable_any exist only with a
// predicate: this one lets the first wake-up end the wait (the first call,
// before waiting, answers false; any later call true).
struct FirstWakeUp {
  bool woken = false;
  bool operator()() { return std::exchange(woken, true); }
};

}  // namespace

// Each wait adopts the std::mutex the caller holds and hands it back held:
// the Mutex stays locked from the caller's point of view.

void CondVar::Wait(Mutex& mu) {
  std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
  cv_.wait(lock);
  lock.release();
}

bool CondVar::WaitUntil(Mutex& mu, Deadline deadline) {
  std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
  const bool in_time = cv_.wait_until(lock, deadline) == std::cv_status::no_timeout;
  lock.release();
  return in_time && std::chrono::steady_clock::now() < deadline;
}

void CondVar::Wait(Mutex& mu, std::stop_token stop) {
  std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
  cv_.wait(lock, std::move(stop), FirstWakeUp{});
  lock.release();
}

bool CondVar::WaitUntil(Mutex& mu, Deadline deadline, std::stop_token stop) {
  std::unique_lock<std::mutex> lock(mu.mu_, std::adopt_lock);
  cv_.wait_until(lock, stop, deadline, FirstWakeUp{});
  lock.release();
  return !stop.stop_requested() && std::chrono::steady_clock::now() < deadline;
}

}  // namespace apollo11
