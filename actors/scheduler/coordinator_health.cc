#include "actors/scheduler/coordinator_health.h"

#include <algorithm>

#include "common/log_event.h"

namespace apollo11::actors {

CoordinatorHealth::CoordinatorHealth(size_t max_backlog, Millis interval)
    : max_backlog_(max_backlog), interval_us_(interval.count() * kMicrosPerMilli) {}

void CoordinatorHealth::OnSnapshot(const WorkersSnapshot& s, size_t backlog, bool paused,
                                   Micros now) {
  if (s.min_gap_us > 0) min_gap_ = min_gap_ == 0 ? s.min_gap_us : std::min(min_gap_, s.min_gap_us);
  max_gap_ = std::max(max_gap_, s.max_gap_us);
  if (interval_us_ <= 0) return;
  if (next_line_ == 0) {
    next_line_ = now + interval_us_;
    return;
  }
  if (now < next_line_) return;
  next_line_ = now + interval_us_;
  const double min_gap_s = static_cast<double>(min_gap_) / 1e6;
  const double max_gap_s = static_cast<double>(max_gap_) / 1e6;
  const double lag_s = static_cast<double>(s.oldest_ready_age_us) / 1e6;
  LogEvent(spdlog::level::info, "health",
           {{"workers", s.workers.size()},
            {"heartbeat_gap_min_s", min_gap_s},
            {"heartbeat_gap_max_s", max_gap_s},
            {"backlog", backlog},
            {"backlog_cap", max_backlog_},
            {"backlog_paused", paused},
            {"queued", s.queued},
            {"oldest_ready_age_s", lag_s}},
           "health: {} workers, heartbeat gaps {:.3f}-{:.3f}s, backlog {}/{}{}, {} queued, "
           "oldest READY {:.3f}s",
           s.workers.size(), min_gap_s, max_gap_s, backlog, max_backlog_, paused ? " (paused)" : "",
           s.queued, lag_s);
  min_gap_ = max_gap_ = 0;
}

}  // namespace apollo11::actors
