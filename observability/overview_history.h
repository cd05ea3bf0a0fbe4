#pragma once
// A short history of what the dashboard's overview charts (tasks waiting,
// retry ratio, timeouts, heartbeat losses, the backlog against its cap and
// whether promotion is paused),
// sampled from this node's metrics every kInterval by the HTTP reader's
// tick, so the overview draws the last hour when it opens instead of only
// what it sampled since. GET /api/v1/overview/history answers Json().
//
// Thread-safe.

#include <array>
#include <deque>
#include <nlohmann/json.hpp>
#include <string>

#include "common/clock.h"
#include "common/mutex.h"
#include "observability/metrics_registry.h"

namespace apollo11::observability {

class OverviewHistory {
 public:
  static constexpr Micros kInterval = 5 * kMicrosPerSecond;
  static constexpr size_t kSamples = 720;  // an hour

  // `registry` must outlive the history.
  explicit OverviewHistory(const Registry* registry) : registry_(registry) {}

  // Takes a sample when kInterval has passed since the last (`steady_now`
  // decides, `wall_now` dates it); returns it as one line of JSON, or ""
  // when it took none.
  std::string Tick(Micros steady_now, Micros wall_now);

  // {"interval_ms", "columns": [...], "samples": [[...], ...]}, oldest first.
  nlohmann::json Json() const;

 private:
  static constexpr size_t kColumns = 8;  // the families sampled
  struct Sample {
    int64_t time_ms = 0;
    std::array<double, kColumns> values{};
  };
  static nlohmann::json ToJson(const Sample& s);

  const Registry* registry_;
  mutable Mutex mu_;
  Micros last_ GUARDED_BY(mu_) = 0;
  bool sampled_ GUARDED_BY(mu_) = false;
  std::deque<Sample> samples_ GUARDED_BY(mu_);
};

}  // namespace apollo11::observability
