#pragma once
// Whether the scheduler's journal commits are failing (a full disk, the map at
// its maximum, an I/O error), since when, how many transitions wait, and when
// to try again. Retries back off exponentially, so a full disk is not
// hammered, yet a freed disk is noticed within `max_retry`. Logs one clear
// error when commits start failing, a reminder at most every
// `reminder_interval`, and one line when they succeed again.
//
// Plain logic: no sockets or threads; time is passed in, as Clock::Steady()
// (a wall-clock step neither hastens nor delays a retry), except the wall time
// that dates an outage for display. Scheduler thread only.

#include <nlohmann/json.hpp>
#include <string>

#include "common/clock.h"
#include "common/duration.h"
#include "common/status.h"

namespace apollo11::actors {

struct JournalHealthOptions {
  Millis first_retry{250};
  Millis max_retry{5000};
  Millis reminder_interval{60000};
};

class JournalHealth {
 public:
  explicit JournalHealth(std::string journal_dir, JournalHealthOptions options = {});

  // A commit failed with `error`; `waiting` transitions are held in memory.
  // `wall_now` dates the outage when it starts ("since ..."); 0: `now`.
  void OnFailure(const Status& error, size_t waiting, Micros now, Micros wall_now = 0);
  // A commit succeeded: logs the recovery if commits were failing.
  void OnSuccess(Micros now);

  bool failing() const { return failing_; }
  // When the next commit may be tried; 0 while healthy.
  Micros retry_at() const { return failing_ ? retry_at_ : 0; }
  bool RetryDue(Micros now) const { return !failing_ || now >= retry_at_; }
  // Commit attempts that failed since the first failure.
  uint64_t failures() const { return failures_; }

  // One sentence for operators: "disk full at DIR since ...: promotion paused,
  // N transitions waiting; next retry in 2s (journal ...: No space left on
  // device)". Empty while healthy.
  std::string Summary(Micros now) const;
  // The same as a JSON object (kind, dir, error, since, failures,
  // waiting_transitions, next_retry_in_ms, message), or null while healthy.
  nlohmann::json ToJson(Micros now) const;

 private:
  std::string Kind() const;  // disk_full, map_full or commit_failed
  std::string What() const;  // "disk full at DIR", ...

  const std::string dir_;
  const JournalHealthOptions options_;
  bool failing_ = false;
  Status error_;
  size_t waiting_ = 0;
  Micros since_ = 0, retry_at_ = 0, last_log_ = 0;
  Micros since_wall_ = 0;  // wall time of the first failure, shown
  Micros delay_ = 0;
  uint64_t failures_ = 0;
};

}  // namespace apollo11::actors
