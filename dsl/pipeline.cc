#include "dsl/pipeline.h"

namespace apollo11::dsl {

const char* ToString(DependencyCondition c) {
  switch (c) {
    case DependencyCondition::kSuccess:
      return "success";
    case DependencyCondition::kFailure:
      return "failure";
    case DependencyCondition::kTimeout:
      return "timeout";
    case DependencyCondition::kDone:
      return "done";
  }
  return "unknown";
}

const char* ToString(Trigger t) { return t == Trigger::kAll ? "all" : "any"; }
const char* ToString(Backoff b) { return b == Backoff::kFixed ? "fixed" : "exponential"; }

const std::string& DefaultHttpMethod::Value() {
  static const std::string kGet = "GET";
  return kGet;
}

const std::string& DefaultGroup::Value() {
  static const std::string kDefault = "default";
  return kDefault;
}

const TaskSpec* PipelineSpec::FindTask(const std::string& id) const {
  for (const TaskSpec& task : tasks) {
    if (task.id == id) return &task;
  }
  return nullptr;
}

}  // namespace apollo11::dsl
