#pragma once
// Placement: which worker gets a READY execution. Pure and allocation-free;
// the dispatcher owns the WorkerView list and keeps it current.

#include <cstdint>
#include <string>
#include <vector>

#include "common/clock.h"

namespace apollo11::engine {

// What placement needs to know about one connected worker.
struct WorkerView {
  std::string id;
  std::string group;
  uint32_t slots = 0;
  uint32_t credits = 0;  // executions it will still accept
  uint32_t running = 0;
  Micros expected_busy = 0;  // sum of estimated remaining durations of its executions
  // Its labels, sorted (owned by the caller, who keeps them alive); null = none.
  const std::vector<std::string>* labels = nullptr;
};

// True when `have` (sorted) contains every label of `need` (any order).
bool HasLabels(const std::vector<std::string>& have, const std::vector<std::string>& need);

// The index of the worker in `group` with credit and every label in `labels`
// whose expected busy time per slot is least; ties go to fewer running
// executions, then the lower index. -1 when no such worker has credit.
int PickWorker(const std::vector<WorkerView>& workers, const std::string& group,
               const std::vector<std::string>& labels = {});

// Default P50 duration until a task has history.
inline constexpr Micros kDefaultP50 = kMicrosPerSecond;

}  // namespace apollo11::engine
