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

bool IsPipelineName(std::string_view s) {
  if (s.empty() || s.front() == '.' || s.back() == '.') return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool word = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!word && !(c == '.' && s[i - 1] != '.')) return false;
  }
  return true;
}

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
