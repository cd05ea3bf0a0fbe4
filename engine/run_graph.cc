#include "engine/run_graph.h"

#include <algorithm>
#include <numeric>

namespace apollo11::engine {

bool EdgeMet(dsl::DependencyCondition on, TaskState upstream) {
  switch (on) {
    case dsl::DependencyCondition::kSuccess:
      return upstream == TaskState::kSuccess;
    case dsl::DependencyCondition::kFailure:
      return upstream == TaskState::kFailed;
    case dsl::DependencyCondition::kTimeout:
      return upstream == TaskState::kTimeout;
    case dsl::DependencyCondition::kDone:
      return IsFinal(upstream);
  }
  return false;
}

int RunGraph::Find(const std::string& id) const {
  const auto& tasks = spec_.tasks;
  auto it = std::lower_bound(by_id_.begin(), by_id_.end(), id,
                             [&tasks](int i, const std::string& key) { return tasks[i].id < key; });
  return it != by_id_.end() && tasks[*it].id == id ? *it : -1;
}

void RunGraph::ReleaseDeclaredDependencies() {
  for (dsl::TaskSpec& t : spec_.tasks) std::vector<dsl::Dependency>().swap(t.depends_on);
}

Result<RunGraph> RunGraph::Compile(const dsl::PipelineSpec& spec) {
  return Compile(dsl::PipelineSpec(spec));
}

Result<RunGraph> RunGraph::Compile(dsl::PipelineSpec&& spec_in) {
  RunGraph g;
  g.spec_ = std::move(spec_in);
  const dsl::PipelineSpec& spec = g.spec_;
  const int n = static_cast<int>(spec.tasks.size());
  g.by_id_.resize(n);
  std::iota(g.by_id_.begin(), g.by_id_.end(), 0);
  std::sort(g.by_id_.begin(), g.by_id_.end(),
            [&spec](int a, int b) { return spec.tasks[a].id < spec.tasks[b].id; });
  for (int k = 1; k < n; ++k) {
    const std::string& id = spec.tasks[g.by_id_[k]].id;
    if (id == spec.tasks[g.by_id_[k - 1]].id) {
      return Status::InvalidInput("duplicate task id '" + id + "'");
    }
  }

  g.up_begin_.assign(n + 1, 0);
  std::vector<int> out_degree(n, 0);
  size_t edges = 0;
  for (const auto& t : spec.tasks) edges += t.depends_on.size();
  g.up_edges_.reserve(edges);
  for (int i = 0; i < n; ++i) {
    g.up_begin_[i] = static_cast<int>(g.up_edges_.size());
    for (const dsl::Dependency& dep : spec.tasks[i].depends_on) {
      int u = g.Find(dep.task);
      if (u < 0) {
        return Status::InvalidInput("task '" + spec.tasks[i].id + "' depends on unknown task '" +
                                    dep.task + "'");
      }
      g.up_edges_.push_back({u, dep.on});
      ++out_degree[u];
    }
  }
  g.up_begin_[n] = static_cast<int>(g.up_edges_.size());

  // Reverse edges, grouped by upstream, each group in dependent index order.
  g.down_begin_.assign(n + 1, 0);
  for (int i = 0; i < n; ++i) g.down_begin_[i + 1] = g.down_begin_[i] + out_degree[i];
  g.down_edges_.resize(g.up_edges_.size());
  g.flags_.assign(n, 0);
  std::vector<int> fill(g.down_begin_.begin(), g.down_begin_.end() - 1);
  for (int v = 0; v < n; ++v) {
    for (const Edge& e : g.Upstream(v)) {
      g.down_edges_[fill[e.task]++] = {v, e.on};
      if (e.on == dsl::DependencyCondition::kFailure || e.on == dsl::DependencyCondition::kDone) {
        g.flags_[e.task] |= kFailureHandled;
      }
      if (e.on == dsl::DependencyCondition::kTimeout || e.on == dsl::DependencyCondition::kDone) {
        g.flags_[e.task] |= kTimeoutHandled;
      }
    }
  }

  // Kahn's algorithm: whatever is left unvisited lies on or behind a cycle.
  std::vector<int> indeg(n), queue;
  queue.reserve(n);
  for (int i = 0; i < n; ++i) {
    indeg[i] = g.InDegree(i);
    if (indeg[i] == 0) queue.push_back(i);
  }
  for (size_t head = 0; head < queue.size(); ++head) {
    for (const Edge& e : g.Dependents(queue[head])) {
      if (--indeg[e.task] == 0) queue.push_back(e.task);
    }
  }
  if (static_cast<int>(queue.size()) != n) {
    // Walk upstream through unvisited tasks until one repeats: that is a cycle.
    int start = 0;
    while (indeg[start] == 0) ++start;
    std::vector<int> pos(n, -1), path;
    int cur = start;
    while (pos[cur] < 0) {
      pos[cur] = static_cast<int>(path.size());
      path.push_back(cur);
      for (const Edge& e : g.Upstream(cur)) {
        if (indeg[e.task] > 0) {
          cur = e.task;
          break;
        }
      }
    }
    // path[k + 1] is upstream of path[k]; print in run order from `cur`.
    std::string text = g.id(cur);
    for (size_t k = path.size() - 1; k > static_cast<size_t>(pos[cur]); --k) {
      text += " -> " + g.id(path[k]);
    }
    text += " -> " + g.id(cur);
    return Status::InvalidInput("dependency cycle: " + text);
  }
  return g;
}

}  // namespace apollo11::engine
