#include "alerts/alert_history.h"

#include <algorithm>

namespace apollo11::alerts {

const char* SeverityOf(AlertType type) {
  switch (type) {
    case AlertType::kJournalError:
      return "critical";
    case AlertType::kRetriesExhausted:
    case AlertType::kTimeout:
    case AlertType::kRunFailed:
    case AlertType::kWorkerLost:
    case AlertType::kPipelineRejected:
      return "error";
    case AlertType::kSlowTask:
    case AlertType::kBacklogAtCap:
    case AlertType::kRunCanceled:
    case AlertType::kLeadershipChanged:
    case AlertType::kStandbyLagging:
    case AlertType::kRunCapReached:
    case AlertType::kRunFailuresHandled:
      return "warning";
    case AlertType::kLeaseLost:
    case AlertType::kElectionKeyRefused:
      return "error";
    case AlertType::kRunSucceeded:
      return "info";
  }
  return "error";
}

AlertRecord RecordOf(const AlertEvent& e) {
  AlertRecord r;
  r.id = e.id;
  r.type = e.type;
  r.pipeline = e.pipeline;
  r.run_id = e.run_id;
  r.task_id = e.task_id;
  r.exec_id = e.exec_id;
  r.worker_id = e.worker_id;
  r.attempt = e.attempt;
  r.count = e.count;
  r.ts = e.ts;
  r.first_ts = e.first_ts ? e.first_ts : e.ts;
  r.text = AlertText(e);
  return r;
}

std::string RedactUrl(const std::string& url) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == std::string::npos) return "(url)";
  const size_t host_start = scheme_end + 3;
  size_t host_end = url.find_first_of("/?#", host_start);
  if (host_end == std::string::npos) host_end = url.size();
  std::string authority = url.substr(host_start, host_end - host_start);
  const size_t at = authority.rfind('@');
  if (at != std::string::npos) authority = authority.substr(at + 1);
  return url.substr(0, host_start) + authority;
}

nlohmann::json RecordJson(const AlertRecord& r) {
  nlohmann::json deliveries = nlohmann::json::array();
  size_t ok = 0;
  for (const AlertDelivery& d : r.deliveries) {
    nlohmann::json j = {{"target", d.target}, {"state", d.ok ? "delivered" : "failed"}};
    if (!d.ok) j["error"] = d.error;
    ok += d.ok ? 1 : 0;
    deliveries.push_back(std::move(j));
  }
  const char* delivery = r.state == AlertRecordState::kFolding      ? "folding"
                         : r.state == AlertRecordState::kDelivering ? "delivering"
                         : r.deliveries.empty()                     ? "none"
                         : ok == r.deliveries.size()                ? "delivered"
                         : ok == 0                                  ? "failed"
                                                                    : "partial";
  return {{"id", r.id},
          {"type", ToString(r.type)},
          {"severity", SeverityOf(r.type)},
          {"pipeline", r.pipeline},
          {"run_id", r.run_id},
          {"task_id", r.task_id},
          {"exec_id", r.exec_id},
          {"worker_id", r.worker_id},
          {"attempt", r.attempt},
          {"count", r.count},
          {"ts", FormatTimestamp(r.ts)},
          {"first_ts", FormatTimestamp(r.first_ts)},
          {"ts_us", r.ts},
          {"text", r.text},
          {"delivery", delivery},
          {"deliveries", std::move(deliveries)}};
}

AlertHistory::AlertHistory(size_t capacity) : capacity_(std::max<size_t>(1, capacity)) {}

void AlertHistory::Add(AlertRecord record) {
  MutexLock lock(&mu_);
  if (!record.id.empty()) {
    for (auto it = records_.rbegin(); it != records_.rend(); ++it) {
      if (it->id == record.id) {
        *it = std::move(record);
        return;
      }
    }
  }
  records_.push_back(std::move(record));
  ++recorded_;
  while (records_.size() > capacity_) records_.pop_front();
}

void AlertHistory::Finish(const std::string& id, std::vector<AlertDelivery> deliveries) {
  MutexLock lock(&mu_);
  for (auto it = records_.rbegin(); it != records_.rend(); ++it) {
    if (it->id == id) {
      it->deliveries = std::move(deliveries);
      it->state = AlertRecordState::kDone;
      return;
    }
  }
}

void AlertHistory::SetHeld(const void* source, std::vector<AlertRecord> held) {
  MutexLock lock(&mu_);
  if (held.empty()) {
    held_.erase(source);
  } else {
    held_[source] = std::move(held);
  }
}

std::vector<AlertRecord> AlertHistory::Recent(size_t limit) const {
  MutexLock lock(&mu_);
  std::vector<AlertRecord> out;
  for (const auto& [source, held] : held_) {
    for (const AlertRecord& r : held) out.push_back(r);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const AlertRecord& a, const AlertRecord& b) { return a.ts > b.ts; });
  if (out.size() > limit) out.resize(limit);
  for (auto it = records_.rbegin(); it != records_.rend() && out.size() < limit; ++it) {
    out.push_back(*it);
  }
  return out;
}

nlohmann::json AlertHistory::RecentJson(size_t limit) const {
  nlohmann::json alerts = nlohmann::json::array();
  for (const AlertRecord& r : Recent(limit)) alerts.push_back(RecordJson(r));
  uint64_t recorded = 0;
  {
    MutexLock lock(&mu_);
    recorded = recorded_;
  }
  return {{"alerts", std::move(alerts)}, {"capacity", capacity_}, {"recorded", recorded}};
}

}  // namespace apollo11::alerts
