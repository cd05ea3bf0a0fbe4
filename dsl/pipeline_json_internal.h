#pragma once
// What pipeline_json.cc shares with snapshot_text.cc (the DOM-free snapshot
// reader): the enums' word lists and the DOM decoder of one task. Not for
// other users; the public interface is pipeline_json.h.

#include <nlohmann/json.hpp>

#include "common/shared_text.h"
#include "dsl/pipeline.h"
#include "dsl/pipeline_json.h"
#include "dsl/task_types.h"

namespace apollo11::dsl::json_internal {

#define APOLLO11_TASK_TYPE_VALUE(enumerator, name, required) TaskType::enumerator,
inline constexpr TaskType kTaskTypeValues[] = {APOLLO11_TASK_TYPES(APOLLO11_TASK_TYPE_VALUE)};
#undef APOLLO11_TASK_TYPE_VALUE
inline constexpr DependencyCondition kConditions[] = {
    DependencyCondition::kSuccess, DependencyCondition::kFailure, DependencyCondition::kTimeout,
    DependencyCondition::kDone};
inline constexpr Trigger kTriggers[] = {Trigger::kAll, Trigger::kAny};
inline constexpr Backoff kBackoffs[] = {Backoff::kFixed, Backoff::kExponential};

// One task object of a snapshot, decoded from its DOM. Throws (nlohmann's
// or std::invalid_argument / out_of_range) when it does not decode; the
// callers turn that into kCorrupt. Locations in the pipeline's own file
// share `source_file`.
TaskSpec TaskFrom(const nlohmann::json& j, const SharedText& source_file, Locations locations);

}  // namespace apollo11::dsl::json_internal
