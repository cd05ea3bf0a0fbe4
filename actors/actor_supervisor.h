#pragma once
// Knows when one of a process's actors stopped for any reason but a TERM.
// Each actor loop returns Ok when its parent told it to stop, an error
// otherwise; the supervisor runs the loop, catches what it throws, logs the
// reason of a running actor's death and keeps the first failure for whoever owns the actors (the
// node exits non-zero with it rather than live on as a zombie that answers nothing).

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "common/mutex.h"
#include "common/status.h"
#include "transport/actor.h"

namespace apollo11::actors {

class ActorSupervisor {
 public:
  // An actor loop: Ok when it returned on its parent's TERM, else why not.
  using Loop = std::function<Status(transport::ActorPipe& pipe)>;

  // A body for transport::Actor::Start running `loop`. A loop that returns
  // an error or throws is recorded as "actor NAME: REASON"; before it
  // signalled ready, the same reason is what Actor::Start returns and it is
  // logged only at debug level (the starter reports it or tries again);
  // after, it is logged as critical. The supervisor must outlive the actor.
  transport::Actor::Body Supervise(std::string name, Loop loop);

  // The first failure recorded, nullopt while none. Any thread.
  std::optional<std::string> failure() const;
  // Waits up to `timeout` for a failure and returns it (nullopt when none
  // came in time). Any thread.
  std::optional<std::string> WaitFailure(std::chrono::milliseconds timeout) const;

 private:
  void Record(const std::string& name, const std::string& reason, bool started);

  mutable Mutex mu_;
  mutable CondVar changed_;
  std::optional<std::string> failure_ GUARDED_BY(mu_);
};

}  // namespace apollo11::actors
