#pragma once
// RunGraph: a pipeline compiled once for running. Immutable after Compile and
// shared (std::shared_ptr<const RunGraph>) by every run of the same snapshot,
// so any thread may read it. Edges are stored flat (CSR) for cache-friendly
// per-event work.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "dsl/pipeline.h"
#include "engine/task_state.h"

namespace apollo11::engine {

// One dependency edge as seen from one end: `task` is the other end (the
// upstream in Upstream(), the dependent in Dependents()).
struct Edge {
  int task = 0;
  dsl::DependencyCondition on = dsl::DependencyCondition::kSuccess;
};

class RunGraph {
 public:
  // Compiles `spec` (copied into the graph). Refuses duplicate ids, unknown
  // dependencies and cycles (the DSL validator reports these first, with
  // locations; this is the engine's own guard).
  static Result<RunGraph> Compile(const dsl::PipelineSpec& spec);
  // The same, taking over `spec` instead of copying it (a 100k-task spec is
  // about 100 MB: do not keep two).
  static Result<RunGraph> Compile(dsl::PipelineSpec&& spec);

  // The snapshot this graph was compiled from.
  const dsl::PipelineSpec& spec() const { return spec_; }
  int size() const { return static_cast<int>(spec_.tasks.size()); }
  const dsl::TaskSpec& task(int i) const { return spec_.tasks[i]; }
  const std::string& id(int i) const { return spec_.tasks[i].id; }
  // The index of task `id`, or -1.
  int Find(const std::string& id) const;

  // Edges to the tasks `i` depends on, in declaration order.
  std::span<const Edge> Upstream(int i) const {
    return {up_edges_.data() + up_begin_[i], up_edges_.data() + up_begin_[i + 1]};
  }
  // Edges to the tasks that depend on `i` (reverse edges).
  std::span<const Edge> Dependents(int i) const {
    return {down_edges_.data() + down_begin_[i], down_edges_.data() + down_begin_[i + 1]};
  }
  // Number of dependency edges of `i` (a task listed twice counts twice).
  int InDegree(int i) const { return up_begin_[i + 1] - up_begin_[i]; }
  // True when some dependent waits on `i` with on: failure or done, so a
  // FAILED end of `i` is a branch taken, not a run failure.
  bool FailureHandled(int i) const { return flags_[i] & kFailureHandled; }
  // True when some dependent waits on `i` with on: timeout or done.
  bool TimeoutHandled(int i) const { return flags_[i] & kTimeoutHandled; }
  // Total number of dependency edges.
  int EdgeCount() const { return static_cast<int>(up_edges_.size()); }

  // Frees each task's declared dependency list: afterwards task(i).depends_on
  // is empty and Upstream(i) is the one view of them (the same order, a task
  // listed twice still twice). For a holder of many tasks that never shows
  // the spec again as written: the scheduler (8.6 MB at 100k tasks).
  void ReleaseDeclaredDependencies();

 private:
  static constexpr uint8_t kFailureHandled = 1;
  static constexpr uint8_t kTimeoutHandled = 2;

  RunGraph() = default;
  // Compile's steps, in its order, each on spec_: sorts the task indices by
  // id (by_id_), refusing a duplicate; links each task to its upstreams,
  // refusing an unknown one, counting each task's dependents into
  // `*out_degree`; builds the reverse edges and the handled flags; refuses
  // a cycle, named by CyclePath from the in-degrees Kahn's walk left
  // (`unvisited`: nonzero off the walk).
  Status IndexIds();
  Status LinkUpstream(std::vector<int>* out_degree);
  void LinkDownstream(const std::vector<int>& out_degree);
  Status CheckAcyclic() const;
  std::string CyclePath(const std::vector<int>& unvisited) const;

  dsl::PipelineSpec spec_;
  // Task indices in id order, for Find: 4 bytes a task, where a hash map
  // of the ids held a copy of each (5.6 MB at 100k tasks).
  std::vector<int> by_id_;
  std::vector<int> up_begin_, down_begin_;  // size() + 1 offsets each
  std::vector<Edge> up_edges_, down_edges_;
  std::vector<uint8_t> flags_;
};

// True when dependency condition `on` is met by an upstream that ended in
// final state `upstream`: success by SUCCESS, failure by FAILED, timeout by
// TIMEOUT, done by any final state. The one place this rule is written.
bool EdgeMet(dsl::DependencyCondition on, TaskState upstream);

}  // namespace apollo11::engine
