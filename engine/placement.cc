#include "engine/placement.h"

#include <algorithm>

namespace apollo11::engine {

bool HasLabels(const std::vector<std::string>& have, const std::vector<std::string>& need) {
  for (const std::string& label : need) {
    if (!std::binary_search(have.begin(), have.end(), label)) return false;
  }
  return true;
}

int PickWorker(const std::vector<WorkerView>& workers, const std::string& group,
               const std::vector<std::string>& labels) {
  int best = -1;
  for (int i = 0; i < static_cast<int>(workers.size()); ++i) {
    const WorkerView& w = workers[i];
    if (w.credits == 0 || w.group != group) continue;
    if (!labels.empty() && (w.labels == nullptr || !HasLabels(*w.labels, labels))) continue;
    if (best < 0) {
      best = i;
      continue;
    }
    const WorkerView& b = workers[best];
    // Compare busy/slots without division: busy_w * slots_b < busy_b * slots_w.
    // A worker with 0 slots but credit counts as 1 slot.
    const __int128 lhs = static_cast<__int128>(w.expected_busy) * std::max<uint32_t>(b.slots, 1);
    const __int128 rhs = static_cast<__int128>(b.expected_busy) * std::max<uint32_t>(w.slots, 1);
    if (lhs < rhs || (lhs == rhs && w.running < b.running)) best = i;
  }
  return best;
}

}  // namespace apollo11::engine
