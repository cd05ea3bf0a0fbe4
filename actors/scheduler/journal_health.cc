#include "actors/scheduler/journal_health.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/log_event.h"

namespace apollo11::actors {

JournalHealth::JournalHealth(std::string journal_dir, JournalHealthOptions options)
    : dir_(std::move(journal_dir)), options_(options) {}

std::string JournalHealth::Kind() const {
  if (error_.code() != StatusCode::kFull) return "commit_failed";
  // Journal::GrowMap says so when the map, not the disk, is at its limit.
  return error_.message().find("max_map_size") != std::string::npos ? "map_full" : "disk_full";
}

std::string JournalHealth::What() const {
  const std::string kind = Kind();
  if (kind == "disk_full") return "disk full at " + dir_;
  if (kind == "map_full") return "map full (max_map_size) at " + dir_;
  return "commit failed at " + dir_;
}

void JournalHealth::OnFailure(const Status& error, size_t waiting, Micros now, Micros wall_now) {
  const bool first = !failing_;
  if (first) {
    failing_ = true;
    since_ = now;
    since_wall_ = wall_now != 0 ? wall_now : now;
    delay_ = options_.first_retry.count() * kMicrosPerMilli;
  } else {
    delay_ = std::min<Micros>(delay_ * 2, options_.max_retry.count() * kMicrosPerMilli);
  }
  error_ = error;
  waiting_ = waiting;
  ++failures_;
  retry_at_ = now + delay_;
  if (first) {
    last_log_ = now;
    LogEvent(
        spdlog::level::err, "journal_commit_failed",
        {{"waiting", waiting_}, {"reason", error_.message()}},
        "journal: {}: promotion paused, {} transitions waiting; will retry (every {} at most): {}",
        What(), waiting_, FormatDuration(options_.max_retry), error_.message());
  } else if (now - last_log_ >= options_.reminder_interval.count() * kMicrosPerMilli) {
    last_log_ = now;
    spdlog::error("journal: still {} after {} attempts over {}: {} transitions waiting", What(),
                  failures_, FormatDuration(Millis((now - since_) / kMicrosPerMilli)), waiting_);
  }
}

void JournalHealth::OnSuccess(Micros now) {
  if (!failing_) return;
  LogEvent(spdlog::level::info, "journal_writable_again", {{"failures", failures_}},
           "journal: writable again at {} after {} and {} failed attempts: promotion resumed", dir_,
           FormatDuration(Millis((now - since_) / kMicrosPerMilli)), failures_);
  failing_ = false;
  error_ = Status::Ok();
  waiting_ = 0;
  failures_ = 0;
  delay_ = 0;
}

std::string JournalHealth::Summary(Micros now) const {
  if (!failing_) return "";
  return What() + " since " + FormatTimestamp(since_wall_) + ": promotion paused, " +
         std::to_string(waiting_) + " transitions waiting; next retry in " +
         FormatDuration(Millis(std::max<Micros>(0, retry_at_ - now) / kMicrosPerMilli)) + " (" +
         error_.message() + ")";
}

nlohmann::json JournalHealth::ToJson(Micros now) const {
  if (!failing_) return nullptr;
  return {{"kind", Kind()},
          {"dir", dir_},
          {"error", error_.message()},
          {"since", FormatTimestamp(since_wall_)},
          {"failures", failures_},
          {"waiting_transitions", waiting_},
          {"next_retry_in_ms", std::max<Micros>(0, retry_at_ - now) / kMicrosPerMilli},
          {"message", Summary(now)}};
}

}  // namespace apollo11::actors
