#include "storage/schedule_records.h"

#include <nlohmann/json.hpp>

#include "common/json_dump.h"

namespace apollo11::storage {

using nlohmann::json;

const char* FireStateName(FireState s) {
  switch (s) {
    case FireState::kStarted:
      return "started";
    case FireState::kSkipped:
      return "skipped";
    case FireState::kQueued:
      return "queued";
  }
  return "unknown";
}

std::string EncodeSchedule(const ScheduleRecord& r) {
  return json{{"pipeline", r.pipeline},
              {"hash", r.pipeline_hash},
              {"snapshot", r.snapshot},
              {"registered_at", r.registered_at}}
      .dump();
}

Result<ScheduleRecord> DecodeSchedule(std::string_view bytes) {
  json j = ParseJsonBounded(bytes);
  if (!j.is_object()) return Status::Corrupt("schedule record is not a JSON object");
  try {
    ScheduleRecord r;
    r.pipeline = j.at("pipeline").get<std::string>();
    r.pipeline_hash = j.at("hash").get<std::string>();
    r.snapshot = j.at("snapshot").get<std::string>();
    r.registered_at = j.at("registered_at").get<Micros>();
    return r;
  } catch (const std::exception& e) {
    return Status::Corrupt(std::string("schedule record does not decode: ") + e.what());
  }
}

std::string EncodeFire(const FireRecord& r) {
  return json{{"pipeline", r.pipeline},
              {"scheduled_at", r.scheduled_at},
              {"state", static_cast<int>(r.state)},
              {"run_id", r.run_id},
              {"decided_at", r.decided_at},
              {"origin", r.origin},
              {"reason", r.reason}}
      .dump();
}

Result<FireRecord> DecodeFire(std::string_view bytes) {
  json j = ParseJsonBounded(bytes);
  if (!j.is_object()) return Status::Corrupt("fire record is not a JSON object");
  try {
    FireRecord r;
    r.pipeline = j.at("pipeline").get<std::string>();
    r.scheduled_at = j.at("scheduled_at").get<Micros>();
    int state = j.at("state").get<int>();
    if (state < 0 || state > 2) return Status::Corrupt("fire record has an unknown state");
    r.state = static_cast<FireState>(state);
    r.run_id = j.at("run_id").get<std::string>();
    r.decided_at = j.at("decided_at").get<Micros>();
    r.origin = j.at("origin").get<std::string>();
    r.reason = j.at("reason").get<std::string>();
    return r;
  } catch (const std::exception& e) {
    return Status::Corrupt(std::string("fire record does not decode: ") + e.what());
  }
}

std::string FireKey(const std::string& pipeline, Micros scheduled_at) {
  std::string key = pipeline;
  key.push_back('\0');
  uint64_t v = static_cast<uint64_t>(scheduled_at) ^ (uint64_t{1} << 63);
  for (int shift = 56; shift >= 0; shift -= 8) key.push_back(static_cast<char>(v >> shift));
  return key;
}

}  // namespace apollo11::storage
