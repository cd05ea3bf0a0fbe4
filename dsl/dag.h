#pragma once
// Graph analysis of a pipeline's dependencies: summary figures and cycles.
// Everything here is linear in tasks + dependency entries, so 100k-task
// pipelines are analysed in milliseconds. Dependencies naming unknown tasks
// are ignored (the checker reports them).

#include <cstddef>
#include <string>
#include <vector>

#include "dsl/pipeline.h"

namespace apollo11::dsl {

struct DagSummary {
  size_t tasks = 0;
  size_t edges = 0;         // dependency entries that name a known task
  int depth = 0;            // tasks on the longest chain (tasks in cycles excluded)
  std::string chain_start;  // first and last task of that chain ("" if no tasks)
  std::string chain_end;
};

// Counts tasks and edges and finds the longest dependency chain.
DagSummary Summarize(const PipelineSpec& spec);

// One dependency cycle: `path` is "alpha, beta, gamma, alpha" (first task
// repeated at the end); `where` is the dependency entry that closes it.
struct Cycle {
  std::vector<std::string> path;
  SourceLocation where;
};

// Finds up to `max_cycles` cycles, at most one per strongly connected
// component, in file order of their first task. Iterative: no recursion.
std::vector<Cycle> FindCycles(const PipelineSpec& spec, size_t max_cycles = 16);

// "alpha -> beta -> gamma -> alpha".
std::string FormatCyclePath(const Cycle& cycle);

}  // namespace apollo11::dsl
