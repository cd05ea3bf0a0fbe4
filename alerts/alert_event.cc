#include "alerts/alert_event.h"

#include <array>

namespace apollo11::alerts {

namespace {
constexpr std::array<const char*, kAlertTypeCount> kNames = {
    "retries_exhausted", "timeout",
    "run_failed",        "run_canceled",
    "worker_lost",       "backlog_at_cap",
    "slow_task",         "journal_error",
    "run_succeeded",     "leadership_changed",
    "lease_lost",        "pipeline_rejected",
    "standby_lagging",   "election_key_refused",
    "run_cap_reached",   "run_failures_handled"};
}  // namespace

const char* ToString(AlertType type) { return kNames[static_cast<size_t>(type)]; }

std::optional<AlertType> ParseAlertType(std::string_view name) {
  for (size_t i = 0; i < kNames.size(); ++i) {
    if (name == kNames[i]) return static_cast<AlertType>(i);
  }
  return std::nullopt;
}

std::string AlertText(const AlertEvent& e) {
  std::string what;
  switch (e.type) {
    case AlertType::kRetriesExhausted:
      what = "task " + e.task_id + " failed";
      break;
    case AlertType::kTimeout:
      what = "task " + e.task_id + " timed out";
      break;
    case AlertType::kSlowTask:
      what = "task " + e.task_id + " is slow";
      break;
    case AlertType::kRunFailed:
      what = "run " + e.run_id + " failed";
      break;
    case AlertType::kRunCanceled:
      what = "run " + e.run_id + " was canceled";
      break;
    case AlertType::kRunSucceeded:
      what = "run " + e.run_id + " succeeded";
      break;
    case AlertType::kWorkerLost:
      what = "worker " + e.worker_id + " lost";
      break;
    case AlertType::kBacklogAtCap:
      what = "backlog at its cap";
      break;
    case AlertType::kJournalError:
      what = "journal cannot commit";
      break;
    case AlertType::kPipelineRejected:
      what = "a new version was rejected";
      break;
    case AlertType::kLeadershipChanged:
      what = "coordinator leadership changed";
      break;
    case AlertType::kLeaseLost:
      what = "coordinator lost its leader lease";
      break;
    case AlertType::kStandbyLagging:
      what = "replication: no standby is in sync";
      break;
    case AlertType::kElectionKeyRefused:
      what = "election: a key that is not a coordinator's was first in line";
      break;
    case AlertType::kRunCapReached:
      what = "a run was not started: a cap on active runs is reached";
      break;
    case AlertType::kRunFailuresHandled:
      what = "run " + e.run_id + " succeeded with handled failures";
      break;
  }
  std::string text = "apollo11: " + what;
  if (!e.pipeline.empty()) text += " in pipeline " + e.pipeline;
  if (!e.task_id.empty() && !e.run_id.empty()) text += " (run " + e.run_id + ")";
  if (!e.reason.empty()) text += ": " + e.reason;
  if (e.count > 1) {
    text += " [" + std::to_string(e.count) + " times since " +
            FormatTimestamp(e.first_ts ? e.first_ts : e.ts) + "]";
  }
  return text;
}

nlohmann::json AlertJson(const AlertEvent& e) {
  nlohmann::json j = {{"id", e.id},
                      {"type", ToString(e.type)},
                      {"pipeline", e.pipeline},
                      {"run_id", e.run_id},
                      {"task_id", e.task_id},
                      {"exec_id", e.exec_id},
                      {"attempt", e.attempt},
                      {"reason", e.reason},
                      {"stderr_tail", e.stderr_tail},
                      {"worker_id", e.worker_id},
                      {"count", e.count},
                      {"ts", FormatTimestamp(e.ts)},
                      {"first_ts", FormatTimestamp(e.first_ts ? e.first_ts : e.ts)},
                      {"text", AlertText(e)}};
  // Where to look next: the commands that show the rest of the story.
  nlohmann::json look = nlohmann::json::object();
  if (!e.exec_id.empty()) look["history"] = "apollo11 history " + e.exec_id;
  if (!e.exec_id.empty()) look["logs"] = "apollo11 logs " + e.exec_id + " --stderr";
  if (!e.run_id.empty()) look["status"] = "apollo11 status " + e.run_id;
  if (!e.run_id.empty() && !e.task_id.empty()) {
    look["explain"] = "apollo11 explain " + e.run_id + " " + e.task_id;
  }
  if (e.type == AlertType::kWorkerLost) look["workers"] = "apollo11 workers";
  j["look"] = std::move(look);
  return j;
}

}  // namespace apollo11::alerts
