#pragma once
// What the journal keeps about cron schedules: the registered schedule of a
// pipeline (with the snapshot it fires) and one record per fire, keyed by
// (pipeline, scheduled time) so that a fire is decided once across restarts.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/status.h"

namespace apollo11::storage {

// A pipeline's registered schedule. The snapshot is kept here (not only in
// the pipelines table, whose entries the journal GC removes with their runs).
struct ScheduleRecord {
  std::string pipeline;       // pipeline name, the key
  std::string pipeline_hash;  // of `snapshot`
  std::string snapshot;       // canonical pipeline JSON the fires run
  Micros registered_at = 0;   // wall

  bool operator==(const ScheduleRecord&) const = default;
};

enum class FireState : uint8_t {
  kStarted = 0,  // its run was created in the same commit (run_id)
  kSkipped = 1,  // overlap: skip, or a catch-up policy dropped it (reason)
  kQueued = 2,   // overlap: queue or a backfill cap; started later
};
const char* FireStateName(FireState s);

// One scheduled time of one pipeline, decided.
struct FireRecord {
  std::string pipeline;
  Micros scheduled_at = 0;  // wall: the cron time (or backfill time)
  FireState state = FireState::kStarted;
  std::string run_id;     // kStarted
  Micros decided_at = 0;  // wall: when the state was journaled
  std::string origin;     // "schedule", "catchup" or "backfill"
  std::string reason;     // why skipped or queued

  bool operator==(const FireRecord&) const = default;
};

// Encodings for the stores (JSON values; fire keys sort by pipeline, then
// scheduled time).
std::string EncodeSchedule(const ScheduleRecord& r);
Result<ScheduleRecord> DecodeSchedule(std::string_view bytes);
std::string EncodeFire(const FireRecord& r);
Result<FireRecord> DecodeFire(std::string_view bytes);
// pipeline + '\0' + scheduled_at as 8 big-endian bytes (offset binary).
std::string FireKey(const std::string& pipeline, Micros scheduled_at);

}  // namespace apollo11::storage
