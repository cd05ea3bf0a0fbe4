#pragma once
// Makes run ids that are unique by construction and sort by creation time:
// "r20261129T093649-0000", "r20261129T093649-0001", ... The part before '-'
// is a UTC second, the part after a 4-hex-digit counter within that second.
// Ids only ever increase: when the wall clock stands still or steps back, the
// generator stays on the last second it used and counts on; when a second's
// 65,536 ids are used up it borrows the next second. Seeded with the last id
// the journal holds, so ids keep increasing across restarts whatever the
// clock did meanwhile.
//
// Not thread-safe: one owner (the scheduler's thread).

#include <cstdint>
#include <string>
#include <string_view>

#include "common/clock.h"

namespace apollo11 {

class RunIdGenerator {
 public:
  // Every id made after this call is greater than `last_id`, when it has the
  // generator's format; any other id (or "") changes nothing.
  void Seed(std::string_view last_id);
  // A new id for a run created at wall time `now`: greater than every id
  // made or seeded before.
  std::string Next(Micros now);

 private:
  static constexpr uint32_t kPerSecond = 0x10000;
  int64_t second_ = 0;    // the UTC second of the last id; 0 before the first
  uint32_t counter_ = 0;  // the counter of the last id
};

}  // namespace apollo11
