#include "actors/dispatcher/claim_window.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>

#include "common/log_event.h"

namespace apollo11::actors {

void ClaimWindow::Adopt(const AdoptRunning& adopt) {
  for (const AdoptExec& e : adopt.execs) {
    waiting_[e.exec_id] = {e.attempt, e.worker_id, e.expected_ms, adopt.claim_until};
  }
  if (adopt.execs.empty()) return;
  if (next_deadline_ == 0 || adopt.claim_until < next_deadline_) {
    next_deadline_ = adopt.claim_until;
  }
  LogEvent(spdlog::level::info, "recovery_waiting", {{"count", adopt.execs.size()}},
           "recovery: {} executions were RUNNING; waiting for their workers to claim them",
           adopt.execs.size());
}

std::optional<int64_t> ClaimWindow::Claim(const std::string& worker_id, const std::string& exec_id,
                                          uint32_t attempt) {
  auto o = waiting_.find(exec_id);
  if (o == waiting_.end() || o->second.attempt != attempt) return std::nullopt;
  // Only the worker the journal names holds it: another peer claiming it
  // would be handed a result it could forge.
  if (!o->second.worker_id.empty() && o->second.worker_id != worker_id) return std::nullopt;
  const int64_t expected_ms = o->second.expected_ms;
  waiting_.erase(o);
  LogEvent(spdlog::level::info, "recovery_claimed",
           {{"worker_id", worker_id}, {"exec_id", exec_id}, {"attempt", attempt}},
           "recovery: worker {} still holds {} attempt {}: kept", worker_id, exec_id, attempt);
  return expected_ms;
}

const std::string* ClaimWindow::Owner(const std::string& exec_id, uint32_t attempt) const {
  auto o = waiting_.find(exec_id);
  if (o == waiting_.end() || o->second.attempt != attempt) return nullptr;
  return &o->second.worker_id;
}

void ClaimWindow::ReleaseUnlisted(const std::string& worker_id,
                                  const std::vector<std::string>& listed,
                                  std::vector<WorkerGone>* gone_out) {
  WorkerGone gone;
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (it->second.worker_id != worker_id ||
        std::binary_search(listed.begin(), listed.end(), it->first)) {
      ++it;
      continue;
    }
    gone.execs.push_back({it->first, it->second.attempt});
    it = waiting_.erase(it);
  }
  if (gone.execs.empty()) return;
  gone.worker_id = worker_id;
  gone.reason =
      "its worker " + worker_id + " rejoined after the coordinator restarted and does not hold it";
  LogEvent(spdlog::level::warn, "recovery_unclaimed",
           {{"worker_id", worker_id}, {"count", gone.execs.size()}, {"reason", gone.reason}},
           "recovery: {}: {} executions handed back", gone.reason, gone.execs.size());
  gone_out->push_back(std::move(gone));
}

void ClaimWindow::ReleaseDue(Micros now, std::vector<WorkerGone>* gone_out) {
  if (next_deadline_ == 0 || now < next_deadline_) return;
  next_deadline_ = 0;
  std::map<std::string, WorkerGone> lost;  // by the worker the journal named
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if (it->second.claim_until > now) {
      if (next_deadline_ == 0 || it->second.claim_until < next_deadline_) {
        next_deadline_ = it->second.claim_until;
      }
      ++it;
      continue;
    }
    WorkerGone& gone = lost[it->second.worker_id];
    if (gone.reason.empty()) {
      gone.worker_id = it->second.worker_id;
      gone.reason = "no worker claimed it after the coordinator restarted (was on worker " +
                    (it->second.worker_id.empty() ? std::string("?") : it->second.worker_id) + ")";
    }
    gone.execs.push_back({it->first, it->second.attempt});
    it = waiting_.erase(it);
  }
  for (auto& [id, gone] : lost) {
    LogEvent(spdlog::level::warn, "recovery_unclaimed",
             {{"worker_id", gone.worker_id}, {"count", gone.execs.size()}, {"reason", gone.reason}},
             "recovery: {}: {} executions handed back", gone.reason, gone.execs.size());
    gone_out->push_back(std::move(gone));
  }
}

}  // namespace apollo11::actors
