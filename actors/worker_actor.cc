#include "actors/worker_actor.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <vector>

#include "actors/actor_loop.h"
#include "actors/orphan_guard.h"
#include "common/log_event.h"

namespace apollo11::actors {
namespace {

using std::chrono::milliseconds;

Result<zmq::socket_t> Dial(zmq::context_t& ctx, const WorkerConfig& config) {
  zmq::socket_t dealer(ctx, zmq::socket_type::dealer);
  transport::SocketOptions options;
  options.immediate = true;
  APOLLO11_RETURN_IF_ERROR(transport::ConfigureDealer(dealer, config.worker.worker_id, options));
  if (config.curve) {
    APOLLO11_RETURN_IF_ERROR(
        transport::ConfigureCurveClient(dealer, *config.curve, config.server_public));
  }
  APOLLO11_RETURN_IF_ERROR(transport::Connect(dealer, config.coordinator_endpoint));
  return dealer;
}

// Sends what the core queued. Frames that cannot go out (no coordinator
// connected) are dropped: the core keeps every RESULT until it is ACKed and
// resends it, and HELLO re-announces credit after a reconnect. Returns false
// when a frame was dropped.
bool Flush(zmq::socket_t& dealer, WorkerCore& core) {
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

// The worker's loop: Ok when its parent stopped it, else why it ended (the
// supervisor records that, and the node exits with it).
Status WorkerBody(transport::ActorPipe& pipe, zmq::context_t* ctx, const Clock* clock,
                  WorkerConfig config) {
  SetLogNode(config.worker.worker_id);  // log lines name the worker, also in a role=all node
  auto dialed = Dial(*ctx, config);
  if (!dialed.ok()) {
    pipe.SignalReady(dialed.status());
    return dialed.status();
  }
  zmq::socket_t dealer = std::move(*dialed);
  std::unique_ptr<storage::Outbox> outbox;
  if (!config.outbox_dir.empty()) {
    auto opened = storage::Outbox::Open(config.outbox_dir);
    if (!opened.ok()) {
      pipe.SignalReady(opened.status());
      return opened.status();
    }
    outbox = std::move(*opened);
  }
  // Before anything runs or the coordinator hears of us: what a killed
  // previous process of this worker left running would otherwise run beside
  // the copies the coordinator requeues.
  OrphanGuard orphans(outbox.get(), config.worker.worker_id);
  orphans.StopLeftovers();
  executor::Executor executor(config.executor, *clock, &orphans);
  std::unique_ptr<FileNodeLogReader> node_log;
  if (!config.worker.node_log_file.empty()) {
    node_log = std::make_unique<FileNodeLogReader>(config.worker.node_log_file);
  }
  WorkerCore core(&executor, clock, config.worker, outbox.get(), node_log.get());
  pipe.SignalReady(Status::Ok());

  // The dealer is ZMQ_IMMEDIATE: until its connection is up (a moment after
  // connect, even to a coordinator in this process), sends fail and the
  // frames are dropped. A HELLO dropped that way is said again as soon as the
  // dealer becomes writable, rather than a heartbeat later (10 s by default).
  bool hello_unsent = false;
  auto flush = [&] {
    if (!Flush(dealer, core) && core.awaiting_hello_reply()) hello_unsent = true;
  };
  core.Hello();
  flush();
  bool drained_reported = false;
  transport::Envelope env;
  std::vector<zmq::pollitem_t> items;
  std::vector<executor::ExecOutcome> finished;
  for (;;) {
    items.clear();
    items.push_back(pipe.PollItem());
    items.push_back(
        {dealer.handle(), 0, static_cast<short>(ZMQ_POLLIN | (hello_unsent ? ZMQ_POLLOUT : 0)), 0});
    executor.AppendPollItems(&items);
    // The core's timers run on the steady clock, the executor's on the wall.
    milliseconds wait = UntilMs(clock->Steady(), core.NextTick(), milliseconds(1000));
    wait = std::min(wait, UntilMs(clock->Now(), executor.NextDeadline(), milliseconds(1000)));
    auto polled = transport::Poll(items, wait);
    if (!polled.ok()) return polled.status();

    bool term = false;
    if (!DrainSocket(pipe.socket(), "worker", &env, [&](const transport::Envelope& e) {
          term = term || pipe.IsTerm(e);
          if (e.type == static_cast<uint16_t>(InternalType::kDrain)) core.StartDrain();
        })) {
      return ContextTerminated();
    }
    if (term) return Status::Ok();
    if (hello_unsent && (items[1].revents & ZMQ_POLLOUT) != 0) {
      hello_unsent = false;
      core.Hello();
      flush();
    }
    for (int i = 0; i < kMaxFramesPerTurn; ++i) {
      auto msg = transport::Recv(dealer, /*dontwait=*/true);
      if (!msg.ok()) {
        if (transport::IsContextTerminated(msg.status())) return ContextTerminated();
        break;
      }
      core.OnFrame(msg->data(), msg->size());
    }
    finished.clear();
    executor.Process(clock->Now(), &finished);
    if (!finished.empty()) core.OnFinished(finished);
    if (core.Tick()) {
      // The coordinator went quiet: a fresh socket (a new connection, not
      // libzmq's silent reconnect) and HELLO again. Tasks keep running.
      spdlog::warn("worker {}: coordinator silent for {} heartbeats; reconnecting",
                   config.worker.worker_id, config.worker.liveness);
      auto again = Dial(*ctx, config);
      if (again.ok()) dealer = std::move(*again);
      core.Hello();
    }
    flush();
    if (core.Drained() && !drained_reported) {
      core.Bye();
      Flush(dealer, core);
      // Give BYE a moment to leave when the socket closes (LINGER is 0
      // everywhere else so that shutdown never hangs).
      dealer.set(zmq::sockopt::linger, 500);
      (void)pipe.Send(static_cast<uint16_t>(InternalType::kDrain), transport::Bye{});
      drained_reported = true;
    }
  }
}

}  // namespace

Result<std::unique_ptr<WorkerActor>> WorkerActor::Start(zmq::context_t& ctx, const Clock* clock,
                                                        WorkerConfig config) {
  std::unique_ptr<WorkerActor> w(new WorkerActor());
  auto actor = transport::Actor::Start(
      ctx, "worker",
      w->supervisor_->Supervise("worker", [ctx_ptr = &ctx, clock, config](transport::ActorPipe& pipe) {
        return WorkerBody(pipe, ctx_ptr, clock, config);
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
