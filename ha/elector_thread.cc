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
  std::lock_guard lock(mu_);
  poked_ = true;
  wake_.notify_all();
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
    std::unique_lock lock(mu_);
    wake_.wait_for(lock, stop, std::chrono::microseconds(wait), [this] { return poked_; });
    poked_ = false;
  }
}

}  // namespace apollo11::ha
