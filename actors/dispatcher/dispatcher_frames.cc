// DispatcherCore's side of the worker protocol: OnWorkerFrame decodes a
// frame once, looks up the action the state/event table (worker_protocol.h)
// gives for the sender's state and the message type, and calls the one
// handler for it. Split from dispatcher_core.cc, which holds the scheduler's
// side (enqueue, release, acks, cancels), placement and the timers.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <unordered_map>

#include "actors/dispatcher/dispatcher_core.h"
#include "common/log_event.h"

namespace apollo11::actors {

// A peer-supplied string (identity, exec id) fit for a log line: printable
// ASCII kept, the rest as \xNN, cut after 128 bytes.
std::string Printable(const std::string& id) {
  constexpr size_t kMaxShown = 128;
  std::string out;
  for (unsigned char c : id.substr(0, kMaxShown)) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    }
  }
  if (id.size() > kMaxShown) out += "...";
  return out;
}

void CapText(std::string* text, size_t max) {
  if (text->size() <= max) return;
  const std::string note = " [cut: " + std::to_string(text->size()) + " bytes]";
  size_t keep = max > note.size() ? max - note.size() : 0;
  while (keep > 0 && (static_cast<unsigned char>((*text)[keep]) & 0xC0) == 0x80) --keep;
  text->resize(keep);
  *text += note;
}

void DispatcherCore::OnWorkerFrame(const std::string& identity, const void* data, size_t size,
                                   DispatcherOutput* out) {
  OnWorkerFrame(identity, transport::PeerAuth{}, data, size, out);
}

void DispatcherCore::OnWorkerFrame(const std::string& identity, const transport::PeerAuth& peer,
                                   const void* data, size_t size, DispatcherOutput* out) {
  transport::Envelope decoded;
  Status decode = transport::DecodeEnvelopeInto(data, size, &decoded);
  if (!decode.ok()) {
    ++dropped_frames_;
    if (!transport::IsOtherProtocolVersion(decoded)) {
      spdlog::warn("dropped a malformed frame from peer {} ({} bytes): {}", Printable(identity),
                   size, decode.message());
    } else {
      if (other_version_peers_.size() < kMaxRemembered &&
          other_version_peers_.insert(identity).second) {  // once per peer, while few
        spdlog::error("peer {} speaks another protocol version; its frames are dropped: {}",
                      Printable(identity), decode.message());
      }
      TellOtherVersion(identity, decoded.version, out);
    }
    return;
  }
  if (!other_version_peers_.empty()) other_version_peers_.erase(identity);
  const transport::Envelope* envelope = &decoded;
  Worker* w = WorkerAt(identity);
  Frame frame{identity, w, *envelope, peer};
  if (envelope->type == transport::ToWire(transport::MsgType::kWatch)) {
    return OnWatch(frame, out);  // before Admitted: a standby takes it too
  }
  if (!Admitted(frame, out)) return;
  const WorkerState state = w ? WorkerState::kRegistered : WorkerState::kUnregistered;
  const WorkerAction action = DecideWorkerAction(state, envelope->type);
  if (w != nullptr && action != WorkerAction::kRegister) Touch(*w);
  bool ok = true;
  switch (action) {
    case WorkerAction::kRegister:
      ok = OnHello(frame, out);
      if (!ok) {
        ++dropped_frames_;
        return;
      }
      break;
    case WorkerAction::kCredit:
      ok = OnCredit(frame);
      break;
    case WorkerAction::kStarted:
      ok = OnStarted(frame, out);
      break;
    case WorkerAction::kResult:
      ok = OnResult(frame, out);
      break;
    case WorkerAction::kHeartbeat:
      break;  // liveness only: Touch did it
    case WorkerAction::kProbeReply:
      ok = OnProbeReply(frame, out);
      break;
    case WorkerAction::kLogReply:
      ok = OnLogReply(frame, out);
      break;
    case WorkerAction::kWatch:
      break;  // taken before Admitted (OnWatch)
    case WorkerAction::kBye: {
      const std::string id = w->id;  // Forget destroys *w
      Forget(id, "worker " + id + " left (BYE)", out, /*bye=*/true);
      break;
    }
    case WorkerAction::kAskHello:
    case WorkerAction::kRefuse:
      Refuse(frame, state, action, out);
      return;
  }
  if (!ok) {
    ++dropped_frames_;
    spdlog::warn("dropped an unreadable {} frame from worker {}",
                 transport::MsgTypeName(envelope->type), Printable(identity));
  }
}

void DispatcherCore::Touch(Worker& w) {
  const Micros steady = clock_->Steady();
  if (w.last_heard != 0) {
    const Micros gap = steady - w.last_heard;
    min_gap_ = min_gap_ == 0 ? gap : std::min(min_gap_, gap);
    max_gap_ = std::max(max_gap_, gap);
  }
  w.last_heard = steady;
  w.last_seen = clock_->Now();
}

void DispatcherCore::Refuse(const Frame& f, WorkerState state, WorkerAction action,
                            DispatcherOutput* out) {
  const char* type = transport::MsgTypeName(f.envelope.type);
  if (action == WorkerAction::kAskHello) {
    // Not registered (its HELLO was lost, or the coordinator restarted): a
    // heartbeat marked unregistered makes it say HELLO again.
    CountRefusal(observability::WorkerRefusal::kUnregistered, [&] {
      return fmt::format("refused a {} frame from unregistered peer {}: asked it to say HELLO",
                         type, Printable(f.identity));
    });
    AskHello(f.identity, out);
    return;
  }
  ++dropped_frames_;
  CountRefusal(observability::WorkerRefusal::kUnexpected, [&] {
    return fmt::format("dropped an unexpected {} frame from {} worker {}", type, ToString(state),
                       Printable(f.identity));
  });
}

bool DispatcherCore::CountRefusal(observability::WorkerRefusal reason, uint64_t* suppressed) {
  ++refused_frames_;
  options_.metrics->WorkerFrameRefused(reason);
  return refusal_log_.Allow(clock_->Steady(), suppressed);
}

bool DispatcherCore::HeldByAnother(Worker& w, const std::string& exec_id, uint32_t attempt) {
  // A recovered execution reported straight away is claimed first.
  Claim(w.id, &w, exec_id, attempt);
  if (const std::string* owner = claims_.Owner(exec_id, attempt)) return *owner != w.id;
  auto h = holders_.find(exec_id);
  return h != holders_.end() && h->second.attempt == attempt && h->second.worker_id != w.id;
}

void DispatcherCore::AskHello(const std::string& identity, DispatcherOutput* out) {
  transport::Heartbeat hb;
  hb.epoch = options_.epoch;
  hb.registered = false;
  Send(identity, transport::MsgType::kHeartbeat, hb, out);
}

std::vector<transport::Probe> DispatcherCore::RejoinProbes(Worker& w,
                                                           const transport::Hello& hello) {
  // A rejoin (restarted, or reconnected after a silence). Executions we
  // placed there that its HELLO does not list are not lost yet: a DISPATCH we
  // sent after it reconnected may still be on its way, behind this HELLO. A
  // PROBE, which travels behind any such DISPATCH, asks; what it does not
  // hold then is handed back (OnProbeReply).
  std::unordered_map<std::string, uint32_t> still;
  for (const auto& ref : hello.running) still[ref.exec_id] = ref.attempt;
  transport::Probe probe;
  for (const auto& [exec_id, attempt] : w.running) {
    auto st = still.find(exec_id);
    if (st != still.end() && st->second == attempt) continue;
    if (reserved_.count(exec_id)) continue;  // not sent yet: it will be, to the new process
    probe.execs.push_back({exec_id, attempt});
    w.rejoined.insert(exec_id);
  }
  if (probe.execs.empty()) return {};
  std::vector<transport::Probe> probes;
  probes.push_back(std::move(probe));
  return probes;
}

bool DispatcherCore::OnCredit(const Frame& f) {
  auto credit = transport::BodyAs<transport::Credit>(f.envelope);
  if (!credit.ok()) return false;
  Worker& w = *f.worker;
  // Never more credit than free capacity (slots + prefetch): a confused
  // worker cannot flood us.
  uint32_t busy = static_cast<uint32_t>(w.running.size());
  uint32_t free = w.capacity() > busy ? w.capacity() - busy : 0;
  w.credits = std::min(free, w.credits + credit->credits);
  return true;
}

bool DispatcherCore::OnStarted(const Frame& f, DispatcherOutput* out) {
  auto started = transport::BodyAs<transport::Started>(f.envelope);
  if (!started.ok()) return false;
  if (HeldByAnother(*f.worker, started->exec_id, started->attempt)) {
    CountRefusal(observability::WorkerRefusal::kNotHolder, [&] {
      return fmt::format(
          "refused STARTED for {} attempt {} from worker {}: another worker holds it",
          Printable(started->exec_id), started->attempt, f.worker->id);
    });
    return true;
  }
  out->started.items.push_back({f.worker->id, std::move(*started)});
  return true;
}

bool DispatcherCore::OnResult(const Frame& f, DispatcherOutput* out) {
  auto result = transport::BodyAs<transport::ResultMsg>(f.envelope);
  if (!result.ok()) return false;
  Worker& w = *f.worker;
  // Only the holder's report counts. One that no worker holds (a resend
  // after its ACK was lost, a stale attempt) goes on: the scheduler ACKs it
  // so the resending stops, and changes nothing.
  if (HeldByAnother(w, result->exec_id, result->attempt)) {
    CountRefusal(observability::WorkerRefusal::kNotHolder, [&] {
      return fmt::format("refused RESULT for {} attempt {} from worker {}: another worker holds it",
                         Printable(result->exec_id), result->attempt, w.id);
    });
    return true;
  }
  CapText(&result->error, kMaxResultErrorBytes);
  CapText(&result->stderr_tail, kMaxStderrTailBytes);
  auto r = w.running.find(result->exec_id);
  if (r != w.running.end() && r->second == result->attempt) Finish(w, result->exec_id);
  out->results.items.push_back({w.id, std::move(*result)});
  return true;
}

bool DispatcherCore::OnProbeReply(const Frame& f, DispatcherOutput* out) {
  auto reply = transport::BodyAs<transport::ProbeReply>(f.envelope);
  if (!reply.ok()) return false;
  Worker& w = *f.worker;
  const std::string& identity = w.id;
  WorkerGone lost, restarted;
  lost.worker_id = restarted.worker_id = identity;
  lost.reason =
      "reconciliation: worker " + identity + " does not hold it (a dispatch or report was lost)";
  restarted.reason = "worker " + identity + " rejoined without it (restarted)";
  for (const transport::ProbeState& st : reply->states) {
    auto r = w.running.find(st.exec_id);
    if (r == w.running.end() || r->second != st.attempt) continue;
    const bool after_rejoin = w.rejoined.erase(st.exec_id) > 0;
    if (st.state != 0) continue;  // it holds it: nothing to repair
    (after_rejoin ? restarted : lost).execs.push_back({st.exec_id, st.attempt});
    Finish(w, st.exec_id);
    // The slot it was sent to is free after all.
    if (w.credits + w.running.size() < w.capacity()) ++w.credits;
  }
  for (WorkerGone* gone : {&restarted, &lost}) {
    if (gone->execs.empty()) continue;
    LogEvent(spdlog::level::warn, "executions_handed_back",
             {{"worker_id", identity}, {"count", gone->execs.size()}, {"reason", gone->reason}},
             "{}: {} executions handed back", gone->reason, gone->execs.size());
    out->gone.push_back(std::move(*gone));
  }
  return true;
}

bool DispatcherCore::OnLogReply(const Frame& f, DispatcherOutput* out) {
  auto reply = transport::BodyAs<transport::LogReply>(f.envelope);
  if (!reply.ok()) return false;
  // Only the worker asked answers: another one's reply would be shown as
  // the asked worker's log.
  auto asked = log_requests_.find(reply->request_id);
  if (asked == log_requests_.end() || asked->second != f.worker->id) {
    CountRefusal(observability::WorkerRefusal::kNotHolder, [&] {
      return fmt::format("refused LOG_REPLY {} from worker {}: not asked of it", reply->request_id,
                         f.worker->id);
    });
    return true;
  }
  log_requests_.erase(asked);
  out->logs.push_back({std::move(*reply)});
  return true;
}

void DispatcherCore::Finish(Worker& w, const std::string& exec_id) {
  w.running.erase(exec_id);
  if (auto h = holders_.find(exec_id); h != holders_.end() && h->second.worker_id == w.id) {
    holders_.erase(h);
  }
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

void DispatcherCore::OnWatch(const Frame& f, DispatcherOutput* out) {
  if (options_.require_worker_role && !transport::Allows(f.peer.roles, transport::Action::kWork)) {
    ++dropped_frames_;  // only a worker's key may be announced to
    return;
  }
  auto watch = transport::BodyAs<transport::Watch>(f.envelope);
  if (!watch.ok() || !IsValidWorkerId(watch->worker_id)) {
    ++dropped_frames_;
    return;
  }
  if (options_.watchers != nullptr) {
    options_.watchers->Heard(watch->worker_id, f.identity, clock_->Steady());
  }
  if (options_.standby || f.worker != nullptr || watch->epoch_seen > options_.epoch) return;
  // A heartbeat of this term (not "unregistered", which would make the
  // worker drop its queue: nothing of it was requeued here; the claim
  // window holds what the journal places on it).
  transport::Heartbeat hb;
  hb.epoch = options_.epoch;
  Send(f.identity, transport::MsgType::kHeartbeat, hb, out);
}

void DispatcherCore::StartAnnouncing(Micros heard_since, Micros until) {
  if (options_.standby || options_.watchers == nullptr) return;
  to_announce_ = options_.watchers->RoutesHeardSince(heard_since);
  announce_until_ = until;
  if (to_announce_.empty()) return;
  LogEvent(spdlog::level::info, "leader_announcing",
           {{"epoch", options_.epoch}, {"workers", to_announce_.size()}},
           "announcing epoch {} to {} workers that watched this coordinator", options_.epoch,
           to_announce_.size());
}

void DispatcherCore::Announce(Micros now, DispatcherOutput* out) {
  if (to_announce_.empty()) return;
  if (now > announce_until_) {
    spdlog::info("{} watching workers did not reconnect in time to hear of epoch {}",
                 to_announce_.size(), options_.epoch);
    to_announce_.clear();
    return;
  }
  transport::Heartbeat hb;
  hb.epoch = options_.epoch;
  std::erase_if(to_announce_, [&](const std::string& route) {
    // The probe of `connected` is itself a HEARTBEAT of this term, which the
    // worker follows (a newer term makes it say HELLO).
    if (options_.connected) return options_.connected(route);
    Send(route, transport::MsgType::kHeartbeat, hb, out);
    return true;
  });
}

}  // namespace apollo11::actors
