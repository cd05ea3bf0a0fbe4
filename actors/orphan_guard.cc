#include "actors/orphan_guard.h"

#include <spdlog/spdlog.h>

#include <utility>
#include <vector>

#include "common/log_event.h"
#include "executor/process_group.h"

namespace apollo11::actors {

OrphanGuard::OrphanGuard(storage::Outbox* store, std::string worker_id)
    : store_(store), worker_id_(std::move(worker_id)) {}

void OrphanGuard::StopLeftovers() {
  if (store_ == nullptr) return;
  auto loaded = store_->LoadChildren();
  if (!loaded.ok()) {
    spdlog::error("worker {}: cannot read the task processes its previous run left: {}", worker_id_,
                  loaded.status().message());
    return;
  }
  if (loaded->empty()) return;
  std::vector<executor::GroupToStop> groups;
  for (const storage::ChildGroup& c : *loaded) {
    groups.push_back({c.pgid, c.start_time, Millis(c.kill_grace_ms)});
  }
  const std::vector<executor::StopResult> results = executor::StopGroups(groups);
  for (size_t i = 0; i < loaded->size(); ++i) {
    const storage::ChildGroup& c = (*loaded)[i];
    if (results[i] != executor::StopResult::kNotRunning) {
      const bool killed = results[i] != executor::StopResult::kTerminated;
      LogEvent(spdlog::level::warn, "orphan_killed",
               {{"exec_id", c.exec_id}, {"attempt", c.attempt}, {"pgid", c.pgid}},
               "worker {}: {} attempt {} was still running from before this worker restarted; "
               "process group {} {}",
               worker_id_, c.exec_id, c.attempt, c.pgid,
               results[i] == executor::StopResult::kMembersKilled
                   ? "killed (what its leader left in it)"
               : killed ? "killed (SIGKILL after its kill grace)"
                        : "terminated (SIGTERM)");
    }
    Status s = store_->EraseChild(c.pgid);
    if (!s.ok()) spdlog::warn("worker {}: outbox: {}", worker_id_, s.message());
  }
}

void OrphanGuard::StopCgroupLeftovers(executor::Executor& executor) {
  for (const auto& [leaf, count] : executor.KillLeftovers()) {
    LogEvent(spdlog::level::warn, "orphan_killed", {{"cgroup", leaf}, {"processes", count}},
             "worker {}: execution {} was still running from before this worker restarted; "
             "its cgroup ({} processes) killed",
             worker_id_, leaf, count);
  }
}

void OrphanGuard::GroupStarted(pid_t pgid, uint64_t start_time,
                               const executor::ExecRequest& request) {
  if (store_ == nullptr) return;
  Status s = store_->PutChild(storage::ChildGroup{pgid, start_time, request.exec_id,
                                                  request.attempt, request.kill_grace.count()});
  // The task runs anyway; only stopping it after a kill -9 of this worker is lost.
  if (!s.ok()) spdlog::warn("worker {}: outbox: {}", worker_id_, s.message());
}

void OrphanGuard::GroupReaped(pid_t pgid) {
  if (store_ == nullptr) return;
  Status s = store_->EraseChild(pgid);
  if (!s.ok()) spdlog::warn("worker {}: outbox: {}", worker_id_, s.message());
}

}  // namespace apollo11::actors
