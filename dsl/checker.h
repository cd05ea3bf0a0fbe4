#pragma once
// Whole-pipeline checks that need every task at once: duplicate ids, unknown
// or self dependencies, foreach targets, cycles, and the warnings (long
// chains, failure-branch joins that can never be satisfied), and the size
// limits of dsl/task_limits.h.

#include <vector>

#include "dsl/diagnostic.h"
#include "dsl/pipeline.h"

namespace apollo11::dsl {

struct CheckOptions {
  int chain_warning_threshold = 50;  // warn when the longest chain has more tasks
};

// Appends what is wrong with `spec` to `out`. Linear in tasks + edges.
void CheckPipeline(const PipelineSpec& spec, const CheckOptions& options,
                   std::vector<Diagnostic>* out);

}  // namespace apollo11::dsl
