#pragma once
// After a coordinator restart, the executions the journal says are RUNNING
// wait here for their worker to claim them (in its HELLO, or by reporting a
// RESULT) until their claim deadline; the ones nobody claimed by then are
// handed back to the scheduler as lost. Part of the dispatcher's state.
//
// Single-threaded: the dispatcher actor's thread calls everything.

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "actors/internal_messages.h"
#include "common/clock.h"

namespace apollo11::actors {

class ClaimWindow {
 public:
  // Executions to wait for, each until adopt.claim_until (Steady(), as the
  // scheduler computed it in the same process).
  void Adopt(const AdoptRunning& adopt);
  // When (exec_id, attempt) is waiting for `worker_id` (the worker the
  // journal names), that worker claims it: it is removed and its expected
  // duration (ms) returned. nullopt when it is not waiting (another attempt,
  // never adopted, already claimed or released) or waits for another worker.
  std::optional<int64_t> Claim(const std::string& worker_id, const std::string& exec_id,
                               uint32_t attempt);
  // The worker the journal names for (exec_id, attempt) while it waits;
  // null when it does not wait. Valid until the window changes.
  const std::string* Owner(const std::string& exec_id, uint32_t attempt) const;
  // Stops waiting for `exec_id` (a newer attempt was queued, or it was
  // canceled): a worker claiming it later is not given it.
  void Drop(const std::string& exec_id) { waiting_.erase(exec_id); }
  // Worker `worker_id` said HELLO and did not list these executions the
  // journal says it runs (a HELLO lists every attempt the worker holds,
  // finished ones too): it does not hold them, so they are handed back now
  // in one WorkerGone appended to `gone`, instead of at their deadline.
  // `listed` is sorted.
  void ReleaseUnlisted(const std::string& worker_id, const std::vector<std::string>& listed,
                       std::vector<WorkerGone>* gone);
  // Appends to `gone` the executions whose deadline passed at `now`
  // (Steady()), one
  // WorkerGone per worker the journal named, and forgets them.
  void ReleaseDue(Micros now, std::vector<WorkerGone>* gone);
  size_t size() const { return waiting_.size(); }

 private:
  struct Waiting {
    uint32_t attempt = 0;
    std::string worker_id;  // where the journal last saw it
    int64_t expected_ms = 0;
    Micros claim_until = 0;
  };
  std::unordered_map<std::string, Waiting> waiting_;  // by exec id
  Micros next_deadline_ = 0;                          // earliest claim_until; 0 when none
};

}  // namespace apollo11::actors
