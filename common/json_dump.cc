#include "common/json_dump.h"

namespace apollo11 {

std::string SafeJsonDump(const nlohmann::json& doc, int indent) noexcept {
  try {
    return doc.dump(indent, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
  } catch (...) {
    try {
      return std::string("{\"error\":\"cannot serialize the answer\"}");
    } catch (...) {
      return {};
    }
  }
}

}  // namespace apollo11
