#include "actors/coordinator.h"

#include <spdlog/spdlog.h>

#include <memory>

#include "actors/dispatcher_loop.h"
#include "actors/reconciler_loop.h"
#include "actors/scheduler_loop.h"

namespace apollo11::actors {
namespace {

using SocketPtr = std::shared_ptr<zmq::socket_t>;

Result<std::pair<SocketPtr, SocketPtr>> Link(zmq::context_t& ctx, const std::string& name) {
  auto pair = transport::MakeInprocPair(ctx, name);
  if (!pair.ok()) return pair.status();
  return std::make_pair(std::make_shared<zmq::socket_t>(std::move(pair->first)),
                        std::make_shared<zmq::socket_t>(std::move(pair->second)));
}

}  // namespace

Result<std::unique_ptr<Coordinator>> Coordinator::Start(zmq::context_t& ctx,
                                                        storage::Journal* journal,
                                                        const Clock* clock,
                                                        CoordinatorConfig config) {
  std::unique_ptr<Coordinator> c(new Coordinator());
  // Workers get as long to claim what they held before a restart as it takes
  // to declare one lost, plus one heartbeat for their HELLO to arrive.
  config.scheduler.claim_window = config.reconciler.heartbeat * (config.reconciler.liveness + 1);
  config.scheduler.metrics = config.metrics;
  config.reconciler.metrics = config.metrics;
  config.scheduler.alerts = config.alerts;
  if (config.standby) config.retention = RetentionOptions{};  // the leader's journal rules
  const std::string prefix = "a11-" + config.instance + "-";
  auto sched_disp = Link(ctx, prefix + "sched-disp");
  if (!sched_disp.ok()) return sched_disp.status();
  auto sched_recon = Link(ctx, prefix + "sched-recon");
  if (!sched_recon.ok()) return sched_recon.status();
  auto disp_recon = Link(ctx, prefix + "disp-recon");
  if (!disp_recon.ok()) return disp_recon.status();

  SchedulerLoopParams sp;
  sp.ctx = &ctx;
  sp.journal = journal;
  sp.clock = clock;
  sp.options = config.scheduler;
  sp.client_endpoint = config.client_endpoint;
  sp.dispatcher = sched_disp->first;
  sp.reconciler = sched_recon->first;
  sp.bound_client = &c->client_endpoint_;
  sp.curve = config.curve;
  sp.recovery = &c->recovery_;
  sp.retention = config.retention;
  sp.log_file = config.log_file;
  sp.health_interval = config.health_interval;
  sp.faults = config.faults;
  sp.ha = config.ha;
  sp.standby = config.standby;
  auto scheduler = transport::Actor::Start(
      ctx, "scheduler", c->supervisor_->Supervise("scheduler", [sp](transport::ActorPipe& pipe) {
        return RunSchedulerLoop(pipe, sp);
      }));
  if (!scheduler.ok()) return scheduler.status();
  c->scheduler_ = std::move(*scheduler);

  DispatcherLoopParams dp;
  dp.ctx = &ctx;
  dp.clock = clock;
  dp.options.epoch = config.epoch;
  dp.options.metrics = config.metrics;
  dp.options.alerts = config.alerts;
  dp.options.ha = config.ha;
  dp.options.standby = config.standby;
  dp.options.watchers = config.watchers;
  dp.heartbeat = config.reconciler.heartbeat;
  dp.reconcile_interval = config.reconcile_interval;
  dp.worker_endpoint = config.worker_endpoint;
  dp.scheduler = sched_disp->second;
  dp.reconciler = disp_recon->first;
  dp.bound_workers = &c->worker_endpoint_;
  dp.curve = config.curve;
  auto dispatcher = transport::Actor::Start(
      ctx, "dispatcher", c->supervisor_->Supervise("dispatcher", [dp](transport::ActorPipe& pipe) {
        return RunDispatcherLoop(pipe, dp);
      }));
  if (!dispatcher.ok()) return dispatcher.status();
  c->dispatcher_ = std::move(*dispatcher);

  ReconcilerLoopParams rp{clock, config.reconciler, sched_recon->second, disp_recon->second};
  auto reconciler = transport::Actor::Start(
      ctx, "reconciler", c->supervisor_->Supervise("reconciler", [rp](transport::ActorPipe& pipe) {
        return RunReconcilerLoop(pipe, rp);
      }));
  if (!reconciler.ok()) return reconciler.status();
  c->reconciler_ = std::move(*reconciler);
  return c;
}

Coordinator::~Coordinator() { Stop(); }

void Coordinator::Stop() {
  for (auto* actor : {&dispatcher_, &reconciler_, &scheduler_}) {
    if (*actor) {
      Status s = (*actor)->Stop(std::chrono::milliseconds(5000));
      if (!s.ok()) spdlog::error("stopping {}: {}", (*actor)->name(), s.message());
      actor->reset();
    }
  }
}

}  // namespace apollo11::actors
