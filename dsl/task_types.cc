#include "dsl/task_types.h"

namespace apollo11::dsl {

const char* ToString(TaskType t) {
  const auto i = static_cast<size_t>(t);
  // A name's view is its whole string literal, so data() ends with the name.
  return i < std::size(kTaskTypes) ? kTaskTypes[i].name.data() : "unknown";
}

const TaskTypeInfo& InfoOf(TaskType t) { return kTaskTypes[static_cast<size_t>(t)]; }

std::optional<TaskType> ParseTaskType(std::string_view name) {
  for (const TaskTypeInfo& info : kTaskTypes) {
    if (info.name == name) return info.type;
  }
  return std::nullopt;
}

std::optional<TaskType> TaskTypeFromWire(unsigned value) {
  if (value >= std::size(kTaskTypes)) return std::nullopt;
  return kTaskTypes[value].type;
}

const std::vector<std::string>& TaskTypeNames() {
  static const auto* names = [] {
    auto* out = new std::vector<std::string>;
    for (const TaskTypeInfo& info : kTaskTypes) out->emplace_back(info.name);
    return out;
  }();
  return *names;
}

const std::string& TaskTypeNameList() {
  static const auto* list = [] {
    auto* out = new std::string;
    for (const std::string& name : TaskTypeNames()) *out += (out->empty() ? "" : ", ") + name;
    return out;
  }();
  return *list;
}

std::string_view RefusedKeyReason(TaskType t, std::string_view key) {
  struct Refused {
    TaskType type;
    std::string_view key, why;
  };
#define APOLLO11_TASK_REFUSED_ROW(enumerator, key, why) Refused{TaskType::enumerator, key, why},
  static constexpr Refused kRefused[] = {APOLLO11_TASK_REFUSED_KEYS(APOLLO11_TASK_REFUSED_ROW)};
#undef APOLLO11_TASK_REFUSED_ROW
  for (const Refused& r : kRefused) {
    if (r.type == t && r.key == key) return r.why;
  }
  return "";
}

}  // namespace apollo11::dsl
