#include "actors/scheduler/scheduler_turn.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>

#include "actors/internal_routes.h"

namespace apollo11::actors {
namespace {

using ST = SchedulerTurn;
const std::array<Route<ST>, 6> kSchedulerFromDispatcher = {{
    {InternalType::kPlaced, &Decoded<ST, Placed, &ST::OnPlaced>},
    {InternalType::kStartedBatch, &Decoded<ST, StartedBatch, &ST::OnStarted>},
    {InternalType::kResultBatch, &Decoded<ST, ResultBatch, &ST::OnResults>},
    {InternalType::kWorkerGone, &Decoded<ST, WorkerGone, &ST::OnWorkerGone>},
    {InternalType::kWorkersSnapshot, &Decoded<ST, WorkersSnapshot, &ST::OnWorkersSnapshot>},
    {InternalType::kLogFetched, &Decoded<ST, LogFetched, &ST::OnLogFetched>},
}};
const std::array<Route<ST>, 1> kSchedulerFromReconciler = {{
    {InternalType::kDeadlineExceeded, &Decoded<ST, DeadlineExceeded, &ST::OnDeadlineExceeded>},
}};

// The earliest of `wake` and `other`, where 0 means "none".
Micros Earliest(Micros wake, Micros other) {
  if (other == 0) return wake;
  return wake == 0 ? other : std::min(wake, other);
}

}  // namespace

SchedulerTurn::SchedulerTurn(SchedulerTurnConfig config)
    : config_(std::move(config)),
      core_(config_.store, config_.clock, config_.options),
      health_(config_.journal_dir, config_.journal_health),
      queries_(storage::ReadersOf(config_.store), config_.log_file),
      commit_(&core_, &health_, &sessions_, config_.options.alerts),
      starter_(&core_),
      schedule_(config_.store, config_.store, config_.clock, &starter_),
      queue_health_(config_.options.max_backlog, config_.health_interval),
      gate_({&core_, &health_, &sessions_, &queries_, &schedule_, &workers_, config_.clock,
             config_.options.metrics, config_.faults},
            config_.clients) {
  if (config_.faults == nullptr) config_.faults = NoFaults();
  schedule_.set_max_overlap(config_.options.max_schedule_overlap);
}

RecoveryReport SchedulerTurn::Start() {
  RecoveryReport report;
  if (!standby()) report = core_.Recover();
  Status loaded = schedule_.Load();
  if (!loaded.ok()) spdlog::error("schedules not loaded: {}", loaded.message());
  return report;
}

void SchedulerTurn::FromClient(const std::string& identity, const transport::PeerAuth& peer,
                               const void* data, size_t size) {
  gate_.OnFrame(identity, peer, data, size, &frames_.to_dispatcher);
}

void SchedulerTurn::FromDispatcher(const transport::Envelope& env) {
  RouteMessage(*this, kSchedulerFromDispatcher, env);
}

void SchedulerTurn::FromReconciler(const transport::Envelope& env) {
  RouteMessage(*this, kSchedulerFromReconciler, env);
}

void SchedulerTurn::OnWorkersSnapshot(WorkersSnapshot m) {
  workers_ = std::move(m);
  queue_health_.OnSnapshot(workers_, core_.in_flight(), core_.backlog_paused(),
                           config_.clock->Steady());
}

void SchedulerTurn::Tick() {
  core_.OnTimers();
  // A standby fires nothing: its leader does (and journals the fires).
  const Micros fire = schedule_.NextWake();
  if (!health_.failing() && !standby() && fire != 0 && fire <= config_.clock->Now() &&
      schedule_.Tick() > 0) {
    config_.faults->At(FaultPoint::kFireStaged);
  }
  sessions_.ExpireLogs(config_.clock->Steady());
}

bool SchedulerTurn::Commit() {
  const bool fired = starter_.TakeStarted();
  const bool committed = commit_.Commit(config_.clock->Now(), config_.clock->Steady(), &frames_);
  if (committed && fired) config_.faults->At(FaultPoint::kFireCommitted);
  for (const std::string& run_id : commit_.TakeFinishedRuns()) schedule_.OnRunFinished(run_id);
  return committed;
}

void SchedulerTurn::Retain() {
  // A standby removes nothing: its journal is its leader's copy (or, without
  // replication, waits for its own term).
  if (config_.retention == nullptr || standby() || health_.failing()) return;
  config_.retention->RunDue(config_.clock->Now(), config_.clock->Steady());
}

Micros SchedulerTurn::NextWake() const {
  // Steady(). The core's timers and the schedules' fires are wall times,
  // due in (it - wall).
  const Micros steady = config_.clock->Steady(), wall = config_.clock->Now();
  auto steady_of = [&](Micros at) { return at == 0 ? 0 : steady + std::max<Micros>(at - wall, 0); };
  Micros wake = steady_of(core_.NextTimer());
  if (!standby()) wake = Earliest(wake, steady_of(schedule_.NextWake()));
  wake = Earliest(wake, health_.retry_at());
  if (config_.retention != nullptr && !health_.failing() && !standby()) {
    wake = Earliest(wake, config_.retention->NextDue());
  }
  return Earliest(wake, sessions_.NextDeadline());
}

}  // namespace apollo11::actors
