#pragma once
// Runs an HaElector on its own named thread: Step, then wait until the step
// asked to be called again, a resign request or Stop. Started by the node;
// joined by Stop (or the destructor), which resigns and revokes the lease.

#include <thread>

#include "common/mutex.h"
#include "ha/ha_elector.h"

namespace apollo11::ha {

class ElectorThread {
 public:
  // `elector` and `clock` must outlive this object. Starts the thread.
  ElectorThread(HaElector* elector, const Clock* clock);
  ~ElectorThread() { Stop(); }
  ElectorThread(const ElectorThread&) = delete;
  ElectorThread& operator=(const ElectorThread&) = delete;

  // Asks the leader to hand over now. Any thread.
  void Resign();
  // Stops stepping, resigns if leading, revokes the lease and joins (after at
  // most one etcd call's timeout). Idempotent; the owner's thread.
  void Stop();

 private:
  void Loop(std::stop_token stop);

  HaElector* elector_;
  const Clock* clock_;
  Mutex mu_;
  CondVar wake_;
  bool poked_ GUARDED_BY(mu_) = false;
  std::jthread thread_;
};

}  // namespace apollo11::ha
