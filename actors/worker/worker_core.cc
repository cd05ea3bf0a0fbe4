#include "actors/worker/worker_core.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "common/log_event.h"
#include "common/wire_limits.h"
#include "dsl/pipeline.h"
#include "dsl/task_fields.h"
#include "ha/not_leader.h"
#include "transport/coordinator_endpoints.h"

namespace apollo11::actors {
namespace {

transport::Outcome ToWire(executor::ExecOutcomeKind kind) {
  switch (kind) {
    case executor::ExecOutcomeKind::kSuccess:
      return transport::Outcome::kSuccess;
    case executor::ExecOutcomeKind::kFailed:
      return transport::Outcome::kFailed;
    case executor::ExecOutcomeKind::kTimeout:
      return transport::Outcome::kTimeout;
    case executor::ExecOutcomeKind::kCanceled:
      return transport::Outcome::kCanceled;
    case executor::ExecOutcomeKind::kAlreadyDone:
      return transport::Outcome::kAlreadyDone;
    case executor::ExecOutcomeKind::kRejected:
      return transport::Outcome::kRejected;
  }
  return transport::Outcome::kFailed;
}

std::vector<std::string> CoordinatorList(const std::string& text) {
  auto list = transport::ParseEndpointList(text, "--connect");
  if (list.ok()) return std::move(*list);
  return {text};
}

}  // namespace

WorkerCore::WorkerCore(executor::TaskRunner* runner, const Clock* clock, WorkerOptions options,
                       storage::Outbox* outbox, const NodeLogReader* node_log)
    : runner_(runner),
      clock_(clock),
      store_(outbox),
      logs_(runner, node_log, options.worker_id),
      options_(std::move(options)),
      run_slots_(options_.slots),
      depth_(options_.adapt_prefetch
                 ? QueueDepth::Adaptive(options_.slots, PrefetchFloor(options_.slots),
                                        options_.prefetch)
                 : QueueDepth::Fixed(options_.slots, options_.prefetch)),
      follower_(CoordinatorList(options_.coordinator_endpoint)) {
  last_heard_ = clock_->Steady();
  last_heartbeat_ = last_heard_;
  last_frame_ = last_heard_;
  if (!options_.metrics) options_.metrics = observability::WorkerMetrics::Inert();
  options_.metrics->slots.Set(options_.slots);
  options_.metrics->queue_depth.Set(depth_.depth());
  if (store_ == nullptr) return;
  auto stored = store_->LoadAll();
  if (!stored.ok()) {
    spdlog::error("worker {}: cannot read its outbox: {}", options_.worker_id,
                  stored.status().message());
    return;
  }
  for (const auto& [key, frame] : *stored) {
    auto result = transport::DecodeStoredResult(frame.data(), frame.size());
    if (!result.ok()) {
      spdlog::warn("worker {}: dropped an unreadable outbox entry: {}", options_.worker_id,
                   result.status().message());
      (void)store_->Erase(key);
      continue;
    }
    Entry& e = entries_[{result->exec_id, result->attempt}];
    e.finished = true;
    e.result = std::move(*result);
  }
  if (!entries_.empty()) {
    spdlog::info("worker {}: {} unacknowledged results restored from its outbox, to be resent",
                 options_.worker_id, entries_.size());
  }
}

std::string WorkerCore::OutboxKey(const Key& key) {
  return key.first + "\n" + std::to_string(key.second);
}

void WorkerCore::Report(const std::vector<Key>& keys) {
  const Micros now = clock_->Steady();
  std::vector<std::pair<std::string, std::string>> items;
  items.reserve(keys.size());
  for (const Key& key : keys) {
    Entry& e = entries_[key];
    e.last_sent = now;
    transport::FitResultToWire(&e.result);
    std::string frame;
    transport::Encode(static_cast<uint16_t>(transport::MsgType::kResult), e.result, &frame);
    if (store_ != nullptr) items.emplace_back(OutboxKey(key), frame);
    outbox_.push_back(std::move(frame));
  }
  if (store_ == nullptr) return;
  Status s = store_->Put(items);
  if (!s.ok()) {
    // Delivery goes on; only surviving a worker crash before the ACK is lost.
    spdlog::error("worker {}: could not store {} results in its outbox: {}", options_.worker_id,
                  items.size(), s.message());
  }
}

template <class T>
void WorkerCore::Send(transport::MsgType type, const T& body) {
  std::string frame;
  transport::Encode(static_cast<uint16_t>(type), body, &frame);
  outbox_.push_back(std::move(frame));
}
// Used by worker_core_queue.cc too.
template void WorkerCore::Send(transport::MsgType, const transport::Started&);
template void WorkerCore::Send(transport::MsgType, const transport::ResultMsg&);

void WorkerCore::GrantCredit(uint32_t freed) { SendCredit(depth_.OnFreed(freed)); }

void WorkerCore::SendCredit(uint32_t n) {
  if (n == 0) return;
  Send(transport::MsgType::kCredit, transport::Credit{n});
}

void WorkerCore::Hello() {
  ++hellos_;
  hello_deferred_ = false;
  transport::Hello hello;
  hello.worker_id = options_.worker_id;
  hello.group = options_.group;
  hello.slots = options_.slots;
  hello.labels = options_.labels;
  hello.prefetch = depth_.advertised();
  // Every attempt it holds, the finished ones apart (their RESULT follows): a
  // coordinator that took over hands back at once what a HELLO does not list.
  for (const auto& [key, entry] : entries_) {
    (entry.finished ? hello.finished : hello.running).push_back({key.first, key.second});
  }
  hello.lists_finished = true;
  Send(transport::MsgType::kHello, hello);
  SendCredit(depth_.OnHello(Held()));
  WatchOthers();
  // Results the previous coordinator (or connection) never acknowledged.
  const Micros now = clock_->Steady();
  for (auto& [key, entry] : entries_) {
    if (!entry.finished) continue;
    Send(transport::MsgType::kResult, entry.result);
    entry.last_sent = now;
  }
  last_heard_ = now;
  last_hello_ = now;
  heard_since_hello_ = false;
}

void WorkerCore::OnFrame(const void* data, size_t size, size_t from) {
  transport::Envelope decoded;
  const Status decode = transport::DecodeEnvelopeInto(data, size, &decoded);
  if (!decode.ok()) {
    ++dropped_frames_;
    if (transport::IsOtherProtocolVersion(decoded)) return OnOtherVersion(from, decode.message());
    spdlog::warn("worker {}: dropped a malformed frame ({} bytes): {}", options_.worker_id, size,
                 decode.message());
    return;
  }
  if (RefusedForVersion(decoded, from) || StaleRefusal(decoded)) return;
  const transport::Envelope* envelope = &decoded;
  const auto admit = follower_.OnFrame(from, *envelope, epoch_seen_);
  if (admit == CoordinatorFollower::Admit::kDrop) return;
  frame_from_ = from;
  // Another coordinator decides what the queue keeps (before the handler: a
  // DISPATCH or a HELLO's answer from it says so at once).
  switching_ = admit == CoordinatorFollower::Admit::kSwitchAndDeliver;
  if (switching_) hello_answered_ = false;
  const uint64_t hellos_before = hellos_;
  last_heard_ = clock_->Steady();
  last_frame_ = last_heard_;
  heard_since_hello_ = true;
  if (unreachable_said_) {
    unreachable_said_ = false;
    LogEvent(spdlog::level::info, "coordinator_connected",
             {{"endpoint", follower_.current_endpoint()}},
             "worker {}: connected to the coordinator at {}", options_.worker_id,
             follower_.current_endpoint());
  }

  // What a coordinator may send a worker, one handler each; a handler
  // returns false when the body does not decode.
  using Handler = bool (WorkerCore::*)(const transport::Envelope&);
  static constexpr std::pair<transport::MsgType, Handler> kHandlers[] = {
      {transport::MsgType::kDispatch, &WorkerCore::OnDispatchFrame},
      {transport::MsgType::kCancel, &WorkerCore::OnCancelFrame},
      {transport::MsgType::kAck, &WorkerCore::OnAckFrame},
      {transport::MsgType::kHeartbeat, &WorkerCore::OnHeartbeatFrame},
      {transport::MsgType::kProbe, &WorkerCore::OnProbeFrame},
      {transport::MsgType::kLogRequest, &WorkerCore::OnLogRequestFrame},
      {transport::MsgType::kRefused, &WorkerCore::OnRefusedFrame},
  };
  bool handled = false;
  for (const auto& [type, handler] : kHandlers) {
    if (envelope->type != static_cast<uint16_t>(type)) continue;
    handled = (this->*handler)(*envelope);
    break;
  }
  if (admit == CoordinatorFollower::Admit::kSwitchAndDeliver) Followed(hellos_before);
  if (handled) {
    StartQueued();  // held while the coordinator was silent: heard again
    return;
  }
  ++dropped_frames_;
  spdlog::warn("worker {}: dropped an unexpected or unreadable {} frame", options_.worker_id,
               transport::MsgTypeName(envelope->type));
}

bool WorkerCore::OnRefusedFrame(const transport::Envelope& envelope) {
  auto refused = transport::BodyAs<transport::Refused>(envelope);
  if (!refused.ok()) return false;
  if (auto leader = ha::ParseNotLeader(refused->reason)) {
    FollowLeader(*leader);
    return true;
  }
  refusal_ = refused->reason.empty() ? "no reason given" : refused->reason.substr(0, 1024);
  LogEvent(spdlog::level::err, "worker_refused", {{"reason", refusal_}},
           "worker {}: the coordinator refused it: {}", options_.worker_id, refusal_);
  return true;
}

bool WorkerCore::OnDispatchFrame(const transport::Envelope& envelope) {
  auto d = transport::BodyAs<transport::Dispatch>(envelope);
  if (!d.ok()) return false;
  if (d->epoch < epoch_seen_) {
    LogEvent(spdlog::level::warn, "dispatch_refused_old_epoch",
             {{"exec_id", d->exec_id},
              {"attempt", d->attempt},
              {"epoch", d->epoch},
              {"epoch_seen", epoch_seen_}},
             "worker {}: refused DISPATCH of {} from old epoch {} (seen {})", options_.worker_id,
             d->exec_id, d->epoch, epoch_seen_);
    return true;
  }
  epoch_seen_ = d->epoch;
  // A coordinator places work here only once it registered us, after the
  // CANCELs and the heartbeat that answer our HELLO: answered, too.
  hello_answered_ = true;
  OnDispatch(std::move(*d));
  return true;
}

bool WorkerCore::OnCancelFrame(const transport::Envelope& envelope) {
  auto c = transport::BodyAs<transport::Cancel>(envelope);
  if (!c.ok()) return false;
  if (c->epoch < epoch_seen_) return true;
  if (!CancelQueued({c->exec_id, c->attempt})) runner_->Cancel(c->exec_id, c->attempt);
  return true;
}

bool WorkerCore::OnAckFrame(const transport::Envelope& envelope) {
  auto a = transport::BodyAs<transport::Ack>(envelope);
  if (!a.ok()) return false;
  auto it = entries_.find({a->exec_id, a->attempt});
  if (it == entries_.end() || !it->second.finished) return true;
  if (store_ != nullptr) acked_.push_back(OutboxKey(it->first));
  entries_.erase(it);
  return true;
}

void WorkerCore::EndTurn() {
  if (acked_.empty()) return;
  Status s = store_->Erase(acked_);
  if (!s.ok()) spdlog::warn("worker {}: outbox: {}", options_.worker_id, s.message());
  acked_.clear();
}

bool WorkerCore::OnProbeFrame(const transport::Envelope& envelope) {
  auto probe = transport::BodyAs<transport::Probe>(envelope);
  if (!probe.ok()) return false;
  transport::ProbeReply reply;
  const Micros now = clock_->Steady();
  for (const transport::ExecRef& ref : probe->execs) {
    transport::ProbeState st{ref.exec_id, ref.attempt, 0};
    auto it = entries_.find({ref.exec_id, ref.attempt});
    if (it != entries_.end()) {
      st.state = it->second.finished ? 2 : 1;
      if (it->second.finished) {  // its report may have been lost: again
        Send(transport::MsgType::kResult, it->second.result);
        it->second.last_sent = now;
      }
    }
    reply.states.push_back(std::move(st));
  }
  Send(transport::MsgType::kProbeReply, reply);
  return true;
}

bool WorkerCore::OnLogRequestFrame(const transport::Envelope& envelope) {
  auto request = transport::BodyAs<transport::LogRequest>(envelope);
  if (!request.ok()) return false;
  auto entry = entries_.find({request->exec_id, request->attempt});
  const bool running = entry != entries_.end() && !entry->second.finished;
  Send(transport::MsgType::kLogReply, logs_.Answer(*request, running));
  return true;
}

void WorkerCore::OnFinished(std::vector<executor::ExecOutcome>& finished) {
  uint32_t freed = 0;
  std::vector<Key> done;
  for (executor::ExecOutcome& o : finished) {
    auto it = entries_.find({o.exec_id, o.attempt});
    if (it == entries_.end()) continue;
    done.push_back(it->first);
    Entry& e = it->second;
    e.finished = true;
    e.result.exec_id = std::move(o.exec_id);
    e.result.attempt = o.attempt;
    e.result.outcome = static_cast<uint8_t>(ToWire(o.kind));
    e.result.exit_code = o.exit_code;
    e.result.retryable = o.retryable;
    e.result.output_bytes = o.output_bytes;
    e.result.output = std::move(o.output);
    e.result.error = std::move(o.error);
    e.result.stderr_tail = std::move(o.stderr_tail);
    e.result.logs_truncated = std::move(o.logs_truncated);
    e.result.task_output = std::move(o.task_output);
    e.result.started_at = o.started_at;
    e.result.finished_at = o.finished_at;
    if (e.log_events) LogFinished(e.result);
    depth_.Observe(o.finished_at - o.started_at);
    ++freed;
  }
  // The next task starts before anything is reported or stored.
  StartQueued();
  Report(done);
  options_.metrics->Finished(freed, runner_->running());
  options_.metrics->queue_depth.Set(depth_.depth());
  GrantCredit(freed);
}

void WorkerCore::LogFinished(const transport::ResultMsg& r) const {
  const double seconds =
      r.finished_at > r.started_at ? static_cast<double>(r.finished_at - r.started_at) / 1e6 : 0.0;
  const char* event = "exited";
  switch (static_cast<transport::Outcome>(r.outcome)) {
    case transport::Outcome::kTimeout:
      event = "killed_timeout";
      break;
    case transport::Outcome::kCanceled:
      event = "killed_cancel";
      break;
    case transport::Outcome::kAlreadyDone:
      event = "precheck_already_done";
      break;
    default:
      break;
  }
  // A failing command is an ordinary outcome (the scheduler decides what it
  // means); a kill for overrunning its timeout deserves attention.
  LogEvent(r.outcome == static_cast<uint8_t>(transport::Outcome::kTimeout) ? spdlog::level::warn
                                                                           : spdlog::level::info,
           event,
           {{"exec_id", r.exec_id},
            {"attempt", r.attempt},
            {"exit_code", r.exit_code},
            {"duration_s", seconds},
            {"reason", r.error}},
           "{} attempt {} {} (exit {}, {:.3f}s){}{}", r.exec_id, r.attempt, event, r.exit_code,
           seconds, r.error.empty() ? "" : ": ", r.error);
}

void WorkerCore::LogHealth(Micros now) {
  const Micros every = options_.health_interval.count() * kMicrosPerMilli;
  if (every <= 0) return;
  if (next_health_ == 0) {  // the first Tick starts the clock
    next_health_ = now + every;
    return;
  }
  if (now < next_health_) return;
  next_health_ = now + every;
  const double silent_s = static_cast<double>(now - last_heard_) / 1e6;
  LogEvent(spdlog::level::info, "health",
           {{"worker_id", options_.worker_id},
            {"running", runner_->running()},
            {"queued", queue_.size()},
            {"slots", options_.slots},
            {"unacked_results", unacked_results()},
            {"coordinator_silent_s", silent_s}},
           "health: {} running of {} slots, {} results unacknowledged, coordinator last heard "
           "{:.3f}s ago",
           runner_->running(), options_.slots, unacked_results(), silent_s);
}

void WorkerCore::WarnIfUnreachable(Micros now, bool reconnecting) {
  const Micros interval = options_.heartbeat.count() * kMicrosPerMilli;
  if (unreachable_said_ || now - last_frame_ <= interval * options_.liveness) return;
  unreachable_said_ = true;
  if (reconnecting || SpeaksOtherVersion(follower_.current())) return;  // said already
  const double silent_s = static_cast<double>(now - last_frame_) / 1e6;
  LogEvent(spdlog::level::warn, "coordinator_unreachable",
           {{"endpoint", follower_.current_endpoint()}, {"silent_s", silent_s}},
           "worker {}: no answer from the coordinator at {} for {:.1f}s ({} heartbeats); is a "
           "coordinator running there, and is that its worker endpoint (--bind)? Still trying",
           options_.worker_id, follower_.current_endpoint(), silent_s, options_.liveness);
}

bool WorkerCore::Tick() {
  const Micros now = clock_->Steady();
  LogHealth(now);
  LogFolded(now);
  const Micros interval = options_.heartbeat.count() * kMicrosPerMilli;
  WarnIfUnreachable(now, now - last_heard_ > interval * options_.liveness);
  if (now - last_heartbeat_ >= interval) {
    transport::Heartbeat hb;
    hb.epoch = epoch_seen_;
    Send(transport::MsgType::kHeartbeat, hb);
    last_heartbeat_ = now;
  }
  if (now - last_watch_ >= WatchInterval()) WatchOthers();
  if (!heard_since_hello_ && now - last_hello_ >= interval) {
    // No answer to HELLO yet (sent before the coordinator was listening, or
    // lost): say it again rather than wait for the liveness timeout; with
    // several coordinators, to the next one (a live one answers at once).
    if (!hello_deferred_) FollowNext();
    hello_deferred_ = false;
    Hello();
    return false;
  }
  const Micros resend = options_.result_resend.count() * kMicrosPerMilli;
  for (auto& [key, entry] : entries_) {
    if (entry.finished && now - entry.last_sent >= resend) {
      Send(transport::MsgType::kResult, entry.result);
      entry.last_sent = now;
    }
  }
  if (now - last_heard_ <= interval * options_.liveness) return false;
  // The queue is kept, not started: the HELLO that follows lists it, and it
  // starts once a coordinator has answered that HELLO, after the CANCELs of
  // whatever it gave to another worker meanwhile (a new leader claims it).
  hello_answered_ = false;
  FollowNext();
  return true;
}

Micros WorkerCore::NextTick() const {
  Micros next = last_heartbeat_ + options_.heartbeat.count() * kMicrosPerMilli;
  if (follower_.size() > 1) next = std::min(next, last_watch_ + WatchInterval());
  const Micros resend = options_.result_resend.count() * kMicrosPerMilli;
  for (const auto& [key, entry] : entries_) {
    if (entry.finished) next = std::min(next, entry.last_sent + resend);
  }
  return next;
}

void WorkerCore::StartDrain() {
  if (draining_) return;
  draining_ = true;
  // No more credit; what is queued still runs (run_slots_ is kept).
  options_.slots = 0;
  depth_.Stop();
  options_.metrics->slots.Set(0);
  options_.metrics->queue_depth.Set(0);
  Hello();
}

bool WorkerCore::Drained() const { return draining_ && entries_.empty(); }

void WorkerCore::Bye() { Send(transport::MsgType::kBye, transport::Bye{}); }

size_t WorkerCore::unacked_results() const {
  size_t n = 0;
  for (const auto& [key, entry] : entries_) n += entry.finished ? 1 : 0;
  return n;
}

}  // namespace apollo11::actors
