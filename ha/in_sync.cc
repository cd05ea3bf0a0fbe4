#include "ha/in_sync.h"

#include <nlohmann/json.hpp>

#include "common/json_dump.h"

namespace apollo11::ha {

std::string InSyncKey(std::string_view election) { return std::string(election) + ".insync"; }

std::string EncodeInSync(const InSyncRecord& record) {
  return nlohmann::json{
      {"epoch", record.epoch}, {"leader", record.leader}, {"in_sync", record.in_sync}}
      .dump();
}

Result<InSyncRecord> DecodeInSync(std::string_view text) {
  auto bad = [](const std::string& what) {
    return Status::Corrupt("the in-sync record is not readable: " + what);
  };
  auto doc = ParseJsonBounded(text);
  if (!doc.is_object()) return bad("not a JSON object");
  InSyncRecord out;
  auto epoch = doc.find("epoch");
  if (epoch != doc.end()) {
    if (!epoch->is_number_unsigned()) return bad("\"epoch\" is not a number");
    out.epoch = epoch->get<uint64_t>();
  }
  auto leader = doc.find("leader");
  if (leader != doc.end()) {
    if (!leader->is_string()) return bad("\"leader\" is not a string");
    out.leader = leader->get<std::string>();
  }
  auto members = doc.find("in_sync");
  if (members == doc.end() || !members->is_array()) return bad("no \"in_sync\" list");
  for (const auto& m : *members) {
    if (!m.is_string() || m.get_ref<const std::string&>().empty()) {
      return bad("an \"in_sync\" entry is not a name");
    }
    out.in_sync.insert(m.get<std::string>());
  }
  return out;
}

}  // namespace apollo11::ha
