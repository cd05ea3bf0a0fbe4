#include "actors/scheduler/foreach_items.h"

#include <nlohmann/json.hpp>
#include <string_view>

#include "common/json_dump.h"
#include "dsl/json_path.h"

namespace apollo11::actors {

std::vector<std::string> ForeachItems::FromLines(const std::string& stdout_text, size_t cap) {
  std::vector<std::string> items;
  size_t pos = 0;
  while (pos < stdout_text.size() && items.size() <= cap) {
    size_t end = stdout_text.find('\n', pos);
    if (end == std::string::npos) end = stdout_text.size();
    size_t len = end - pos;
    if (len > 0 && stdout_text[pos + len - 1] == '\r') --len;
    if (len > 0) items.emplace_back(stdout_text, pos, len);
    pos = end + 1;
  }
  return items;
}

Result<std::vector<std::string>> ForeachItems::FromJson(const std::string& output_json,
                                                        const std::string& items, size_t cap) {
  if (output_json.empty()) {
    return Status::InvalidInput("it gave no output ($APOLLO11_OUTPUT) to read '" + items +
                                "' from");
  }
  const nlohmann::json doc = ParseJsonBounded(output_json);
  if (doc.is_discarded()) return Status::InvalidInput("its output is not JSON");
  // "output" is the whole output, "output.PATH" the value at PATH in it.
  const size_t dot = items.find('.');
  const nlohmann::json* at =
      dsl::JsonAtPath(doc, dot == std::string::npos ? "" : std::string_view(items).substr(dot + 1));
  if (at == nullptr) return Status::InvalidInput("its output has no '" + items + "'");
  if (!at->is_array()) {
    return Status::InvalidInput("'" + items + "' of its output is not a JSON array (found " +
                                std::string(at->type_name()) + ")");
  }
  std::vector<std::string> out;
  for (const nlohmann::json& e : *at) {
    if (out.size() > cap) break;
    out.push_back(e.is_string() ? e.get<std::string>() : e.dump());
  }
  return out;
}

}  // namespace apollo11::actors
