#pragma once
// The size limits of common/wire_limits.h as validation rules: what a task
// and a run's parameters may hold so that every DISPATCH fits the worker
// link by construction. Each refusal names the limit it breaks.

#include <map>
#include <string>
#include <vector>

#include "common/status.h"
#include "dsl/diagnostic.h"
#include "dsl/pipeline.h"

namespace apollo11::dsl {

// Appends an error to `out` for each task over a limit (dependencies, env
// and header entries, arguments, one field's bytes, all its fields' bytes)
// and for the pipeline's parameters. Linear in the size of `spec`.
void CheckTaskLimits(const PipelineSpec& spec, std::vector<Diagnostic>* out);

// Ok when a run's parameters (the declared defaults with a trigger's values)
// are within the limits; InvalidInput naming the limit otherwise. Every
// submission path checks this, since a trigger can override the defaults.
Status CheckParamLimits(const std::map<std::string, std::string>& params);

}  // namespace apollo11::dsl
