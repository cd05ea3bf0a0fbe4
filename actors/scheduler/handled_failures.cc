#include "actors/scheduler/handled_failures.h"

namespace apollo11::actors {

std::string HandledFailuresNote(const engine::DagRun& dag) {
  constexpr int kNamed = 5;
  std::string ids;
  int failed = 0;
  for (int i = 0; i < dag.slots(); ++i) {
    const TaskState s = dag.state(i);
    if (s != TaskState::kFailed && s != TaskState::kTimeout) continue;
    if (++failed <= kNamed) ids += (failed == 1 ? "" : ", ") + dag.Id(i);
  }
  if (failed == 0) return "";
  if (failed > kNamed) ids += ", ...";
  return "; " + std::to_string(failed) +
         (failed == 1 ? " failure handled by an on: branch ("
                      : " failures handled by on: branches (") +
         ids + ")";
}

}  // namespace apollo11::actors
