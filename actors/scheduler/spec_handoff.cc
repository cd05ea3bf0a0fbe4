// SpecHandoff: one parsed pipeline waiting for its submission.

#include "actors/scheduler/spec_handoff.h"

#include <utility>

#include "common/mutex.h"

namespace apollo11::actors {
namespace {

struct Slot {
  Mutex mu;
  std::string hash GUARDED_BY(mu);
  std::optional<dsl::PipelineSpec> spec GUARDED_BY(mu);
};

Slot& TheSlot() {
  static Slot* slot = new Slot();  // never destroyed: used until exit
  return *slot;
}

}  // namespace

void SpecHandoff::Offer(std::string hash, dsl::PipelineSpec spec) {
  Slot& s = TheSlot();
  std::optional<dsl::PipelineSpec> old;  // freed outside the lock
  MutexLock lock(&s.mu);
  old = std::move(s.spec);
  s.hash = std::move(hash);
  s.spec = std::move(spec);
}

std::optional<dsl::PipelineSpec> SpecHandoff::Take(const std::string& hash) {
  Slot& s = TheSlot();
  MutexLock lock(&s.mu);
  if (!s.spec || s.hash != hash) return std::nullopt;
  std::optional<dsl::PipelineSpec> taken = std::move(s.spec);
  s.spec.reset();
  s.hash.clear();
  return taken;
}

}  // namespace apollo11::actors
