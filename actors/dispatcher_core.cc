#include "actors/dispatcher_core.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/log_event.h"
#include "engine/placement.h"

namespace apollo11::actors {
namespace {

// Worker and queue gauges are refreshed at most this often.
constexpr Micros kGaugePeriod = 100 * kMicrosPerMilli;

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
  logs.clear();
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
  transport::Envelope decoded;
  Status decode = transport::DecodeEnvelopeInto(data, size, &decoded);
  if (!decode.ok()) {
    ++dropped_frames_;
    if (!transport::IsOtherProtocolVersion(decoded)) {
      spdlog::warn("dropped a malformed frame from peer {} ({} bytes): {}", Printable(identity),
                   size, decode.message());
    } else if (other_version_peers_.insert(identity).second) {  // once per peer
      spdlog::error("peer {} speaks another protocol version; its frames are dropped: {}",
                    Printable(identity), decode.message());
    }
    return;
  }
  if (!other_version_peers_.empty()) other_version_peers_.erase(identity);
  const transport::Envelope* envelope = &decoded;
  const Micros now = clock_->Now();
  const auto type = static_cast<transport::MsgType>(envelope->type);
  auto it = workers_.find(identity);

  if (type == transport::MsgType::kHello) {
    auto hello = transport::BodyAs<transport::Hello>(*envelope);
    if (!hello.ok()) {
      ++dropped_frames_;
      return;
    }
    std::vector<transport::Probe> rejoin_probes;
    if (it != workers_.end()) {
      // A rejoin (restarted, or reconnected after a silence). Executions we
      // placed there that its HELLO does not list are not lost yet: a
      // DISPATCH we sent after it reconnected may still be on its way, behind
      // this HELLO. A PROBE, which travels behind any such DISPATCH, asks;
      // what it does not hold then is handed back (kProbeReply below).
      std::unordered_map<std::string, uint32_t> still;
      for (const auto& ref : hello->running) still[ref.exec_id] = ref.attempt;
      transport::Probe probe;
      for (const auto& [exec_id, attempt] : it->second.running) {
        auto st = still.find(exec_id);
        if (st != still.end() && st->second == attempt) continue;
        if (reserved_.count(exec_id)) continue;  // not sent yet: it will be, to the new process
        probe.execs.push_back({exec_id, attempt});
        it->second.rejoined.insert(exec_id);
      }
      if (!probe.execs.empty()) rejoin_probes.push_back(std::move(probe));
    } else {
      it = workers_.emplace(identity, Worker{}).first;
      it->second.id = identity;
      it->second.joined_at = now;
      LogEvent(spdlog::level::info, "worker_joined",
               {{"worker_id", identity}, {"group", hello->group}, {"slots", hello->slots}},
               "worker {} joined: group {}, {} slots", identity, hello->group, hello->slots);
    }
    Worker& w = it->second;
    w.group = hello->group.empty() ? "default" : hello->group;
    w.slots = hello->slots;
    w.labels = hello->labels;
    std::sort(w.labels.begin(), w.labels.end());
    w.labels.erase(std::unique(w.labels.begin(), w.labels.end()), w.labels.end());
    w.credits = 0;  // it grants credit with CREDIT
    w.last_seen = now;
    // Executions it claims that we did not place there are not ours to run,
    // unless they are ones the journal left RUNNING or READY before a restart.
    for (const auto& ref : hello->running) {
      if (Claim(identity, &w, ref.exec_id, ref.attempt)) continue;
      auto r = w.running.find(ref.exec_id);
      if (r == w.running.end() || r->second != ref.attempt) {
        transport::Cancel cancel{ref.exec_id, ref.attempt, options_.epoch};
        Send(identity, transport::MsgType::kCancel, cancel, out);
      }
    }
    transport::Heartbeat hb;
    hb.epoch = options_.epoch;
    Send(identity, transport::MsgType::kHeartbeat, hb, out);
    for (const transport::Probe& probe : rejoin_probes) {
      Send(identity, transport::MsgType::kProbe, probe, out);
    }
    return;
  }

  if (it == workers_.end()) {
    // Not registered (its HELLO was lost, or the coordinator restarted): a
    // heartbeat marked unregistered makes it say HELLO again.
    if (type == transport::MsgType::kResult) {
      // Keep its result flowing: the scheduler deduplicates.
      auto result = transport::BodyAs<transport::ResultMsg>(*envelope);
      if (result.ok()) {
        Claim(identity, nullptr, result->exec_id, result->attempt);
        out->results.items.push_back({identity, std::move(*result)});
      }
    }
    transport::Heartbeat hb;
    hb.epoch = options_.epoch;
    hb.registered = false;
    Send(identity, transport::MsgType::kHeartbeat, hb, out);
    return;
  }

  Worker& w = it->second;
  if (w.last_seen != 0) {
    const Micros gap = now - w.last_seen;
    min_gap_ = min_gap_ == 0 ? gap : std::min(min_gap_, gap);
    max_gap_ = std::max(max_gap_, gap);
  }
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
      // A recovered execution reported straight away is claimed first.
      Claim(identity, &w, result->exec_id, result->attempt);
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
      WorkerGone lost, restarted;
      lost.worker_id = restarted.worker_id = identity;
      lost.reason = "reconciliation: worker " + identity +
                    " does not hold it (a dispatch or report was lost)";
      restarted.reason = "worker " + identity + " rejoined without it (restarted)";
      for (const transport::ProbeState& st : reply->states) {
        auto r = w.running.find(st.exec_id);
        if (r == w.running.end() || r->second != st.attempt) continue;
        const bool after_rejoin = w.rejoined.erase(st.exec_id) > 0;
        if (st.state != 0) continue;  // it holds it: nothing to repair
        (after_rejoin ? restarted : lost).execs.push_back({st.exec_id, st.attempt});
        Finish(w, st.exec_id);
        // The slot it was sent to is free after all.
        if (w.credits + w.running.size() < w.slots) ++w.credits;
      }
      for (WorkerGone* gone : {&restarted, &lost}) {
        if (gone->execs.empty()) continue;
        LogEvent(spdlog::level::warn, "executions_handed_back",
                 {{"worker_id", identity}, {"count", gone->execs.size()}, {"reason", gone->reason}},
                 "{}: {} executions handed back", gone->reason, gone->execs.size());
        out->gone.push_back(std::move(*gone));
      }
      return;
    }
    case transport::MsgType::kLogReply: {
      auto reply = transport::BodyAs<transport::LogReply>(*envelope);
      if (!reply.ok()) break;
      out->logs.push_back({std::move(*reply)});
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
  w.rejoined.erase(exec_id);
  if (auto r = reserved_.find(exec_id); r != reserved_.end() && r->second.worker_id == w.id) {
    reserved_.erase(r);
  }
  auto e = w.expected.find(exec_id);
  if (e != w.expected.end()) {
    w.expected_busy_ms -= e->second;
    w.expected.erase(e);
  }
}

void DispatcherCore::Dequeue(const std::string& exec_id) {
  auto q = queued_index_.find(exec_id);
  if (q != queued_index_.end()) {
    queues_[q->second.first].erase(q->second.second);
    queued_index_.erase(q);
    --queued_;
  }
}

void DispatcherCore::OnEnqueue(Enqueue&& enqueue) {
  for (QueuedExec& exec : enqueue.execs) {
    // A newer attempt replaces an older one still waiting.
    Dequeue(exec.dispatch.exec_id);
    orphans_.erase(exec.dispatch.exec_id);
    QueueKey key{-exec.priority, seq_++};
    std::string group = exec.group.empty() ? "default" : exec.group;
    queued_index_[exec.dispatch.exec_id] = {group, key};
    queues_[group].emplace(key, std::move(exec));
    ++queued_;
  }
}

void DispatcherCore::OnAdopt(const AdoptRunning& adopt) {
  for (const AdoptExec& e : adopt.execs) {
    orphans_[e.exec_id] = {e.attempt, e.worker_id, e.expected_ms, adopt.claim_until};
  }
  if (adopt.execs.empty()) return;
  if (next_claim_deadline_ == 0 || adopt.claim_until < next_claim_deadline_) {
    next_claim_deadline_ = adopt.claim_until;
  }
  LogEvent(spdlog::level::info, "recovery_waiting", {{"count", adopt.execs.size()}},
           "recovery: {} executions were RUNNING; waiting for their workers to claim them",
           adopt.execs.size());
}

bool DispatcherCore::Claim(const std::string& identity, Worker* w, const std::string& exec_id,
                           uint32_t attempt) {
  auto o = orphans_.find(exec_id);
  if (o == orphans_.end() || o->second.attempt != attempt) return false;
  // RUNNING in the journal: the scheduler knows it as running already.
  if (w != nullptr) {
    w->running[exec_id] = attempt;
    w->expected[exec_id] = o->second.expected_ms;
    w->expected_busy_ms += o->second.expected_ms;
  }
  orphans_.erase(o);
  LogEvent(spdlog::level::info, "recovery_claimed",
           {{"worker_id", identity}, {"exec_id", exec_id}, {"attempt", attempt}},
           "recovery: worker {} still holds {} attempt {}: kept", identity, exec_id, attempt);
  return true;
}

void DispatcherCore::ReleaseUnclaimed(Micros now, DispatcherOutput* out) {
  if (next_claim_deadline_ == 0 || now < next_claim_deadline_) return;
  next_claim_deadline_ = 0;
  std::map<std::string, WorkerGone> lost;  // by the worker the journal named
  for (auto it = orphans_.begin(); it != orphans_.end();) {
    if (it->second.claim_until > now) {
      if (next_claim_deadline_ == 0 || it->second.claim_until < next_claim_deadline_) {
        next_claim_deadline_ = it->second.claim_until;
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
    it = orphans_.erase(it);
  }
  for (auto& [id, gone] : lost) {
    LogEvent(spdlog::level::warn, "recovery_unclaimed",
             {{"worker_id", gone.worker_id}, {"count", gone.execs.size()}, {"reason", gone.reason}},
             "recovery: {}: {} executions handed back", gone.reason, gone.execs.size());
    out->gone.push_back(std::move(gone));
  }
}

void DispatcherCore::OnRelease(const ReleaseDispatch& release, DispatcherOutput* out) {
  for (const transport::ExecRef& ref : release.execs) {
    auto r = reserved_.find(ref.exec_id);
    // Gone meanwhile (its worker was lost, or it was canceled): the
    // scheduler has been told, nothing to send.
    if (r == reserved_.end() || r->second.attempt != ref.attempt) continue;
    out->to_workers.emplace_back(r->second.worker_id, std::move(r->second.frame));
    reserved_.erase(r);
  }
}

void DispatcherCore::DropReservation(const std::string& exec_id) {
  auto r = reserved_.find(exec_id);
  if (r == reserved_.end()) return;
  const std::string worker_id = r->second.worker_id;
  reserved_.erase(r);
  auto w = workers_.find(worker_id);
  if (w != workers_.end()) {
    Finish(w->second, exec_id);
    // The worker never got it: its slot is free again.
    if (w->second.credits + w->second.running.size() < w->second.slots) ++w->second.credits;
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
    orphans_.erase(ref.exec_id);  // a worker claiming it later is told to cancel
    if (queued_index_.count(ref.exec_id)) {
      Dequeue(ref.exec_id);
      continue;
    }
    if (auto r = reserved_.find(ref.exec_id);
        r != reserved_.end() && r->second.attempt == ref.attempt) {
      // Placed but never sent: nothing to kill on the worker.
      DropReservation(ref.exec_id);
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

void DispatcherCore::TakeHealth(Micros now, WorkersSnapshot* snapshot) {
  snapshot->min_gap_us = min_gap_;
  snapshot->max_gap_us = max_gap_;
  min_gap_ = max_gap_ = 0;
  snapshot->queued = queued();
  Micros oldest = 0;
  for (const auto& [group, queue] : queues_) {
    for (const auto& [key, q] : queue) {
      if (q.ready_at > 0 && (oldest == 0 || q.ready_at < oldest)) oldest = q.ready_at;
    }
  }
  snapshot->oldest_ready_age_us = oldest ? now - oldest : 0;
}

void DispatcherCore::OnLogFetch(const LogFetch& fetch, DispatcherOutput* out) {
  if (workers_.count(fetch.worker_id) == 0) {
    LogFetched answer;
    answer.reply.request_id = fetch.request.request_id;
    answer.reply.error = "worker " + fetch.worker_id +
                         " is not connected; its logs are on its machine, in "
                         "STATE_DIR/worker-" +
                         fetch.worker_id + "/logs";
    out->logs.push_back(std::move(answer));
    return;
  }
  Send(fetch.worker_id, transport::MsgType::kLogRequest, fetch.request, out);
}

bool DispatcherCore::Forget(const std::string& identity, const std::string& reason,
                            DispatcherOutput* out) {
  auto it = workers_.find(identity);
  if (it == workers_.end()) return false;
  WorkerGone gone;
  gone.worker_id = identity;
  gone.reason = reason;
  for (const auto& [exec_id, attempt] : it->second.running) {
    gone.execs.push_back({exec_id, attempt});
    if (auto r = reserved_.find(exec_id); r != reserved_.end() && r->second.worker_id == identity) {
      reserved_.erase(r);  // never sent: the scheduler requeues it with the rest
    }
  }
  workers_.erase(it);
  LogEvent(spdlog::level::warn, "worker_gone",
           {{"worker_id", identity}, {"count", gone.execs.size()}, {"reason", reason}},
           "{}; {} executions handed back", reason, gone.execs.size());
  out->gone.push_back(std::move(gone));
  return true;
}

void DispatcherCore::AlertLost(const WorkerGone& gone) {
  if (options_.alerts == nullptr) return;
  alerts::AlertEvent a;
  a.type = alerts::AlertType::kWorkerLost;
  a.ts = clock_->Now();
  a.worker_id = gone.worker_id;
  a.reason = gone.reason + "; " + std::to_string(gone.execs.size()) + " executions requeued";
  for (size_t i = 0; i < gone.execs.size() && i < 10; ++i) {
    a.reason += (i ? ", " : ": ") + gone.execs[i].exec_id;
  }
  if (!gone.execs.empty()) {  // the first one names a run to look at
    a.exec_id = gone.execs[0].exec_id;
    a.attempt = gone.execs[0].attempt;
    const size_t dot = a.exec_id.find('.');
    a.run_id = a.exec_id.substr(0, dot);
    if (dot != std::string::npos) a.task_id = a.exec_id.substr(dot + 1);
  }
  options_.alerts->Emit(std::move(a));
}

void DispatcherCore::OnWorkerLost(const WorkerLost& lost, DispatcherOutput* out) {
  if (Forget(lost.worker_id, lost.reason, out)) {
    ++losses_[lost.worker_id];
    AlertLost(out->gone.back());
  }
}

void DispatcherCore::OnSendFailed(const std::string& identity, DispatcherOutput* out) {
  if (Forget(identity, "worker " + identity + " lost: its connection is gone (send failed)", out)) {
    ++losses_[identity];
    AlertLost(out->gone.back());
  }
}

void DispatcherCore::Place(DispatcherOutput* out) {
  const Micros now = clock_->Now();
  ReleaseUnclaimed(now, out);
  if (queued_ == 0 || placement_paused_) return;
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
      v.labels = &w.labels;
      views.push_back(std::move(v));
      by_view.push_back(&w);
    }
    for (auto q = queue.begin(); q != queue.end() && !views.empty();) {
      int pick = engine::PickWorker(views, group, q->second.labels);
      if (pick < 0) {
        // No worker with credit has all its labels; one behind it may fit.
        ++q;
        continue;
      }
      Worker& w = *by_view[pick];
      auto node = queue.extract(q++);
      QueuedExec& exec = node.mapped();
      queued_index_.erase(exec.dispatch.exec_id);
      --queued_;
      exec.dispatch.epoch = options_.epoch;
      // Reserved, not sent: the DISPATCH leaves once the scheduler has
      // journaled READY -> RUNNING (OnRelease).
      Reservation& res = reserved_[exec.dispatch.exec_id];
      res.worker_id = w.id;
      res.attempt = exec.dispatch.attempt;
      res.frame.clear();
      transport::Encode(transport::ToWire(transport::MsgType::kDispatch), exec.dispatch,
                        &res.frame);
      w.running[exec.dispatch.exec_id] = exec.dispatch.attempt;
      w.expected[exec.dispatch.exec_id] = exec.expected_ms;
      w.expected_busy_ms += exec.expected_ms;
      --w.credits;
      out->placed.placed.push_back({w.id, exec.dispatch.exec_id, exec.dispatch.attempt});
      if (options_.metrics) options_.metrics->dispatch_latency.Observe((now - exec.ready_at) / 1e6);
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

void DispatcherCore::PublishGauges() {
  observability::CoordinatorMetrics* m = options_.metrics;
  const Micros now = clock_->Now();
  if (m == nullptr) return;
  if (now - gauges_published_ < kGaugePeriod) {
    gauges_pending_ = true;
    return;
  }
  gauges_published_ = now;
  gauges_pending_ = false;
  int64_t idle = 0, busy = 0, slots = 0, free = 0;
  for (const auto& [id, w] : workers_) {
    (w.running.empty() ? idle : busy) += 1;
    slots += w.slots;
    free += w.credits;
  }
  m->tasks_waiting.Set(static_cast<int64_t>(queued_));
  m->workers_idle.Set(idle);
  m->workers_busy.Set(busy);
  m->worker_slots.Set(slots);
  m->worker_slots_free.Set(free);
}

Micros DispatcherCore::GaugesDue() const {
  return gauges_pending_ ? gauges_published_ + kGaugePeriod : 0;
}

void DispatcherCore::Heartbeat(DispatcherOutput* out) {
  transport::Heartbeat hb;
  hb.epoch = options_.epoch;
  for (auto& [id, w] : workers_) Send(id, transport::MsgType::kHeartbeat, hb, out);
}

void DispatcherCore::Probe(DispatcherOutput* out) {
  for (auto& [id, w] : workers_) {
    if (w.running.empty()) continue;
    transport::Probe probe;
    for (const auto& [exec_id, attempt] : w.running) {
      if (reserved_.count(exec_id) == 0) probe.execs.push_back({exec_id, attempt});  // not sent yet
    }
    if (probe.execs.empty()) continue;
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
    auto lost = losses_.find(id);
    out.push_back({id, w.group, w.slots, w.credits, static_cast<uint32_t>(w.running.size()),
                   w.last_seen, w.expected_busy_ms, w.labels, w.joined_at,
                   lost == losses_.end() ? 0 : lost->second});
  }
  return out;
}

}  // namespace apollo11::actors
