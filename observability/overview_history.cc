#include "observability/overview_history.h"

namespace apollo11::observability {
namespace {

// The metric families sampled, in the order of a sample's columns after its time.
constexpr const char* kFamilies[] = {
    "apollo11_tasks_waiting",
    "apollo11_retry_ratio",
    "apollo11_timeouts_total",
    "apollo11_heartbeat_losses_total",
    "apollo11_backlog",
    "apollo11_backlog_cap",
    "apollo11_journal_commit_failures_total",
};

}  // namespace

std::string OverviewHistory::Tick(Micros steady_now, Micros wall_now) {
  nlohmann::json sample = nlohmann::json::array({wall_now / kMicrosPerMilli});
  {
    MutexLock lock(&mu_);
    if (sampled_ && steady_now - last_ < kInterval) return "";
    sampled_ = true;
    last_ = steady_now;
  }
  for (const char* family : kFamilies) sample.push_back(registry_->Sum(family));
  std::string line = sample.dump();
  MutexLock lock(&mu_);
  samples_.push_back(std::move(sample));
  while (samples_.size() > kSamples) samples_.pop_front();
  return line;
}

nlohmann::json OverviewHistory::Json() const {
  nlohmann::json columns = nlohmann::json::array({"time_ms"});
  for (const char* family : kFamilies) columns.push_back(family);
  nlohmann::json samples = nlohmann::json::array();
  MutexLock lock(&mu_);
  for (const nlohmann::json& s : samples_) samples.push_back(s);
  return {{"interval_ms", kInterval / kMicrosPerMilli},
          {"columns", std::move(columns)},
          {"samples", std::move(samples)}};
}

}  // namespace apollo11::observability
