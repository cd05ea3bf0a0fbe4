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
  APOLLO11_RETURN_IF_ERROR(g.IndexIds());
  std::vector<int> out_degree;
  APOLLO11_RETURN_IF_ERROR(g.LinkUpstream(&out_degree));
  g.LinkDownstream(out_degree);
  APOLLO11_RETURN_IF_ERROR(g.CheckAcyclic());
  return g;
}

Status RunGraph::IndexIds() {
  const dsl::PipelineSpec& spec = spec_;
  const int n = static_cast<int>(spec.tasks.size());
  by_id_.resize(n);
  std::iota(by_id_.begin(), by_id_.end(), 0);
  std::sort(by_id_.begin(), by_id_.end(),
            [&spec](int a, int b) { return spec.tasks[a].id < spec.tasks[b].id; });
  for (int k = 1; k < n; ++k) {
    const std::string& id = spec.tasks[by_id_[k]].id;
    if (id == spec.tasks[by_id_[k - 1]].id) {
      return Status::InvalidInput("duplicate task id '" + id + "'");
    }
  }
  return Status::Ok();
}

Status RunGraph::LinkUpstream(std::vector<int>* out_degree) {
  const dsl::PipelineSpec& spec = spec_;
  const int n = static_cast<int>(spec.tasks.size());
  up_begin_.assign(n + 1, 0);
  out_degree->assign(n, 0);
  size_t edges = 0;
  for (const auto& t : spec.tasks) edges += t.depends_on.size();
  up_edges_.reserve(edges);
  for (int i = 0; i < n; ++i) {
    up_begin_[i] = static_cast<int>(up_edges_.size());
    for (const dsl::Dependency& dep : spec.tasks[i].depends_on) {
      int u = Find(dep.task);
      if (u < 0) {
        return Status::InvalidInput("task '" + spec.tasks[i].id + "' depends on unknown task '" +
                                    dep.task + "'");
      }
      up_edges_.push_back({u, dep.on});
      ++(*out_degree)[u];
    }
  }
  up_begin_[n] = static_cast<int>(up_edges_.size());
  return Status::Ok();
}

void RunGraph::LinkDownstream(const std::vector<int>& out_degree) {
  // Reverse edges, grouped by upstream, each group in dependent index order.
  const int n = size();
  down_begin_.assign(n + 1, 0);
  for (int i = 0; i < n; ++i) down_begin_[i + 1] = down_begin_[i] + out_degree[i];
  down_edges_.resize(up_edges_.size());
  flags_.assign(n, 0);
  std::vector<int> fill(down_begin_.begin(), down_begin_.end() - 1);
  for (int v = 0; v < n; ++v) {
    for (const Edge& e : Upstream(v)) {
      down_edges_[fill[e.task]++] = {v, e.on};
      if (e.on == dsl::DependencyCondition::kFailure || e.on == dsl::DependencyCondition::kDone) {
        flags_[e.task] |= kFailureHandled;
      }
      if (e.on == dsl::DependencyCondition::kTimeout || e.on == dsl::DependencyCondition::kDone) {
        flags_[e.task] |= kTimeoutHandled;
      }
    }
  }
}

Status RunGraph::CheckAcyclic() const {
  // Kahn's algorithm: whatever is left unvisited lies on or behind a cycle.
  const int n = size();
  std::vector<int> indeg(n), queue;
  queue.reserve(n);
  for (int i = 0; i < n; ++i) {
    indeg[i] = InDegree(i);
    if (indeg[i] == 0) queue.push_back(i);
  }
  for (size_t head = 0; head < queue.size(); ++head) {
    for (const Edge& e : Dependents(queue[head])) {
      if (--indeg[e.task] == 0) queue.push_back(e.task);
    }
  }
  if (static_cast<int>(queue.size()) == n) return Status::Ok();
  return Status::InvalidInput("dependency cycle: " + CyclePath(indeg));
}

std::string RunGraph::CyclePath(const std::vector<int>& unvisited) const {
  // Walk upstream through unvisited tasks until one repeats: that is a cycle.
  const int n = size();
  int start = 0;
  while (unvisited[start] == 0) ++start;
  std::vector<int> pos(n, -1), path;
  int cur = start;
  while (pos[cur] < 0) {
    pos[cur] = static_cast<int>(path.size());
    path.push_back(cur);
    for (const Edge& e : Upstream(cur)) {
      if (unvisited[e.task] > 0) {
        cur = e.task;
        break;
      }
    }
  }
  // path[k + 1] is upstream of path[k]; print in run order from `cur`.
  std::string text = id(cur);
  for (size_t k = path.size() - 1; k > static_cast<size_t>(pos[cur]); --k) {
    text += " -> " + id(path[k]);
  }
  text += " -> " + id(cur);
  return text;
}

}  // namespace apollo11::engine
