#include "actors/dispatcher/dispatcher_core.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/log_event.h"
#include "engine/placement.h"

namespace apollo11::actors {
namespace {

// Worker and queue gauges are refreshed at most this often.
constexpr Micros kGaugePeriod = 100 * kMicrosPerMilli;

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
    : clock_(clock), options_(options) {
  if (!options_.metrics) options_.metrics = observability::CoordinatorMetrics::Inert();
  if (!options_.alerts) options_.alerts = alerts::NullSink::Instance();
}

void DispatcherCore::OnEnqueue(Enqueue&& enqueue) {
  for (QueuedExec& exec : enqueue.execs) {
    claims_.Drop(exec.dispatch.exec_id);
    ready_.Push(std::move(exec));  // a newer attempt replaces an older one still waiting
  }
}

void DispatcherCore::OnAdopt(const AdoptRunning& adopt) { claims_.Adopt(adopt); }

bool DispatcherCore::Claim(const std::string& identity, Worker* w, const std::string& exec_id,
                           uint32_t attempt) {
  std::optional<int64_t> expected_ms = claims_.Claim(identity, exec_id, attempt);
  if (!expected_ms) return false;
  // RUNNING in the journal: the scheduler knows it as running already.
  if (w != nullptr) Hold(*w, exec_id, attempt, *expected_ms);
  return true;
}

void DispatcherCore::Hold(Worker& w, const std::string& exec_id, uint32_t attempt,
                          int64_t expected_ms) {
  w.running[exec_id] = attempt;
  w.expected[exec_id] = expected_ms;
  w.expected_busy_ms += expected_ms;
  holders_[exec_id] = {w.id, attempt};
}

void DispatcherCore::OnRelease(const ReleaseDispatch& release, DispatcherOutput* out) {
  for (const transport::ExecRef& ref : release.execs) {
    auto r = reserved_.find(ref.exec_id);
    // Gone meanwhile (its worker was lost, or it was canceled): the
    // scheduler has been told, nothing to send.
    if (r == reserved_.end() || r->second.attempt != ref.attempt) continue;
    if (const std::string* route = RouteOf(r->second.worker_id)) {
      out->to_workers.emplace_back(*route, std::move(r->second.frame));
    }
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
    if (w->second.credits + w->second.running.size() < w->second.capacity()) ++w->second.credits;
  }
}

void DispatcherCore::OnAcks(const AckResults& acks, DispatcherOutput* out) {
  for (const WorkerExecRef& ack : acks.acks) {
    const std::string* route = RouteOf(ack.worker_id);
    if (route == nullptr) continue;  // gone: it resends after its next HELLO
    transport::Ack msg{ack.exec_id, ack.attempt};
    Send(*route, transport::MsgType::kAck, msg, out);
  }
}

void DispatcherCore::OnCancel(const CancelExecs& cancel, DispatcherOutput* out) {
  for (const transport::ExecRef& ref : cancel.execs) {
    claims_.Drop(ref.exec_id);  // a worker claiming it later is told to cancel
    if (ready_.Remove(ref.exec_id)) continue;
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
      Send(w.route, transport::MsgType::kCancel, msg, out);
    }
  }
}

void DispatcherCore::TakeHealth(Micros now, WorkersSnapshot* snapshot) {
  snapshot->min_gap_us = min_gap_;
  snapshot->max_gap_us = max_gap_;
  min_gap_ = max_gap_ = 0;
  snapshot->queued = queued();
  const Micros oldest = ready_.OldestReadyAt();
  snapshot->oldest_ready_age_us = oldest ? now - oldest : 0;
}

void DispatcherCore::OnLogFetch(const LogFetch& fetch, DispatcherOutput* out) {
  const std::string* route = RouteOf(fetch.worker_id);
  if (route == nullptr) {
    LogFetched answer;
    answer.reply.request_id = fetch.request.request_id;
    answer.reply.error = "worker " + fetch.worker_id +
                         " is not connected; its logs are on its machine, in "
                         "STATE_DIR/worker-" +
                         fetch.worker_id + "/logs";
    out->logs.push_back(std::move(answer));
    return;
  }
  // Unanswered requests (the worker left, the reply was lost) are dropped
  // once too many wait: the scheduler has timed them out long before.
  if (log_requests_.size() >= kMaxRemembered) log_requests_.clear();
  log_requests_[fetch.request.request_id] = fetch.worker_id;
  Send(*route, transport::MsgType::kLogRequest, fetch.request, out);
}

bool DispatcherCore::Forget(const std::string& identity, const std::string& reason,
                            DispatcherOutput* out, bool bye) {
  auto it = workers_.find(identity);
  if (it == workers_.end()) return false;
  WorkerGone gone;
  gone.worker_id = identity;
  gone.reason = reason;
  for (const auto& [exec_id, attempt] : it->second.running) {
    gone.execs.push_back({exec_id, attempt});
    if (auto h = holders_.find(exec_id); h != holders_.end() && h->second.worker_id == identity) {
      holders_.erase(h);
    }
    if (auto r = reserved_.find(exec_id); r != reserved_.end() && r->second.worker_id == identity) {
      reserved_.erase(r);  // never sent: the scheduler requeues it with the rest
    }
  }
  routes_.erase(it->second.route);
  workers_.erase(it);
  // A worker that said BYE with nothing running left cleanly: not a warning.
  const bool clean = bye && gone.execs.empty();
  LogEvent(clean ? spdlog::level::info : spdlog::level::warn, "worker_gone",
           {{"worker_id", identity}, {"count", gone.execs.size()}, {"reason", reason}},
           "{}; {} executions handed back", reason, gone.execs.size());
  out->gone.push_back(std::move(gone));
  roster_changed_ = true;
  return true;
}

void DispatcherCore::AlertLost(const WorkerGone& gone) {
  options_.metrics->workers_lost.Inc();
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
    NoteLoss(lost.worker_id);
    AlertLost(out->gone.back());
  }
}

void DispatcherCore::OnSendFailed(const std::string& identity, DispatcherOutput* out) {
  auto route = routes_.find(identity);
  if (route == routes_.end()) return;
  const std::string id = route->second;
  if (Forget(id, "worker " + id + " lost: its connection is gone (send failed)", out)) {
    NoteLoss(id);
    AlertLost(out->gone.back());
  }
}

void DispatcherCore::NoteLoss(const std::string& id) {
  auto [it, fresh] = losses_.try_emplace(id, 0);
  ++it->second;
  if (!fresh) return;
  loss_order_.push_back(id);
  if (loss_order_.size() > kMaxRemembered) {
    losses_.erase(loss_order_.front());
    loss_order_.pop_front();
  }
}

const std::string* DispatcherCore::RouteOf(const std::string& id) const {
  auto w = workers_.find(id);
  return w == workers_.end() ? nullptr : &w->second.route;
}

void DispatcherCore::Place(DispatcherOutput* out) {
  const Micros now = clock_->Now();
  claims_.ReleaseDue(clock_->Steady(), &out->gone);  // orphans nobody claimed in time
  if (ready_.size() == 0 || placement_paused_) return;
  std::vector<engine::WorkerView> views;  // workers of the group with credit
  std::vector<Worker*> by_view;
  const std::string* group = nullptr;
  ready_.Visit(
      [&](const std::string& g) {
        group = &g;
        CandidateViews(g, &views, &by_view);
        return !views.empty();
      },
      [&](QueuedExec& exec) {
        if (views.empty()) return ReadyQueue::Offer::kStop;
        const int pick = engine::PickWorker(views, *group, exec.labels);
        // No worker with credit has all its labels; one behind it may fit.
        if (pick < 0) return ReadyQueue::Offer::kSkip;
        Worker& w = *by_view[pick];
        Reserve(w, exec, now, out);
        engine::WorkerView& v = views[pick];
        v.credits = w.credits;
        v.running = static_cast<uint32_t>(w.running.size());
        v.expected_busy = w.expected_busy_ms * kMicrosPerMilli;
        if (v.credits == 0) {
          views.erase(views.begin() + pick);
          by_view.erase(by_view.begin() + pick);
        }
        return ReadyQueue::Offer::kTake;
      });
  out->placed.at = now;
}

void DispatcherCore::CandidateViews(const std::string& group,
                                    std::vector<engine::WorkerView>* views,
                                    std::vector<Worker*>* by_view) {
  views->clear();
  by_view->clear();
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
    views->push_back(std::move(v));
    by_view->push_back(&w);
  }
}

void DispatcherCore::Reserve(Worker& w, QueuedExec& exec, Micros now, DispatcherOutput* out) {
  exec.dispatch.epoch = options_.epoch;
  // Reserved, not sent: the DISPATCH leaves once the scheduler has
  // journaled READY -> RUNNING (OnRelease).
  Reservation& res = reserved_[exec.dispatch.exec_id];
  res.worker_id = w.id;
  res.attempt = exec.dispatch.attempt;
  res.frame.clear();
  transport::Encode(transport::ToWire(transport::MsgType::kDispatch), exec.dispatch, &res.frame);
  Hold(w, exec.dispatch.exec_id, exec.dispatch.attempt, exec.expected_ms);
  --w.credits;
  out->placed.placed.push_back({w.id, exec.dispatch.exec_id, exec.dispatch.attempt});
  options_.metrics->dispatch_latency.Observe((now - exec.ready_at) / 1e6);
}

void DispatcherCore::PublishGauges() {
  observability::CoordinatorMetrics* m = options_.metrics;
  const Micros now = clock_->Steady();
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
    // Slots holding no execution (credit also counts the worker's queue,
    // --prefetch, so it can exceed its slots).
    free += w.slots > w.running.size() ? w.slots - w.running.size() : 0;
  }
  m->tasks_waiting.Set(static_cast<int64_t>(ready_.size()));
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
  for (auto& [id, w] : workers_) Send(w.route, transport::MsgType::kHeartbeat, hb, out);
}

void DispatcherCore::Probe(DispatcherOutput* out) {
  for (auto& [id, w] : workers_) {
    if (w.running.empty()) continue;
    transport::Probe probe;
    for (const auto& [exec_id, attempt] : w.running) {
      if (reserved_.count(exec_id) == 0) probe.execs.push_back({exec_id, attempt});  // not sent yet
    }
    if (probe.execs.empty()) continue;
    Send(w.route, transport::MsgType::kProbe, probe, out);
  }
}

WorkersSeen DispatcherCore::Seen() const {
  WorkersSeen seen;
  for (const auto& [id, w] : workers_) seen.workers.push_back({id, w.last_heard});
  return seen;
}

std::vector<WorkerSnapshot> DispatcherCore::Snapshot() const {
  std::vector<WorkerSnapshot> out;
  for (const auto& [id, w] : workers_) {
    auto lost = losses_.find(id);
    out.push_back({id, w.group, w.slots, w.credits, static_cast<uint32_t>(w.running.size()),
                   w.last_seen, w.expected_busy_ms, w.labels, w.joined_at,
                   lost == losses_.end() ? 0 : lost->second, w.prefetch});
  }
  return out;
}

}  // namespace apollo11::actors
