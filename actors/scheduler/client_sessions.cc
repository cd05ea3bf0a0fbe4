#include "actors/scheduler/client_sessions.h"

#include "actors/queries/query_service.h"

namespace apollo11::actors {

void ClientSessions::Accepted(const std::string& identity, const std::string& run_id) {
  SubmitReply reply;
  reply.run_id = run_id;
  NoteOutcome(true, "run " + run_id);
  subscribers_[run_id] = identity;
  accepted_.emplace_back(identity, std::move(reply));
}

void ClientSessions::Confirmed(const std::string& identity, ConfirmReply reply) {
  NoteOutcome(true, reply.text);
  confirmed_.emplace_back(identity, std::move(reply));
}

void ClientSessions::Registered(const std::string& identity, RegistryReply reply) {
  NoteOutcome(true, reply.json);
  registered_.emplace_back(identity, std::move(reply));
}

void ClientSessions::OnCommitted(const std::vector<RunProgress>& progress,
                                 const std::vector<RunFinished>& finished,
                                 std::vector<RunChange> changes) {
  for (const auto& [identity, reply] : accepted_) {
    Reply(identity, ClientType::kSubmitReply, reply);
  }
  accepted_.clear();
  for (const auto& [identity, reply] : confirmed_) {
    Reply(identity, ClientType::kConfirmReply, reply);
  }
  confirmed_.clear();
  for (const auto& [identity, reply] : registered_) {
    Reply(identity, ClientType::kRegistryReply, reply);
  }
  registered_.clear();
  for (const RunProgress& p : progress) {
    auto sub = subscribers_.find(p.run_id);
    if (sub != subscribers_.end()) Reply(sub->second, ClientType::kRunProgress, p);
  }
  for (const RunFinished& f : finished) {
    auto sub = subscribers_.find(f.run_id);
    if (sub == subscribers_.end()) continue;
    Reply(sub->second, ClientType::kRunFinished, f);
    subscribers_.erase(sub);
  }
  if (changes.empty()) return;
  feed_.Append(std::move(changes));
  for (const ChangeWaiter& w : change_waiters_) AnswerChanges(w);
  change_waiters_.clear();
}

void ClientSessions::AnswerChanges(const ChangeWaiter& w) {
  QueryReply reply;
  reply.json = feed_.Answer(w.since).dump();
  Reply(w.identity, ClientType::kQueryReply, reply);
}

void ClientSessions::AwaitChanges(const std::string& identity, const std::string& since,
                                  Micros deadline) {
  if (feed_.Ready(since)) return AnswerChanges({identity, since, deadline});
  if (change_waiters_.size() >= kMaxChangeWaiters) {
    QueryReply reply;
    reply.code = static_cast<uint8_t>(StatusCode::kBusy);
    reply.error =
        std::to_string(kMaxChangeWaiters) + " clients already wait for changes; ask again later";
    return Reply(identity, ClientType::kQueryReply, reply);
  }
  change_waiters_.push_back({identity, since, deadline});
}

uint64_t ClientSessions::AwaitLog(const std::string& identity, nlohmann::json meta,
                                  Micros deadline) {
  const uint64_t id = next_log_request_++;
  pending_logs_[id] = {identity, std::move(meta), deadline};
  return id;
}

void ClientSessions::OnLogFetched(LogFetched fetched) {
  auto pending = pending_logs_.find(fetched.reply.request_id);
  if (pending == pending_logs_.end()) return;  // answered late: already timed out
  Reply(pending->second.identity, ClientType::kQueryReply,
        QueryService::LogReply(std::move(pending->second.meta), std::move(fetched.reply)));
  pending_logs_.erase(pending);
}

void ClientSessions::ExpireLogs(Micros now) {
  std::erase_if(change_waiters_, [&](const ChangeWaiter& w) {
    if (w.deadline > now) return false;
    AnswerChanges(w);
    return true;
  });
  for (auto it = pending_logs_.begin(); it != pending_logs_.end();) {
    if (it->second.deadline > now) {
      ++it;
      continue;
    }
    QueryReply reply;
    reply.code = static_cast<uint8_t>(StatusCode::kIo);
    std::string worker = "?";
    auto w = it->second.meta.find("worker");
    if (w != it->second.meta.end() && w->is_string()) worker = w->get<std::string>();
    reply.error = "worker " + worker + " did not answer the log request within " +
                  std::to_string(kLogFetchTimeout / kMicrosPerSecond) + "s";
    Reply(it->second.identity, ClientType::kQueryReply, reply);
    it = pending_logs_.erase(it);
  }
}

Micros ClientSessions::NextDeadline() const {
  Micros next = 0;
  for (const auto& [id, p] : pending_logs_) {
    if (next == 0 || p.deadline < next) next = p.deadline;
  }
  for (const ChangeWaiter& w : change_waiters_) {
    if (next == 0 || w.deadline < next) next = w.deadline;
  }
  return next;
}

}  // namespace apollo11::actors
