#include "storage/records.h"

#include <string_view>

namespace apollo11::storage {

std::string WorkerOfAttempt(const std::vector<TransitionRecord>& history, uint32_t attempt) {
  static constexpr std::string_view kPrefix = "dispatched to worker ";
  std::string worker;
  for (const TransitionRecord& t : history) {
    if (t.attempt != attempt || t.to != TaskState::kRunning) continue;
    if (!t.worker_id.empty()) {
      worker = t.worker_id;
    } else if (t.reason.rfind(kPrefix, 0) == 0) {
      worker = t.reason.substr(kPrefix.size());
    }
  }
  return worker;
}

}  // namespace apollo11::storage
