#pragma once
// One alert: something an on-call engineer should hear about (a task that
// used up its retries, a lost worker, a journal that cannot commit), with the
// ids that find everything else about it (`apollo11 status RUN`,
// `apollo11 history EXEC_ID`). Plain values, built by the producers and
// delivered by the Notifier.

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"

namespace apollo11::alerts {

enum class AlertType : uint8_t {
  kRetriesExhausted,    // a task ended FAILED after its retries (or requeues)
  kTimeout,             // a task ended TIMEOUT
  kRunFailed,           // a run ended FAILED
  kRunCanceled,         // a run ended CANCELED
  kWorkerLost,          // a worker stopped answering or its connection broke
  kBacklogAtCap,        // READY+RUNNING reached max_backlog: promotion paused
  kSlowTask,            // a task runs far longer than it usually does
  kJournalError,        // a journal commit failed (disk full, I/O error)
  kRunSucceeded,        // a run ended SUCCESS (only rules naming it receive it)
  kLeadershipChanged,   // election: this coordinator became leader or stood down
  kLeaseLost,           // election: the leader could not renew its etcd lease and stood down
  kPipelineRejected,    // registry: a new version was refused; the previous one stays active
  kStandbyLagging,      // replication: a standby missed --replication-timeout
  kElectionKeyRefused,  // election: a key not a coordinator's was first in line; removed
  kRunCapReached,       // a run start refused, or a fire skipped, at a cap on active runs
  kRunFailuresHandled,  // a run ended SUCCESS with failed tasks its on: branches handled
};
inline constexpr int kAlertTypeCount = 16;

// "retries_exhausted", "timeout", ... as written in the config and the JSON.
const char* ToString(AlertType type);
// The inverse of ToString; nullopt for an unknown name.
std::optional<AlertType> ParseAlertType(std::string_view name);

struct AlertRule;

struct AlertEvent {
  AlertType type = AlertType::kRetriesExhausted;
  std::string pipeline;  // empty for node-wide events (worker lost, backlog, journal)
  std::string run_id;
  std::string task_id;
  std::string exec_id;
  uint32_t attempt = 0;
  std::string reason;       // one human sentence
  std::string stderr_tail;  // last bytes of the failed attempt's stderr, when known
  std::string worker_id;
  Micros ts = 0;        // when it happened (the last occurrence once folded)
  Micros first_ts = 0;  // the first occurrence folded into this one
  uint32_t count = 1;   // occurrences folded into this delivery
  std::string id;       // unique per delivery; set by the Notifier
  // The `alerts:` the event's pipeline declares (PipelineAlertRules): matched
  // and delivered like the node's rules, for this event only. Null: none.
  std::shared_ptr<const std::vector<AlertRule>> pipeline_rules;
};

// One human line for chat webhooks (the payload's "text"): what happened,
// where, why, and how often when folded.
std::string AlertText(const AlertEvent& event);

// The JSON body a webhook receives and a command hook reads on stdin.
nlohmann::json AlertJson(const AlertEvent& event);

}  // namespace apollo11::alerts
