#include "actors/dispatcher_core.h"

#include <spdlog/spdlog.h>

#include "engine/placement.h"

namespace apollo11::actors {
namespace {

// A peer identity fit for a log line: printable ASCII kept, the rest as \xNN.
std::string Printable(const std::string& id) {
  std::string out;
  for (unsigned char c : id) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    }
  }
  return out;
}

}  // namespace

void DispatcherOutput::Clear() {
  to_workers.clear();
  placed.placed.clear();
  started.items.clear();
  results.items.clear();
  gone.clear();
}

DispatcherCore::DispatcherCore(const Clock* clock, DispatcherOptions options)
    : clock_(clock), options_(options) {}

template <class T>
void DispatcherCore::Send(const std::string& identity, transport::MsgType type, const T& body,
                          DispatcherOutput* out) {
  std::string frame;
  transport::Encode(static_cast<uint16_t>(type), body, &frame);
  out->to_workers.emplace_back(identity, std::move(frame));
}

void DispatcherCore::OnWorkerFrame(const std::string& identity, const void* data, size_t size,
                                   DispatcherOutput* out) {
  auto envelope = transport::DecodeEnvelope(data, size);
  if (!envelope.ok()) {
    ++dropped_frames_;
    spdlog::warn("dropped a malformed frame from peer {} ({} bytes): {}", Printable(identity), size,
                 envelope.status().message());
    return;
  }
  const Micros now = clock_->Now();
  const auto type = static_cast<transport::MsgType>(envelope->type);
  auto it = workers_.find(identity);

  if (type == transport::MsgType::kHello) {
    auto hello = transport::BodyAs<transport::Hello>(*envelope);
    if (!hello.ok()) {
      ++dropped_frames_;
      return;
    }
    if (it != workers_.end()) {
      // A rejoin: executions we placed there that it no longer holds are lost.
      std::unordered_map<std::string, uint32_t> still;
      for (const auto& ref : hello->running) still[ref.exec_id] = ref.attempt;
      WorkerGone gone;
      gone.worker_id = identity;
      gone.reason = "worker " + identity + " rejoined without it (restarted)";
      for (auto r = it->second.running.begin(); r != it->second.running.end();) {
        auto s = still.find(r->first);
        if (s == still.end() || s->second != r->second) {
          gone.execs.push_back({r->first, r->second});
          it->second.expected_busy_ms -= it->second.expected[r->first];
          it->second.expected.erase(r->first);
          r = it->second.running.erase(r);
        } else {
          ++r;
        }
      }
      if (!gone.execs.empty()) out->gone.push_back(std::move(gone));
    } else {
      it = workers_.emplace(identity, Worker{}).first;
      it->second.id = identity;
      spdlog::info("worker {} joined: group {}, {} slots", identity, hello->group, hello->slots);
    }
    Worker& w = it->second;
    w.group = hello->group.empty() ? "default" : hello->group;
    w.slots = hello->slots;
    w.credits = 0;  // it grants credit with CREDIT
    w.last_seen = now;
    // Executions it claims that we did not place there are not ours to run.
    for (const auto& ref : hello->running) {
      auto r = w.running.find(ref.exec_id);
      if (r == w.running.end() || r->second != ref.attempt) {
        transport::Cancel cancel{ref.exec_id, ref.attempt, options_.epoch};
        Send(identity, transport::MsgType::kCancel, cancel, out);
      }
    }
    transport::Heartbeat hb;
    hb.epoch = options_.epoch;
    hb.sent_at = now;
    Send(identity, transport::MsgType::kHeartbeat, hb, out);
    return;
  }

  if (it == workers_.end()) {
    // Not registered (its HELLO was lost, or the coordinator restarted): a
    // heartbeat marked unregistered makes it say HELLO again.
    if (type == transport::MsgType::kResult) {
      // Keep its result flowing: the scheduler deduplicates.
      auto result = transport::BodyAs<transport::ResultMsg>(*envelope);
      if (result.ok()) out->results.items.push_back({identity, std::move(*result)});
    }
    transport::Heartbeat hb;
    hb.epoch = options_.epoch;
    hb.sent_at = now;
    hb.registered = false;
    Send(identity, transport::MsgType::kHeartbeat, hb, out);
    return;
  }

  Worker& w = it->second;
  w.last_seen = now;
  switch (type) {
    case transport::MsgType::kCredit: {
      auto credit = transport::BodyAs<transport::Credit>(*envelope);
      if (!credit.ok()) break;
      // Never more credit than free slots: a confused worker cannot flood us.
      uint32_t busy = static_cast<uint32_t>(w.running.size());
      uint32_t free = w.slots > busy ? w.slots - busy : 0;
      w.credits = std::min(free, w.credits + credit->credits);
      return;
    }
    case transport::MsgType::kStarted: {
      auto started = transport::BodyAs<transport::Started>(*envelope);
      if (!started.ok()) break;
      out->started.items.push_back({identity, std::move(*started)});
      return;
    }
    case transport::MsgType::kResult: {
      auto result = transport::BodyAs<transport::ResultMsg>(*envelope);
      if (!result.ok()) break;
      auto r = w.running.find(result->exec_id);
      if (r != w.running.end() && r->second == result->attempt) Finish(w, result->exec_id);
      out->results.items.push_back({identity, std::move(*result)});
      return;
    }
    case transport::MsgType::kHeartbeat:
      return;  // last_seen is updated above
    case transport::MsgType::kProbeReply: {
      auto reply = transport::BodyAs<transport::ProbeReply>(*envelope);
      if (!reply.ok()) break;
      WorkerGone gone;
      gone.worker_id = identity;
      gone.reason = "reconciliation: worker " + identity +
                    " does not hold it (a dispatch or report was lost)";
      for (const transport::ProbeState& st : reply->states) {
        auto r = w.running.find(st.exec_id);
        if (st.state != 0 || r == w.running.end() || r->second != st.attempt) continue;
        gone.execs.push_back({st.exec_id, st.attempt});
        Finish(w, st.exec_id);
        // The slot it was sent to is free after all.
        if (w.credits + w.running.size() < w.slots) ++w.credits;
      }
      if (!gone.execs.empty()) {
        spdlog::warn("{}: {} executions handed back", gone.reason, gone.execs.size());
        out->gone.push_back(std::move(gone));
      }
      return;
    }
    case transport::MsgType::kBye: {
      Forget(identity, "worker " + identity + " left (BYE)", out);
      return;
    }
    default:
      break;
  }
  ++dropped_frames_;
  spdlog::warn("dropped an unexpected {} frame from worker {}",
               transport::MsgTypeName(envelope->type), identity);
}

void DispatcherCore::Finish(Worker& w, const std::string& exec_id) {
  w.running.erase(exec_id);
  auto e = w.expected.find(exec_id);
  if (e != w.expected.end()) {
    w.expected_busy_ms -= e->second;
    w.expected.erase(e);
  }
}

void DispatcherCore::OnEnqueue(Enqueue&& enqueue) {
  for (QueuedExec& exec : enqueue.execs) {
    // A newer attempt replaces an older one still waiting.
    auto old = queued_index_.find(exec.dispatch.exec_id);
    if (old != queued_index_.end()) {
      queues_[old->second.first].erase(old->second.second);
      queued_index_.erase(old);
      --queued_;
    }
    QueueKey key{-exec.priority, seq_++};
    std::string group = exec.group.empty() ? "default" : exec.group;
    queued_index_[exec.dispatch.exec_id] = {group, key};
    queues_[group].emplace(key, std::move(exec));
    ++queued_;
  }
}

void DispatcherCore::OnAcks(const AckResults& acks, DispatcherOutput* out) {
  for (const WorkerExecRef& ack : acks.acks) {
    if (ack.worker_id.empty()) continue;
    transport::Ack msg{ack.exec_id, ack.attempt};
    Send(ack.worker_id, transport::MsgType::kAck, msg, out);
  }
}

void DispatcherCore::OnCancel(const CancelExecs& cancel, DispatcherOutput* out) {
  for (const transport::ExecRef& ref : cancel.execs) {
    auto q = queued_index_.find(ref.exec_id);
    if (q != queued_index_.end()) {
      queues_[q->second.first].erase(q->second.second);
      queued_index_.erase(q);
      --queued_;
      continue;
    }
    for (auto& [id, w] : workers_) {
      auto r = w.running.find(ref.exec_id);
      if (r == w.running.end()) continue;
      transport::Cancel msg{ref.exec_id, r->second, options_.epoch};
      Send(id, transport::MsgType::kCancel, msg, out);
    }
  }
}

void DispatcherCore::Forget(const std::string& identity, const std::string& reason,
                            DispatcherOutput* out) {
  auto it = workers_.find(identity);
  if (it == workers_.end()) return;
  WorkerGone gone;
  gone.worker_id = identity;
  gone.reason = reason;
  for (const auto& [exec_id, attempt] : it->second.running)
    gone.execs.push_back({exec_id, attempt});
  workers_.erase(it);
  spdlog::warn("{}; {} executions handed back", reason, gone.execs.size());
  out->gone.push_back(std::move(gone));
}

void DispatcherCore::OnWorkerLost(const WorkerLost& lost, DispatcherOutput* out) {
  Forget(lost.worker_id, lost.reason, out);
}

void DispatcherCore::OnSendFailed(const std::string& identity, DispatcherOutput* out) {
  Forget(identity, "worker " + identity + " lost: its connection is gone (send failed)", out);
}

void DispatcherCore::Place(DispatcherOutput* out) {
  if (queued_ == 0) return;
  const Micros now = clock_->Now();
  std::vector<engine::WorkerView> views;
  std::vector<Worker*> by_view;
  for (auto& [group, queue] : queues_) {
    if (queue.empty()) continue;
    views.clear();
    by_view.clear();
    for (auto& [id, w] : workers_) {
      if (w.group != group || w.credits == 0) continue;
      engine::WorkerView v;
      v.id = id;
      v.group = w.group;
      v.slots = w.slots;
      v.credits = w.credits;
      v.running = static_cast<uint32_t>(w.running.size());
      v.expected_busy = w.expected_busy_ms * kMicrosPerMilli;
      views.push_back(std::move(v));
      by_view.push_back(&w);
    }
    while (!queue.empty() && !views.empty()) {
      int pick = engine::PickWorker(views, group);
      if (pick < 0) break;
      Worker& w = *by_view[pick];
      auto node = queue.extract(queue.begin());
      QueuedExec& exec = node.mapped();
      queued_index_.erase(exec.dispatch.exec_id);
      --queued_;
      exec.dispatch.epoch = options_.epoch;
      Send(w.id, transport::MsgType::kDispatch, exec.dispatch, out);
      w.running[exec.dispatch.exec_id] = exec.dispatch.attempt;
      w.expected[exec.dispatch.exec_id] = exec.expected_ms;
      w.expected_busy_ms += exec.expected_ms;
      --w.credits;
      out->placed.placed.push_back({w.id, exec.dispatch.exec_id, exec.dispatch.attempt});
      engine::WorkerView& v = views[pick];
      v.credits = w.credits;
      v.running = static_cast<uint32_t>(w.running.size());
      v.expected_busy = w.expected_busy_ms * kMicrosPerMilli;
      if (v.credits == 0) {
        views.erase(views.begin() + pick);
        by_view.erase(by_view.begin() + pick);
      }
    }
  }
  out->placed.at = now;
}

void DispatcherCore::Heartbeat(DispatcherOutput* out) {
  transport::Heartbeat hb;
  hb.epoch = options_.epoch;
  hb.sent_at = clock_->Now();
  for (auto& [id, w] : workers_) Send(id, transport::MsgType::kHeartbeat, hb, out);
}

void DispatcherCore::Probe(DispatcherOutput* out) {
  for (auto& [id, w] : workers_) {
    if (w.running.empty()) continue;
    transport::Probe probe;
    probe.epoch = options_.epoch;
    for (const auto& [exec_id, attempt] : w.running) probe.execs.push_back({exec_id, attempt});
    Send(id, transport::MsgType::kProbe, probe, out);
  }
}

WorkersSeen DispatcherCore::Seen() const {
  WorkersSeen seen;
  for (const auto& [id, w] : workers_) seen.workers.push_back({id, w.last_seen, true});
  return seen;
}

std::vector<WorkerSnapshot> DispatcherCore::Snapshot() const {
  std::vector<WorkerSnapshot> out;
  for (const auto& [id, w] : workers_) {
    out.push_back({id, w.group, w.slots, w.credits, static_cast<uint32_t>(w.running.size()),
                   w.last_seen, w.expected_busy_ms});
  }
  return out;
}

}  // namespace apollo11::actors
