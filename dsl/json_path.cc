#include "dsl/json_path.h"

#include <string>

namespace apollo11::dsl {

const nlohmann::json* JsonAtPath(const nlohmann::json& value, std::string_view path) {
  const nlohmann::json* at = &value;
  size_t pos = 0;
  while (pos < path.size()) {
    size_t dot = path.find('.', pos);
    if (dot == std::string_view::npos) dot = path.size();
    const std::string key(path.substr(pos, dot - pos));
    if (at->is_object()) {
      auto it = at->find(key);
      if (it == at->end()) return nullptr;
      at = &*it;
    } else if (at->is_array() && !key.empty() && key.size() < 10 &&
               key.find_first_not_of("0123456789") == std::string::npos) {
      const size_t i = std::stoul(key);  // at most 9 digits: never out of range
      if (i >= at->size()) return nullptr;
      at = &(*at)[i];
    } else {
      return nullptr;
    }
    pos = dot + 1;
  }
  return at;
}

}  // namespace apollo11::dsl
