#include "common/mutex.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

namespace apollo11 {
namespace {

using std::chrono::steady_clock;

TEST_CASE("a condition variable wakes the waiter that was signalled", "[common][mutex]") {
  Mutex mu;
  CondVar cv;
  bool ready = false;
  std::thread setter([&] {
    MutexLock lock(&mu);
    ready = true;
    cv.SignalAll();
  });
  {
    MutexLock lock(&mu);
    while (!ready) cv.Wait(mu);
    CHECK(ready);
  }
  setter.join();
}

TEST_CASE("a wait with a deadline ends there and says so", "[common][mutex]") {
  Mutex mu;
  CondVar cv;
  MutexLock lock(&mu);
  const auto deadline = steady_clock::now() + std::chrono::milliseconds(5);
  while (cv.WaitUntil(mu, deadline)) {
  }
  CHECK(steady_clock::now() >= deadline);
  // The mutex is held again: the scoped lock releases it once.
}

TEST_CASE("a stop request ends a wait that no one signals", "[common][mutex]") {
  Mutex mu;
  CondVar cv;
  bool waiting = false;
  CondVar started;
  std::jthread waiter([&](std::stop_token stop) {
    MutexLock lock(&mu);
    waiting = true;
    started.SignalAll();
    while (!stop.stop_requested()) cv.Wait(mu, stop);
  });
  {
    MutexLock lock(&mu);
    while (!waiting) started.Wait(mu);
  }
  waiter.request_stop();
  waiter.join();  // returns: the stop request woke the wait

  bool woken_in_time = true;
  std::jthread timed([&](std::stop_token stop) {
    MutexLock lock(&mu);
    const auto far = steady_clock::now() + std::chrono::hours(1);
    do {
      woken_in_time = cv.WaitUntil(mu, far, stop);
    } while (!stop.stop_requested());
  });
  timed.request_stop();
  timed.join();
  CHECK_FALSE(woken_in_time);
}

TEST_CASE("a scoped lock lets go and takes the mutex back within its scope", "[common][mutex]") {
  Mutex mu;
  int value = 0;
  MutexLock lock(&mu);
  lock.Unlock();
  std::thread other([&] {
    MutexLock inner(&mu);
    value = 1;
  });
  other.join();
  lock.Lock();
  CHECK(value == 1);
}

TEST_CASE("readers share a shared mutex, a writer holds it alone", "[common][mutex]") {
  SharedMutex mu;
  int value = 0;
  {
    ReaderMutexLock reader(&mu);
    int seen = -1;
    std::thread other([&] {
      ReaderMutexLock second(&mu);  // a second reader does not wait for the first
      seen = value;
    });
    other.join();
    CHECK(seen == 0);
  }
  {
    WriterMutexLock writer(&mu);
    value = 1;
    writer.Unlock();
  }
  ReaderMutexLock reader(&mu);
  CHECK(value == 1);
}

}  // namespace
}  // namespace apollo11
