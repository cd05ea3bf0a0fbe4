#pragma once
// AlertHistory: the node's bounded record of the alerts it delivered (after
// folding), newest last, plus the ones being delivered and those still held
// in a notifier's fold window, for GET /api/alerts and the dashboard's
// overview. Each record keeps the alert's ids, its human text, how many
// occurrences were folded into it and, per target, whether delivery succeeded
// and why not. It never holds a task's stderr, an environment value or a target's
// full URL (webhook URLs often embed tokens): only the rule name and the
// URL's scheme and host.
//
// Owned by the node, outside any Notifier, so that a SIGHUP that replaces the
// notifier keeps it. Thread-safe: the delivery thread adds, HTTP threads read.

#include <cstdint>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "alerts/alert_event.h"
#include "common/clock.h"
#include "common/mutex.h"

namespace apollo11::alerts {

// One target of one alert: "rule NAME webhook https://host" or
// "rule NAME command", and how its delivery ended.
struct AlertDelivery {
  std::string target;
  bool ok = false;
  std::string error;  // why it failed (last attempt); empty when ok
};

enum class AlertRecordState : uint8_t {
  kFolding,     // held in the fold window: repeats are still being counted
  kDelivering,  // its targets are being tried
  kDone,        // every target was tried: see deliveries
};

struct AlertRecord {
  AlertRecordState state = AlertRecordState::kDone;
  std::string id;  // empty while folding (the notifier names it at delivery)
  AlertType type = AlertType::kRetriesExhausted;
  std::string pipeline, run_id, task_id, exec_id, worker_id;
  uint32_t attempt = 0;
  uint32_t count = 1;  // occurrences folded into this delivery
  Micros ts = 0;       // the last occurrence
  Micros first_ts = 0;
  std::string text;  // AlertText: what a chat webhook shows
  std::vector<AlertDelivery> deliveries;
};

// "critical" (journal), "error" (failures, timeouts, lost workers),
// "warning" (slow task, backlog at cap, canceled run) or "info" (success).
const char* SeverityOf(AlertType type);

// The record of `event` with no deliveries yet (its stderr tail is left out).
AlertRecord RecordOf(const AlertEvent& event);

// "scheme://host[:port]" of `url`: no user info, path or query.
std::string RedactUrl(const std::string& url);

// The record as /api/alerts sends it; "delivery" is "folding" or
// "delivering" until done, then sums the targets up: "delivered", "failed",
// "partial" or "none".
nlohmann::json RecordJson(const AlertRecord& record);

class AlertHistory {
 public:
  static constexpr size_t kDefaultCapacity = 200;
  explicit AlertHistory(size_t capacity = kDefaultCapacity);

  // Keeps `record`, forgetting the oldest beyond capacity; a record with the
  // same non-empty id is replaced in place (delivering, then done). Any thread.
  void Add(AlertRecord record);
  // Sets the deliveries of the record `id` and marks it done; a no-op when it
  // was forgotten. Any thread.
  void Finish(const std::string& id, std::vector<AlertDelivery> deliveries);
  // Replaces what `source` (a notifier) holds in its fold window; an empty
  // `held` forgets the source. Any thread.
  void SetHeld(const void* source, std::vector<AlertRecord> held);
  // At most `limit` records: the held ones (newest first), then the others,
  // newest first. Any thread.
  std::vector<AlertRecord> Recent(size_t limit) const;
  // {"alerts": [RecordJson...], "capacity": N, "recorded": total ever added}.
  nlohmann::json RecentJson(size_t limit) const;

  size_t capacity() const { return capacity_; }

 private:
  const size_t capacity_;
  mutable Mutex mu_;
  std::deque<AlertRecord> records_ GUARDED_BY(mu_);  // oldest first
  std::map<const void*, std::vector<AlertRecord>> held_ GUARDED_BY(mu_);
  uint64_t recorded_ GUARDED_BY(mu_) = 0;
};

}  // namespace apollo11::alerts
