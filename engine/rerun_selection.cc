#include "engine/rerun_selection.h"

namespace apollo11::engine {
namespace {

// Marks `seeds` and, when `closure`, every task downstream of them.
void MarkSelected(const RunGraph& graph, std::vector<int> seeds, bool closure,
                  std::vector<uint8_t>* selected) {
  while (!seeds.empty()) {
    const int t = seeds.back();
    seeds.pop_back();
    if ((*selected)[t]) continue;
    (*selected)[t] = 1;
    if (!closure) continue;
    for (const Edge& e : graph.Dependents(t)) {
      if (!(*selected)[e.task]) seeds.push_back(e.task);
    }
  }
}

}  // namespace

Result<std::vector<uint8_t>> SelectReused(const RunGraph& graph,
                                          const std::vector<TaskState>& original,
                                          const RerunSelection& selection) {
  const int n = graph.size();
  if (static_cast<int>(original.size()) != n) {
    return Status::InvalidInput("the original run has " + std::to_string(original.size()) +
                                " task states for " + std::to_string(n) + " tasks");
  }
  std::vector<uint8_t> selected(n, 0);
  if (selection.failed) {
    std::vector<int> seeds;
    for (int i = 0; i < n; ++i) {
      if (original[i] != TaskState::kSuccess) seeds.push_back(i);
    }
    if (seeds.empty()) {
      return Status::InvalidInput(
          "nothing to rerun: every task of the run succeeded (use --from TASK to run one again)");
    }
    MarkSelected(graph, std::move(seeds), /*closure=*/true, &selected);
  } else {
    const int from = graph.Find(selection.from);
    if (from < 0) {
      return Status::NotFound("the run's pipeline " + graph.spec().name + " has no task '" +
                              selection.from + "'");
    }
    MarkSelected(graph, {from}, selection.downstream, &selected);
  }
  std::vector<uint8_t> reused(n, 0);
  for (int i = 0; i < n; ++i) {
    reused[i] = !selected[i] && original[i] == TaskState::kSuccess;
  }
  return reused;
}

}  // namespace apollo11::engine
