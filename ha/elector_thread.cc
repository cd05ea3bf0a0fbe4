#include "ha/elector_thread.h"

#include <pthread.h>

namespace apollo11::ha {

ElectorThread::ElectorThread(HaElector* elector, const Clock* clock)
    : elector_(elector), clock_(clock) {
  thread_ = std::jthread([this](std::stop_token stop) { Loop(stop); });
  pthread_setname_np(thread_.native_handle(), "a11-elector");
}

void ElectorThread::Resign() {
  elector_->RequestResign();
  MutexLock lock(&mu_);
  poked_ = true;
  wake_.SignalAll();
}

void ElectorThread::Stop() {
  if (!thread_.joinable()) return;
  thread_.request_stop();
  thread_.join();
  elector_->Shutdown();
}

void ElectorThread::Loop(std::stop_token stop) {
  while (!stop.stop_requested()) {
    const Micros next = elector_->Step();
    const Micros wait = std::max<Micros>(next - clock_->Steady(), 0);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(wait);
    MutexLock lock(&mu_);
    while (!poked_ && wake_.WaitUntil(mu_, deadline, stop)) {
    }
    poked_ = false;
  }
}

}  // namespace apollo11::ha
