#include "dsl/task_fields.h"

namespace apollo11::dsl {

const std::vector<std::string>& TaskKeys() {
  static const auto* keys = [] {
    auto* out = new std::vector<std::string>;
    for (const TaskFieldInfo& f : kTaskFields) out->emplace_back(f.key);
    return out;
  }();
  return *keys;
}

const TaskFieldInfo* FindTaskField(std::string_view key) {
  for (const TaskFieldInfo& f : kTaskFields) {
    if (f.key == key) return &f;
  }
  return nullptr;
}

}  // namespace apollo11::dsl
