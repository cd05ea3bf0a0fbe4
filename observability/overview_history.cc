#include "observability/overview_history.h"

namespace apollo11::observability {
namespace {

// The metric families sampled, in the order of a sample's columns after its time.
constexpr const char* kFamilies[8] = {
    "apollo11_tasks_waiting",
    "apollo11_retry_ratio",
    "apollo11_timeouts_total",
    "apollo11_heartbeat_losses_total",
    "apollo11_backlog",
    "apollo11_backlog_cap",
    "apollo11_journal_commit_failures_total",
    "apollo11_backlog_paused",
};

}  // namespace

static_assert(std::size(kFamilies) == 8);

nlohmann::json OverviewHistory::ToJson(const Sample& s) {
  nlohmann::json row = nlohmann::json::array({s.time_ms});
  for (double v : s.values) row.push_back(v);
  return row;
}

std::string OverviewHistory::Tick(Micros steady_now, Micros wall_now) {
  {
    MutexLock lock(&mu_);
    if (sampled_ && steady_now - last_ < kInterval) return "";
    sampled_ = true;
    last_ = steady_now;
  }
  Sample sample;
  sample.time_ms = wall_now / kMicrosPerMilli;
  for (size_t i = 0; i < kColumns; ++i) sample.values[i] = registry_->Sum(kFamilies[i]);
  std::string line = ToJson(sample).dump();
  MutexLock lock(&mu_);
  samples_.push_back(sample);
  while (samples_.size() > kSamples) samples_.pop_front();
  return line;
}

nlohmann::json OverviewHistory::Json() const {
  nlohmann::json columns = nlohmann::json::array({"time_ms"});
  for (const char* family : kFamilies) columns.push_back(family);
  nlohmann::json samples = nlohmann::json::array();
  MutexLock lock(&mu_);
  for (const Sample& s : samples_) samples.push_back(ToJson(s));
  return {{"interval_ms", kInterval / kMicrosPerMilli},
          {"columns", std::move(columns)},
          {"samples", std::move(samples)}};
}

}  // namespace apollo11::observability
