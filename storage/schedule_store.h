#pragma once
// The schedules' durable state (one part of RunStore, storage/run_store.h):
// registered schedules and their fires. Written through RunBatch; read here.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"
#include "storage/records.h"

namespace apollo11::storage {

class ScheduleStore {
 public:
  virtual ~ScheduleStore() = default;

  // Every registered schedule (RunBatch::PutSchedule), by pipeline name.
  virtual Result<std::vector<ScheduleRecord>> Schedules() = 0;
  // The fires of `pipeline` with from <= scheduled_at <= to, oldest first.
  virtual Result<std::vector<FireRecord>> Fires(const std::string& pipeline, Micros from,
                                                Micros to) = 0;
  // The fire of `pipeline` with the latest scheduled time, if any.
  virtual Result<std::optional<FireRecord>> LastFire(const std::string& pipeline) = 0;
};

}  // namespace apollo11::storage
