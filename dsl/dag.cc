#include "dsl/dag.h"

#include <algorithm>
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
  const int n = static_cast<int>(spec.tasks.size());

  // Tarjan's strongly connected components, with an explicit stack.
  std::vector<int> index(n, -1), low(n, 0), component(n, -1);
  std::vector<char> on_stack(n, 0);
  std::vector<int> stack;
  struct Frame {
    int node;
    int next_edge;
  };
  std::vector<Frame> frames;
  std::vector<int> cycle_roots;  // smallest node of each component with a cycle
  int counter = 0;
  int components = 0;
  for (int root = 0; root < n; ++root) {
    if (index[root] >= 0) continue;
    index[root] = low[root] = counter++;
    stack.push_back(root);
    on_stack[root] = 1;
    frames.push_back({root, g.first_edge[root]});
    while (!frames.empty()) {
      Frame& f = frames.back();
      int u = f.node;
      if (f.next_edge < g.first_edge[u + 1]) {
        int v = g.edges[f.next_edge++].to;
        if (index[v] < 0) {
          index[v] = low[v] = counter++;
          stack.push_back(v);
          on_stack[v] = 1;
          frames.push_back({v, g.first_edge[v]});
        } else if (on_stack[v]) {
          low[u] = std::min(low[u], index[v]);
        }
        continue;
      }
      if (low[u] == index[u]) {
        int smallest = u;
        size_t size = 0;
        int w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[w] = 0;
          component[w] = components;
          smallest = std::min(smallest, w);
          ++size;
        } while (w != u);
        ++components;
        if (size > 1) cycle_roots.push_back(smallest);
      }
      frames.pop_back();
      if (!frames.empty()) {
        int parent = frames.back().node;
        low[parent] = std::min(low[parent], low[u]);
      }
    }
  }

  std::sort(cycle_roots.begin(), cycle_roots.end());
  if (cycle_roots.size() > max_cycles) cycle_roots.resize(max_cycles);

  // In each component, the shortest cycle through its first task (BFS).
  std::vector<Cycle> cycles;
  std::vector<int> parent(n, -1);
  std::vector<int> seen_in(n, -1);
  for (int s : cycle_roots) {
    std::vector<int> queue{s};
    seen_in[s] = s;
    const Graph::Edge* closing = nullptr;
    int last = -1;
    for (size_t head = 0; head < queue.size() && closing == nullptr; ++head) {
      int u = queue[head];
      for (int e = g.first_edge[u]; e < g.first_edge[u + 1]; ++e) {
        int v = g.edges[e].to;
        if (component[v] != component[s]) continue;
        if (v == s && u != s) {
          closing = &g.edges[e];
          last = u;
          break;
        }
        if (seen_in[v] != s) {
          seen_in[v] = s;
          parent[v] = u;
          queue.push_back(v);
        }
      }
    }
    if (closing == nullptr) continue;  // only a self-loop: reported by the checker
    std::vector<int> path;
    for (int v = last; v != s; v = parent[v]) path.push_back(v);
    path.push_back(s);
    std::reverse(path.begin(), path.end());
    Cycle cycle;
    for (int v : path) cycle.path.push_back(spec.tasks[v].id);
    cycle.path.push_back(spec.tasks[s].id);
    cycle.where = closing->entry->where;
    cycles.push_back(std::move(cycle));
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
