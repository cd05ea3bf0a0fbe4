#include "actors/actor_supervisor.h"

#include <spdlog/spdlog.h>

#include <exception>

namespace apollo11::actors {

transport::Actor::Body ActorSupervisor::Supervise(std::string name, Loop loop) {
  return [this, name = std::move(name), loop = std::move(loop)](transport::ActorPipe& pipe) {
    std::string reason;
    try {
      Status s = loop(pipe);
      if (s.ok()) return;
      reason = s.message();
    } catch (const std::exception& e) {
      reason = std::string("threw: ") + e.what();
    } catch (...) {
      reason = "threw a non-standard exception";
    }
    Record(name, reason, pipe.started());
    if (!pipe.ready_signalled())
      pipe.SignalReady(Status::Internal("actor " + name + ": " + reason));
  };
}

void ActorSupervisor::Record(const std::string& name, const std::string& reason, bool started) {
  if (started) {
    spdlog::critical("actor {} stopped: {}", name, reason);
  } else {
    // Actor::Start returns it; the starter reports it or tries again (an
    // HA node rebinding a port its old coordinator is still releasing).
    spdlog::debug("actor {} did not start: {}", name, reason);
  }
  {
    MutexLock lock(&mu_);
    if (!failure_) failure_ = "actor " + name + ": " + reason;
  }
  changed_.SignalAll();
}

std::optional<std::string> ActorSupervisor::failure() const {
  MutexLock lock(&mu_);
  return failure_;
}

std::optional<std::string> ActorSupervisor::WaitFailure(std::chrono::milliseconds timeout) const {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  MutexLock lock(&mu_);
  while (!failure_ && changed_.WaitUntil(mu_, deadline)) {
  }
  return failure_;
}

}  // namespace apollo11::actors
