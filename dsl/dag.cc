#include "dsl/dag.h"

#include <algorithm>
#include <optional>
#include <unordered_map>

namespace apollo11::dsl {
namespace {

// The dependency graph in compressed form, edges pointing downstream
// (upstream -> dependent). A task id maps to its first task.
struct Graph {
  struct Edge {
    int to;
    const Dependency* entry;  // the depends_on entry of `to` that made this edge
  };
  std::vector<int> first_edge;  // edges of node u: [first_edge[u], first_edge[u+1])
  std::vector<Edge> edges;
  std::vector<int> in_degree;
};

Graph BuildGraph(const PipelineSpec& spec) {
  const int n = static_cast<int>(spec.tasks.size());
  std::unordered_map<std::string_view, int> index;
  index.reserve(spec.tasks.size());
  for (int i = 0; i < n; ++i) index.emplace(spec.tasks[i].id, i);

  std::vector<std::pair<int, Graph::Edge>> pairs;
  for (int v = 0; v < n; ++v) {
    for (const Dependency& d : spec.tasks[v].depends_on) {
      auto it = index.find(d.task);
      if (it != index.end()) pairs.push_back({it->second, Graph::Edge{v, &d}});
    }
  }
  Graph g;
  g.first_edge.assign(n + 1, 0);
  g.in_degree.assign(n, 0);
  for (const auto& [from, edge] : pairs) {
    ++g.first_edge[from + 1];
    ++g.in_degree[edge.to];
  }
  for (int u = 0; u < n; ++u) g.first_edge[u + 1] += g.first_edge[u];
  g.edges.resize(pairs.size(), Graph::Edge{0, nullptr});
  std::vector<int> fill(g.first_edge.begin(), g.first_edge.end() - 1);
  for (const auto& [from, edge] : pairs) g.edges[fill[from]++] = edge;
  return g;
}

// The strongly connected components of a graph: each node's component, and
// the smallest node of each component that holds a cycle (more than one
// node).
struct Components {
  std::vector<int> of;
  std::vector<int> cycle_roots;
};

// Tarjan's strongly connected components, with an explicit stack rather
// than recursion (dag.h: FindCycles is iterative).
class SccFinder {
 public:
  explicit SccFinder(const Graph& g)
      : g_(g),
        n_(static_cast<int>(g.in_degree.size())),
        index_(n_, -1),
        low_(n_, 0),
        on_stack_(n_, 0) {
    found_.of.assign(n_, -1);
  }

  Components Run() {
    for (int root = 0; root < n_; ++root) {
      if (index_[root] < 0) Visit(root);
    }
    return std::move(found_);
  }

 private:
  struct Frame {
    int node;
    int next_edge;
  };

  void Enter(int v) {
    index_[v] = low_[v] = counter_++;
    stack_.push_back(v);
    on_stack_[v] = 1;
    frames_.push_back({v, g_.first_edge[v]});
  }

  // Every node reachable from `root` that no earlier root reached.
  void Visit(int root) {
    Enter(root);
    while (!frames_.empty()) {
      Frame& f = frames_.back();
      int u = f.node;
      if (f.next_edge < g_.first_edge[u + 1]) {
        int v = g_.edges[f.next_edge++].to;
        if (index_[v] < 0) {
          Enter(v);
        } else if (on_stack_[v]) {
          low_[u] = std::min(low_[u], index_[v]);
        }
        continue;
      }
      if (low_[u] == index_[u]) PopComponent(u);
      frames_.pop_back();
      if (!frames_.empty()) {
        int parent = frames_.back().node;
        low_[parent] = std::min(low_[parent], low_[u]);
      }
    }
  }

  // Takes the component whose first visited node is `u` off the stack.
  void PopComponent(int u) {
    int smallest = u;
    size_t size = 0;
    int w;
    do {
      w = stack_.back();
      stack_.pop_back();
      on_stack_[w] = 0;
      found_.of[w] = components_;
      smallest = std::min(smallest, w);
      ++size;
    } while (w != u);
    ++components_;
    if (size > 1) found_.cycle_roots.push_back(smallest);
  }

  const Graph& g_;
  const int n_;
  std::vector<int> index_, low_;
  std::vector<char> on_stack_;
  std::vector<int> stack_;
  std::vector<Frame> frames_;
  int counter_ = 0;
  int components_ = 0;
  Components found_;
};

// The shortest cycle through a task inside its component, by breadth-first
// search. One search serves every component: its scratch arrays are keyed
// by the start, so the whole is linear in the graph.
class CycleSearch {
 public:
  CycleSearch(const PipelineSpec& spec, const Graph& g, const std::vector<int>& component)
      : spec_(spec),
        g_(g),
        component_(component),
        parent_(spec.tasks.size(), -1),
        seen_in_(spec.tasks.size(), -1) {}

  // nullopt when `s` is on no cycle but a self-loop.
  std::optional<Cycle> Through(int s) {
    std::vector<int> queue{s};
    seen_in_[s] = s;
    for (size_t head = 0; head < queue.size(); ++head) {
      int u = queue[head];
      for (int e = g_.first_edge[u]; e < g_.first_edge[u + 1]; ++e) {
        int v = g_.edges[e].to;
        if (component_[v] != component_[s]) continue;
        if (v == s && u != s) return Path(s, u, g_.edges[e]);
        if (seen_in_[v] != s) {
          seen_in_[v] = s;
          parent_[v] = u;
          queue.push_back(v);
        }
      }
    }
    return std::nullopt;
  }

 private:
  // s -> ... -> last -> s, `closing` being the edge last -> s.
  Cycle Path(int s, int last, const Graph::Edge& closing) const {
    std::vector<int> path;
    for (int v = last; v != s; v = parent_[v]) path.push_back(v);
    path.push_back(s);
    std::reverse(path.begin(), path.end());
    Cycle cycle;
    for (int v : path) cycle.path.push_back(spec_.tasks[v].id);
    cycle.path.push_back(spec_.tasks[s].id);
    cycle.where = closing.entry->where;
    return cycle;
  }

  const PipelineSpec& spec_;
  const Graph& g_;
  const std::vector<int>& component_;
  std::vector<int> parent_;
  std::vector<int> seen_in_;
};

}  // namespace

DagSummary Summarize(const PipelineSpec& spec) {
  DagSummary summary;
  summary.tasks = spec.tasks.size();
  Graph g = BuildGraph(spec);
  summary.edges = g.edges.size();
  const int n = static_cast<int>(spec.tasks.size());

  // Kahn's order; depth[v] = tasks on the longest chain ending at v.
  std::vector<int> depth(n, 1);
  std::vector<int> chain_start(n);
  std::vector<int> ready;
  std::vector<int> remaining = g.in_degree;
  for (int v = 0; v < n; ++v) {
    chain_start[v] = v;
    if (remaining[v] == 0) ready.push_back(v);
  }
  int best = -1;
  while (!ready.empty()) {
    int u = ready.back();
    ready.pop_back();
    if (best < 0 || depth[u] > depth[best] || (depth[u] == depth[best] && u < best)) best = u;
    for (int e = g.first_edge[u]; e < g.first_edge[u + 1]; ++e) {
      int v = g.edges[e].to;
      if (depth[u] + 1 > depth[v]) {
        depth[v] = depth[u] + 1;
        chain_start[v] = chain_start[u];
      }
      if (--remaining[v] == 0) ready.push_back(v);
    }
  }
  if (best >= 0) {
    summary.depth = depth[best];
    summary.chain_start = spec.tasks[chain_start[best]].id;
    summary.chain_end = spec.tasks[best].id;
  }
  return summary;
}

std::vector<Cycle> FindCycles(const PipelineSpec& spec, size_t max_cycles) {
  Graph g = BuildGraph(spec);
  Components components = SccFinder(g).Run();
  std::vector<int>& roots = components.cycle_roots;
  std::sort(roots.begin(), roots.end());
  if (roots.size() > max_cycles) roots.resize(max_cycles);

  // In each component, the shortest cycle through its first task.
  std::vector<Cycle> cycles;
  CycleSearch search(spec, g, components.of);
  for (int s : roots) {
    // None: only a self-loop, reported by the checker.
    if (std::optional<Cycle> cycle = search.Through(s)) cycles.push_back(std::move(*cycle));
  }
  return cycles;
}

std::string FormatCyclePath(const Cycle& cycle) {
  std::string out;
  for (size_t i = 0; i < cycle.path.size(); ++i) {
    if (i > 0) out += " -> ";
    out += cycle.path[i];
  }
  return out;
}

}  // namespace apollo11::dsl
