#include "tests/sim/simulation.h"

#include <catch2/catch.hpp>

#include "dsl/pipeline_json.h"

namespace apollo11::sim {
namespace {

using actors::InternalType;
using transport::MsgType;

std::optional<transport::Envelope> Peek(const std::string& frame) {
  auto env = transport::DecodeEnvelope(frame.data(), frame.size());
  if (!env.ok()) return std::nullopt;
  return std::optional<transport::Envelope>(std::move(*env));
}

}  // namespace

dsl::TaskSpec Task(const std::string& id, std::vector<std::string> deps) {
  dsl::TaskSpec t;
  t.id = id;
  t.type = dsl::TaskType::kShell;
  t.command = "true";
  for (auto& d : deps) t.depends_on.push_back({d, dsl::DependencyCondition::kSuccess, {}});
  return t;
}

Simulation::Simulation(SimOptions options) : options_(options) {
  OpenStore();
  StartCoordinator();
}

Simulation::~Simulation() = default;

void Simulation::OpenStore() {
  // In memory, behind the fault injector: nothing in a simulation touches a
  // disk, and "disk full" is one call away (FillStore).
  memory_ = std::make_unique<storage::MemoryRunStore>();
  store_ = std::make_unique<storage::FaultyRunStore>(memory_.get());
}

void Simulation::StartCoordinator() {
  auto epoch = store_->BumpEpoch();
  REQUIRE(epoch.ok());
  epoch_ = *epoch;
  actors::SchedulerOptions so;
  so.claim_window = options_.claim_window;
  so.max_requeues = options_.max_requeues;
  sched_ = std::make_unique<actors::SchedulerCore>(store_.get(), &clock_, so);
  actors::DispatcherOptions dopt;
  dopt.epoch = epoch_;
  disp_ = std::make_unique<actors::DispatcherCore>(&clock_, dopt);
  actors::ReconcilerOptions ro;
  ro.heartbeat = options_.heartbeat;
  ro.liveness = options_.liveness;
  recon_ = std::make_unique<actors::ReconcilerCore>(ro);
  next_beat_ = clock_.Now() + options_.heartbeat.count() * kMicrosPerMilli;
  next_probe_ = clock_.Now() + options_.reconcile_interval.count() * kMicrosPerMilli;
  // As SchedulerBody starts: recovery, then one commit without early
  // placement (the dispatcher is not up yet), whose output the dispatcher
  // reads before any worker frame.
  sched_->Recover();
  REQUIRE(CommitSchedulerTurn(/*place_early=*/false));
}

void Simulation::RestartCoordinator() {
  sched_.reset();
  disp_.reset();
  recon_.reset();
  disp_from_workers_.clear();
  disp_from_sched_.clear();
  disp_from_recon_.clear();
  sched_from_disp_.clear();
  sched_from_recon_.clear();
  recon_in_.clear();
  disp_out_.Clear();
  sched_out_.Clear();
  commit_failing_ = false;
  placed_ticket_ = answer_ticket_ = 0;
  StartCoordinator();
}

SimWorker& Simulation::AddWorker(const std::string& id, uint32_t slots) {
  auto w = std::make_unique<SimWorker>();
  w->id = id;
  actors::WorkerOptions wo;
  wo.worker_id = id;
  wo.slots = slots;
  wo.heartbeat = options_.heartbeat;
  wo.liveness = options_.liveness;
  wo.result_resend = options_.heartbeat;
  wo.health_interval = Millis(0);
  w->core = std::make_unique<actors::WorkerCore>(&w->runner, &clock_, wo);
  SimWorker& ref = *w;
  workers_[id] = std::move(w);
  ref.core->Hello();
  WorkerTurn(id);
  return ref;
}

std::string Simulation::Submit(const std::vector<dsl::TaskSpec>& tasks) {
  dsl::PipelineSpec spec;
  spec.version = "1.0";
  spec.name = "sim";
  spec.tasks = tasks;
  actors::SubmitRun s;
  s.pipeline_json = dsl::CanonicalJson(spec);
  s.pipeline_hash = dsl::ContentHash(spec);
  auto run_id = sched_->Submit(std::move(s));
  REQUIRE(run_id.ok());
  sched_pending_ = true;
  return *run_id;
}

void Simulation::Finish(const std::string& worker, const std::string& exec_id,
                        executor::ExecOutcomeKind kind) {
  SimWorker& w = *workers_.at(worker);
  uint32_t attempt = 0;
  for (const auto& req : w.runner.launched) {
    if (req.exec_id == exec_id && w.runner.IsRunning(exec_id, req.attempt)) attempt = req.attempt;
  }
  REQUIRE(attempt != 0);
  REQUIRE(w.runner.Complete(exec_id, attempt, kind, clock_.Now()));
  WorkerTurn(worker);
}

// ---- worker ----------------------------------------------------------------

void Simulation::Deliver(SimWorker& w, const std::string& frame) {
  auto env = Peek(frame);
  if (env && env->type == transport::ToWire(MsgType::kDispatch)) {
    auto d = transport::BodyAs<transport::Dispatch>(*env);
    REQUIRE(d.ok());
    // Nothing is dispatched before its READY -> RUNNING is durable.
    auto rec = Execution(d->exec_id);
    REQUIRE(rec.has_value());
    CHECK(rec->state == TaskState::kRunning);
    CHECK(rec->attempt == d->attempt);
    if (w.lose_dispatches > 0) {
      --w.lose_dispatches;
      return;
    }
    dispatches_.push_back({w.id, {d->exec_id, d->attempt}});
  }
  if (env && env->type == transport::ToWire(MsgType::kAck)) {
    auto a = transport::BodyAs<transport::Ack>(*env);
    REQUIRE(a.ok());
    // A result is acknowledged only once its transition is durable.
    auto rec = Execution(a->exec_id);
    REQUIRE(rec.has_value());
    CHECK((rec->attempt != a->attempt || rec->state != TaskState::kRunning));
    ++acks_delivered_;
  }
  w.inbox.push_back(frame);
}

void Simulation::WorkerTurn(const std::string& id) {
  SimWorker& w = *workers_.at(id);
  // As WorkerBody: frames from the coordinator, outcomes, Tick, send.
  while (!w.inbox.empty()) {
    std::string frame = std::move(w.inbox.front());
    w.inbox.pop_front();
    w.core->OnFrame(frame.data(), frame.size());
  }
  std::vector<executor::ExecOutcome> finished = w.runner.Take();
  if (!finished.empty()) w.core->OnFinished(finished);
  if (w.core->Tick()) w.core->Hello();  // coordinator silent: a fresh connection
  for (std::string& frame : w.core->outbox()) {
    if (!w.partitioned) disp_from_workers_.emplace_back(id, std::move(frame));
  }
  w.core->outbox().clear();
}

// ---- dispatcher --------------------------------------------------------------

void Simulation::DispatcherTurn() {
  // As DispatcherBody: worker frames, the scheduler's and the reconciler's
  // messages, timers, placement, then the output.
  while (!disp_from_workers_.empty()) {
    auto [identity, frame] = std::move(disp_from_workers_.front());
    disp_from_workers_.pop_front();
    disp_->OnWorkerFrame(identity, frame.data(), frame.size(), &disp_out_);
  }
  while (!disp_from_sched_.empty()) {
    FromScheduler m = std::move(disp_from_sched_.front());
    disp_from_sched_.pop_front();
    if (auto* e = std::get_if<actors::Enqueue>(&m)) {
      answer_ticket_ = std::max(answer_ticket_, e->ticket);
      disp_->OnEnqueue(std::move(*e));
    } else if (auto* a = std::get_if<actors::AdoptRunning>(&m)) {
      disp_->OnAdopt(*a);
    } else if (auto* r = std::get_if<actors::ReleaseDispatch>(&m)) {
      disp_->OnRelease(*r, &disp_out_);
    } else if (auto* k = std::get_if<actors::AckResults>(&m)) {
      disp_->OnAcks(*k, &disp_out_);
    } else if (auto* c = std::get_if<actors::CancelExecs>(&m)) {
      disp_->OnCancel(*c, &disp_out_);
    } else if (auto* p = std::get_if<actors::PausePlacement>(&m)) {
      disp_->SetPlacementPaused(p->paused);
    }
  }
  while (!disp_from_recon_.empty()) {
    disp_->OnWorkerLost(disp_from_recon_.front(), &disp_out_);
    disp_from_recon_.pop_front();
  }
  const Micros now = clock_.Now();
  if (now >= next_beat_) {
    disp_->Heartbeat(&disp_out_);
    recon_in_.emplace_back(disp_->Seen());
    next_beat_ = now + options_.heartbeat.count() * kMicrosPerMilli;
  }
  if (now >= next_probe_) {
    disp_->Probe(&disp_out_);
    next_probe_ = now + options_.reconcile_interval.count() * kMicrosPerMilli;
  }
  disp_->Place(&disp_out_);
  SendDispatcherOutput();
}

void Simulation::SendDispatcherOutput() {
  for (size_t i = 0; i < disp_out_.to_workers.size(); ++i) {
    auto& [identity, frame] = disp_out_.to_workers[i];
    auto w = workers_.find(identity);
    if (w == workers_.end()) {
      std::string gone = identity;  // the peer is gone: the send fails
      disp_->OnSendFailed(gone, &disp_out_);
      continue;
    }
    if (!w->second->partitioned) Deliver(*w->second, frame);
  }
  if (!disp_out_.placed.placed.empty() || answer_ticket_ != 0) {
    disp_out_.placed.ticket = answer_ticket_;
    answer_ticket_ = 0;
    sched_from_disp_.emplace_back(std::move(disp_out_.placed));
  }
  if (!disp_out_.started.items.empty()) sched_from_disp_.emplace_back(std::move(disp_out_.started));
  if (!disp_out_.results.items.empty()) sched_from_disp_.emplace_back(std::move(disp_out_.results));
  for (actors::WorkerGone& gone : disp_out_.gone) {
    const bool stays = disp_->HasWorker(gone.worker_id);
    const std::string id = gone.worker_id;
    sched_from_disp_.emplace_back(std::move(gone));
    if (stays) continue;
    actors::WorkerLeft left;
    left.worker_id = id;
    recon_in_.emplace_back(std::move(left));
  }
  disp_out_.Clear();
}

// ---- scheduler ---------------------------------------------------------------

void Simulation::FromDispatcherToScheduler(FromDispatcher& m) {
  sched_pending_ = true;
  if (auto* p = std::get_if<actors::Placed>(&m)) {
    sched_->OnPlaced(*p);
    placed_ticket_ = std::max(placed_ticket_, p->ticket);
  } else if (auto* s = std::get_if<actors::StartedBatch>(&m)) {
    sched_->OnStarted(*s);
  } else if (auto* r = std::get_if<actors::ResultBatch>(&m)) {
    sched_->OnResults(*r);
  } else if (auto* g = std::get_if<actors::WorkerGone>(&m)) {
    sched_->OnWorkerGone(*g);
  }
}

void Simulation::SchedulerTurn() {
  // As SchedulerBody: the dispatcher's and the reconciler's messages,
  // timers, then the commit.
  while (!sched_from_disp_.empty()) {
    FromDispatcher m = std::move(sched_from_disp_.front());
    sched_from_disp_.pop_front();
    FromDispatcherToScheduler(m);
  }
  while (!sched_from_recon_.empty()) {
    sched_->OnDeadlineExceeded(sched_from_recon_.front());
    sched_from_recon_.pop_front();
    sched_pending_ = true;
  }
  sched_->OnTimers();
  CommitSchedulerTurn();
}

bool Simulation::CommitSchedulerTurn(bool place_early) {
  // Place before commit: the READY executions staged so far go to the
  // dispatcher with a ticket; it runs (here: one turn) and answers with what
  // it placed at once, which joins this commit.
  actors::Enqueue early;
  if (place_early) sched_->TakeEnqueue(&early);
  if (!early.execs.empty()) {
    early.ticket = ++next_ticket_;
    const uint64_t ticket = early.ticket;
    disp_from_sched_.emplace_back(std::move(early));
    DispatcherTurn();
    while (!sched_from_disp_.empty()) {
      FromDispatcher m = std::move(sched_from_disp_.front());
      sched_from_disp_.pop_front();
      FromDispatcherToScheduler(m);
    }
    CHECK(placed_ticket_ >= ticket);  // a ticket is always answered
  }
  Status flushed = sched_->Flush(&sched_out_);
  if (!flushed.ok()) {
    ++failed_commits_;
    if (!commit_failing_) disp_from_sched_.emplace_back(actors::PausePlacement{true, ""});
    commit_failing_ = true;
    return false;
  }
  sched_pending_ = false;
  if (commit_failing_) disp_from_sched_.emplace_back(actors::PausePlacement{false, ""});
  commit_failing_ = false;
  // Released only now, in SchedulerBody's order.
  actors::SchedulerOutbox& o = sched_out_;
  if (!o.enqueue.execs.empty()) disp_from_sched_.emplace_back(std::move(o.enqueue));
  if (!o.adopt.execs.empty()) disp_from_sched_.emplace_back(std::move(o.adopt));
  if (!o.release.execs.empty()) disp_from_sched_.emplace_back(std::move(o.release));
  if (!o.acks.acks.empty()) disp_from_sched_.emplace_back(std::move(o.acks));
  if (!o.cancels.execs.empty()) disp_from_sched_.emplace_back(std::move(o.cancels));
  if (!o.watch.deadlines.empty()) recon_in_.emplace_back(std::move(o.watch));
  if (!o.unwatch.execs.empty()) recon_in_.emplace_back(std::move(o.unwatch));
  for (const actors::RunFinished& f : o.finished) {
    finished_[f.run_id] = static_cast<RunStatus>(f.status);
  }
  o.Clear();
  return true;
}

// ---- reconciler --------------------------------------------------------------

void Simulation::ReconcilerTurn() {
  while (!recon_in_.empty()) {
    ToReconciler m = std::move(recon_in_.front());
    recon_in_.pop_front();
    if (auto* s = std::get_if<actors::WorkersSeen>(&m)) {
      recon_->OnWorkersSeen(*s);
    } else if (auto* w = std::get_if<actors::WatchDeadlines>(&m)) {
      recon_->OnWatch(*w);
    } else if (auto* u = std::get_if<actors::Unwatch>(&m)) {
      recon_->OnUnwatch(*u);
    } else if (auto* l = std::get_if<actors::WorkerLeft>(&m)) {
      recon_->OnWorkerLeft(*l);
    }
  }
  for (actors::WorkerLost& lost : recon_->LostWorkers(clock_.Steady())) {
    disp_from_recon_.push_back(std::move(lost));
  }
  actors::DeadlineExceeded expired = recon_->Expired(clock_.Now());
  if (!expired.exceeded.empty()) sched_from_recon_.push_back(std::move(expired));
}

// ---- driving -------------------------------------------------------------------

bool Simulation::Idle() const {
  if (sched_pending_ || !disp_from_workers_.empty() || !disp_from_sched_.empty() ||
      !disp_from_recon_.empty() || !sched_from_disp_.empty() || !sched_from_recon_.empty() ||
      !recon_in_.empty()) {
    return false;
  }
  for (const auto& [id, w] : workers_) {
    if (!w->inbox.empty() || !w->core->outbox().empty()) return false;
  }
  return true;
}

void Simulation::RunUntilIdle(int max_rounds) {
  for (int round = 0; round < max_rounds; ++round) {
    for (auto& [id, w] : workers_) WorkerTurn(id);
    DispatcherTurn();
    SchedulerTurn();
    ReconcilerTurn();
    if (Idle()) return;
  }
}

void Simulation::AdvanceBy(Millis by, Millis step) {
  for (Millis done{0}; done < by; done += step) {
    clock_.Advance(step.count() * kMicrosPerMilli);
    RunUntilIdle();
  }
}

// ---- store -----------------------------------------------------------------------

std::optional<storage::ExecutionRecord> Simulation::Execution(const std::string& exec_id) {
  auto rec = store_->GetExecution(exec_id);
  REQUIRE(rec.ok());
  return *rec;
}

void Simulation::FillStore() { store_->FailCommits(); }

void Simulation::FreeStore() { store_->Heal(); }

}  // namespace apollo11::sim
