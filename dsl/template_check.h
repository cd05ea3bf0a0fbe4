#pragma once
// Validation of the `${...}` placeholders in a task's templated fields
// (dsl/templated_fields.h): well-formed, params that exist, outputs of tasks
// that exist and are ancestors of the task, `${item}` only under foreach.

#include <string_view>
#include <unordered_map>
#include <vector>

#include "dsl/diagnostic.h"
#include "dsl/pipeline.h"

namespace apollo11::dsl {

// Appends an error at the task's FILE:LINE:COL for each bad placeholder of
// `spec`; `index` maps task ids to their position in spec.tasks. Ancestor
// walks share a budget, so a pathological file cannot make it quadratic
// (beyond it the ancestor check is skipped, never wrongly failed).
void CheckTemplates(const PipelineSpec& spec,
                    const std::unordered_map<std::string_view, size_t>& index,
                    std::vector<Diagnostic>* out);

}  // namespace apollo11::dsl
