#include "actors/worker_actor.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <random>
#include <vector>

#include "actors/actor_loop.h"
#include "actors/orphan_guard.h"
#include "common/log_event.h"
#include "transport/coordinator_endpoints.h"

namespace apollo11::actors {
namespace {

using std::chrono::milliseconds;

// This process's socket identity: WORKER_ID/NONCE, the same for every
// reconnect of this process and different for any other process, so the
// coordinator tells a restarted worker or a second one with the same id
// apart from this one reconnecting.
std::string ProcessRoute(const std::string& worker_id) {
  std::random_device entropy;
  char nonce[17];
  std::snprintf(nonce, sizeof(nonce), "%08x%08x", entropy(), entropy());
  return worker_id + "/" + nonce;
}

Result<zmq::socket_t> Dial(zmq::context_t& ctx, const WorkerConfig& config,
                           const std::string& route, const std::string& endpoint) {
  zmq::socket_t dealer(ctx, zmq::socket_type::dealer);
  transport::SocketOptions options;
  options.immediate = true;
  // A coordinator that takes over rebinds its port: the worker is back
  // within ~20-40 ms (issue 36: HELLO within 100 ms of an election). A port
  // that stays closed is retried at 20, 40, 80, then every 100 ms (libzmq's
  // own pace): a longer back-off would let a coordinator that starts up
  // later wait for its workers past its claim window.
  options.reconnect_ivl_ms = 20;
  options.reconnect_ivl_max_ms = 100;
  APOLLO11_RETURN_IF_ERROR(transport::ConfigureDealer(dealer, route, options));
  if (config.curve) {
    APOLLO11_RETURN_IF_ERROR(
        transport::ConfigureCurveClient(dealer, *config.curve, config.server_public));
  }
  APOLLO11_RETURN_IF_ERROR(transport::Connect(dealer, endpoint));
  return dealer;
}

// The worker's cgroup directory name: its id (file-name safe) and a hash of
// its outbox path, so two workers with one id in different state dirs never
// share it, and the same worker restarted finds its own.
std::string ContainmentName(const std::string& worker_id, const std::string& outbox_dir) {
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : outbox_dir) h = (h ^ c) * 1099511628211ull;
  std::string id = worker_id.substr(0, 64);
  for (char& c : id) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') c = '_';
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(h));
  return "apollo11-worker-" + id + "-" + hex;
}

// Sends what the core queued. Frames that cannot go out (no coordinator
// connected) are dropped: the core keeps every RESULT until it is ACKed and
// resends it, and HELLO re-announces credit after a reconnect. Returns false
// when a frame was dropped.
bool SendQueued(zmq::socket_t& dealer, WorkerCore& core) {
  bool all_sent = true;
  for (const std::string& frame : core.outbox()) {
    Status s = transport::Send(dealer, frame, /*dontwait=*/true);
    if (!s.ok()) {
      spdlog::debug("worker: frame not sent: {}", s.message());
      all_sent = false;
    }
  }
  core.outbox().clear();
  return all_sent;
}

// The worker's loop. Run returns Ok when its parent stopped it, else why it
// ended (the supervisor records that, and the node exits with it).
class WorkerLoop {
 public:
  WorkerLoop(transport::ActorPipe& pipe, zmq::context_t* ctx, const Clock* clock,
             WorkerConfig config)
      : pipe_(pipe), ctx_(ctx), clock_(clock), config_(std::move(config)) {}

  Status Run() {
    Status opened = Open();
    pipe_.SignalReady(opened);
    if (!opened.ok()) return opened;
    core_->Hello();
    Flush();
    for (;;) {
      bool term = false;
      APOLLO11_RETURN_IF_ERROR(Wait(&term));
      if (term) return Status::Ok();
      APOLLO11_RETURN_IF_ERROR(Turn());
    }
  }

 private:
  // Everything the loop needs before it says it is ready: the dealer, the
  // outbox, the stopped leftovers of a killed predecessor, the executor.
  Status Open() {
    SetLogNode(config_.worker.worker_id);  // log lines name the worker, also in a role=all node
    config_.worker.coordinator_endpoint = config_.coordinator_endpoint;
    // One connection to each coordinator; frames go to the leader only.
    auto endpoints = transport::ParseEndpointList(config_.coordinator_endpoint, "--connect");
    if (!endpoints.ok()) return endpoints.status();
    for (const std::string& endpoint : *endpoints) {
      auto dialed = Dial(*ctx_, config_, route_, endpoint);
      if (!dialed.ok()) return dialed.status();
      dealers_.push_back(std::move(*dialed));
    }
    if (!config_.outbox_dir.empty()) {
      auto opened = storage::Outbox::Open(config_.outbox_dir);
      if (!opened.ok()) return opened.status();
      outbox_ = std::move(*opened);
    }
    // Before anything runs or the coordinator hears of us: what a killed
    // previous process of this worker left running would otherwise run
    // beside the copies the coordinator requeues.
    orphans_ = std::make_unique<OrphanGuard>(outbox_.get(), config_.worker.worker_id);
    orphans_->StopLeftovers();
    if (config_.executor.containment_name.empty() && !config_.outbox_dir.empty()) {
      config_.executor.containment_name =
          ContainmentName(config_.worker.worker_id, config_.outbox_dir);
    }
    executor_ = std::make_unique<executor::Executor>(config_.executor, *clock_, orphans_.get());
    orphans_->StopCgroupLeftovers(*executor_);
    spdlog::info("worker {}: task processes contained by {}", config_.worker.worker_id,
                 executor_->containment());
    if (!config_.worker.node_log_file.empty()) {
      node_log_ = std::make_unique<FileNodeLogReader>(config_.worker.node_log_file);
    }
    core_ = std::make_unique<WorkerCore>(executor_.get(), clock_, config_.worker, outbox_.get(),
                                         node_log_.get());
    return Status::Ok();
  }

  // Polls until something arrives or a timer is due; reads the pipe.
  Status Wait(bool* term) {
    items_.clear();
    items_.push_back(pipe_.PollItem());
    const size_t current = core_->coordinators().current();
    for (size_t i = 0; i < dealers_.size(); ++i) {
      const bool out = hello_unsent_ && i == current;
      items_.push_back(
          {dealers_[i].handle(), 0, static_cast<short>(ZMQ_POLLIN | (out ? ZMQ_POLLOUT : 0)), 0});
    }
    executor_->AppendPollItems(&items_);
    // The core's and the executor's timers run on the steady clock.
    milliseconds wait = UntilMs(clock_->Steady(), core_->NextTick(), milliseconds(1000));
    wait = std::min(wait, UntilMs(clock_->Steady(), executor_->NextDeadline(), milliseconds(1000)));
    auto polled = transport::Poll(items_, wait);
    if (!polled.ok()) return polled.status();
    if (Readable(items_[0]) &&
        !DrainSocket(pipe_.socket(), "worker", &env_, [&](const transport::Envelope& e) {
          *term = *term || pipe_.IsTerm(e);
          if (e.type == static_cast<uint16_t>(InternalType::kDrain)) core_->StartDrain();
        })) {
      return ContextTerminated();
    }
    return Status::Ok();
  }

  Status Turn() {
    // The dealer is ZMQ_IMMEDIATE: until its connection is up (a moment after
    // connect, even to a coordinator in this process), sends fail and the
    // frames are dropped. A HELLO dropped that way is said again as soon as
    // the dealer becomes writable, rather than a heartbeat later.
    if (hello_unsent_ && (items_[1 + core_->coordinators().current()].revents & ZMQ_POLLOUT) != 0) {
      hello_unsent_ = false;
      core_->Hello();
      Flush();
    }
    for (size_t from = 0; from < dealers_.size(); ++from) {
      for (int i = 0; Readable(items_[1 + from]) && i < kMaxFramesPerTurn; ++i) {
        auto msg = transport::Recv(dealers_[from], /*dontwait=*/true);
        if (!msg.ok()) {
          if (transport::IsContextTerminated(msg.status())) return ContextTerminated();
          break;
        }
        core_->OnFrame(msg->data(), msg->size(), from);
      }
      // What the frames asked for goes to the coordinator that is current
      // now, before the next connection's frames may change it.
      Flush();
    }
    finished_.clear();
    executor_->Process(clock_->Steady(), &finished_);
    if (!finished_.empty()) core_->OnFinished(finished_);
    core_->EndTurn();
    if (core_->Tick()) Reconnect();
    Flush();
    if (!core_->refusal().empty()) {
      return Status::InvalidInput("refused by the coordinator: " + core_->refusal());
    }
    if (core_->Drained() && !drained_reported_) ReportDrained();
    return Status::Ok();
  }

  // The coordinator went quiet (the core moved on to the next one, if
  // any): a fresh socket to the one now current (a new connection, not
  // libzmq's silent reconnect) and HELLO again. Tasks keep running.
  void Reconnect() {
    const size_t current = core_->coordinators().current();
    const std::string& endpoint = core_->coordinators().current_endpoint();
    spdlog::warn("worker {}: coordinator silent for {} heartbeats; reconnecting to {}",
                 config_.worker.worker_id, config_.worker.liveness, endpoint);
    auto again = Dial(*ctx_, config_, route_, endpoint);
    if (again.ok()) dealers_[current] = std::move(*again);
    core_->Hello();
  }

  zmq::socket_t& Current() { return dealers_[core_->coordinators().current()]; }

  void ReportDrained() {
    core_->Bye();
    SendQueued(Current(), *core_);
    // Give BYE a moment to leave when the socket closes (LINGER is 0
    // everywhere else so that shutdown never hangs).
    Current().set(zmq::sockopt::linger, 500);
    (void)pipe_.Send(static_cast<uint16_t>(InternalType::kDrain), transport::Bye{});
    drained_reported_ = true;
  }

  void Flush() {
    if (!SendQueued(Current(), *core_) && core_->awaiting_hello_reply()) hello_unsent_ = true;
    // WATCHes to the other coordinators: one that is not connected misses
    // one, and the next heartbeat sends another.
    for (const auto& [i, frame] : core_->watch_outbox()) {
      if (i < dealers_.size()) (void)transport::Send(dealers_[i], frame, /*dontwait=*/true);
    }
    core_->watch_outbox().clear();
  }

  transport::ActorPipe& pipe_;
  zmq::context_t* ctx_;
  const Clock* clock_;
  WorkerConfig config_;
  const std::string route_ = ProcessRoute(config_.worker.worker_id);
  std::vector<zmq::socket_t> dealers_;  // one per --connect endpoint, in its order
  std::unique_ptr<storage::Outbox> outbox_;
  std::unique_ptr<OrphanGuard> orphans_;
  std::unique_ptr<executor::Executor> executor_;
  std::unique_ptr<FileNodeLogReader> node_log_;
  std::unique_ptr<WorkerCore> core_;  // declared last: destroyed first
  bool hello_unsent_ = false;
  bool drained_reported_ = false;
  transport::Envelope env_;
  std::vector<zmq::pollitem_t> items_;
  std::vector<executor::ExecOutcome> finished_;
};

}  // namespace

Result<std::unique_ptr<WorkerActor>> WorkerActor::Start(zmq::context_t& ctx, const Clock* clock,
                                                        WorkerConfig config) {
  std::unique_ptr<WorkerActor> w(new WorkerActor());
  auto actor = transport::Actor::Start(
      ctx, "worker",
      w->supervisor_->Supervise("worker",
                                [ctx_ptr = &ctx, clock, config](transport::ActorPipe& pipe) {
                                  return WorkerLoop(pipe, ctx_ptr, clock, config).Run();
                                }));
  if (!actor.ok()) return actor.status();
  w->actor_ = std::move(*actor);
  return w;
}

WorkerActor::~WorkerActor() { Stop(); }

bool WorkerActor::Drain(milliseconds timeout) {
  if (!actor_) return true;
  Status s = actor_->Send(static_cast<uint16_t>(InternalType::kDrain), transport::Bye{});
  bool drained = false;
  if (s.ok()) {
    auto reply = actor_->Recv(timeout);
    drained = reply.ok() && reply->type == static_cast<uint16_t>(InternalType::kDrain);
  }
  Stop();
  return drained;
}

void WorkerActor::Stop() {
  if (!actor_) return;
  Status s = actor_->Stop(milliseconds(10000));
  if (!s.ok()) spdlog::error("stopping worker: {}", s.message());
  actor_.reset();
}

}  // namespace apollo11::actors
