#include "tests/sim/simulation.h"

#include <catch2/catch.hpp>

#include "actors/actor_loop.h"
#include "dsl/pipeline_json.h"
#include "tests/sim/sim_routes.h"

namespace apollo11::sim {
namespace {

using actors::InternalType;
using transport::MsgType;

std::optional<transport::Envelope> Peek(const std::string& frame) {
  auto env = transport::DecodeEnvelope(frame.data(), frame.size());
  if (!env.ok()) return std::nullopt;
  return std::optional<transport::Envelope>(std::move(*env));
}

template <class T>
std::string PopFront(std::deque<T>* q) {
  std::string frame = std::move(q->front());
  q->pop_front();
  return frame;
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

Simulation::Simulation(SimOptions options)
    : options_(options), random_(engine::NewSeededRandom(options.seed)) {
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
  so.random = random_.get();
  sched_ = std::make_unique<actors::SchedulerCore>(store_.get(), &clock_, so);
  health_ = std::make_unique<actors::JournalHealth>("(simulated store)", options_.journal);
  sessions_ = std::make_unique<actors::ClientSessions>();
  turn_ = std::make_unique<actors::SchedulerTurn>(sched_.get(), health_.get(), sessions_.get(),
                                                  nullptr);
  actors::DispatcherOptions dopt;
  dopt.epoch = epoch_;
  disp_ = std::make_unique<actors::DispatcherCore>(&clock_, dopt);
  actors::ReconcilerOptions ro;
  ro.heartbeat = options_.heartbeat;
  ro.liveness = options_.liveness;
  recon_ = std::make_unique<actors::ReconcilerCore>(ro);
  next_beat_ = clock_.Steady() + options_.heartbeat.count() * kMicrosPerMilli;
  next_probe_ = clock_.Steady() + options_.reconcile_interval.count() * kMicrosPerMilli;
  // As SchedulerLoop starts: recovery, then one commit without early
  // placement (the dispatcher is not up yet), whose output the dispatcher
  // reads before any worker frame.
  sched_->Recover();
  REQUIRE(CommitSchedulerTurn(/*place_early=*/false));
}

void Simulation::RestartCoordinator() {
  turn_.reset();
  sessions_.reset();
  health_.reset();
  sched_.reset();
  disp_.reset();
  recon_.reset();
  for (auto* q : {&disp_from_sched_, &disp_from_recon_, &sched_from_disp_, &sched_from_recon_,
                  &recon_from_sched_, &recon_from_disp_}) {
    q->clear();
  }
  disp_from_workers_.clear();
  disp_out_.Clear();
  sched_frames_.Clear();
  answer_ticket_ = 0;
  StartCoordinator();
}

uint64_t Simulation::commits() const { return memory_->commits(); }

SimWorker& Simulation::AddWorker(const std::string& id, uint32_t slots, uint32_t prefetch) {
  auto w = std::make_unique<SimWorker>();
  w->id = id;
  actors::WorkerOptions wo;
  wo.worker_id = id;
  wo.slots = slots;
  wo.prefetch = prefetch;
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

std::string Simulation::Submit(const std::vector<dsl::TaskSpec>& tasks, const std::string& client) {
  dsl::PipelineSpec spec;
  spec.version = "1.0";
  spec.name = "sim";
  spec.tasks = tasks;
  actors::SubmitRun s;
  s.pipeline_json = dsl::CanonicalJson(spec);
  s.pipeline_hash = dsl::ContentHash(spec);
  const std::string run_id =
      OnClientFrame(client, EncodeInternal(InternalType::kSubmitRun, std::move(s)));
  SendSchedulerOutput();  // a refusal is answered at once
  return run_id;
}

void Simulation::Leave(const std::string& id) {
  SimWorker& w = *workers_.at(id);
  w.core->Bye();
  WorkerTurn(id);
  workers_.erase(id);  // its process exits: sends to it fail from now on
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
  // As WorkerActor: frames from the coordinator, outcomes, Tick, send.
  while (!w.inbox.empty()) {
    std::string frame = std::move(w.inbox.front());
    w.inbox.pop_front();
    w.core->OnFrame(frame.data(), frame.size());
  }
  std::vector<executor::ExecOutcome> finished = w.runner.Take();
  if (!finished.empty()) w.core->OnFinished(finished);
  w.core->EndTurn();
  if (w.core->Tick()) w.core->Hello();  // coordinator silent: a fresh connection
  for (std::string& frame : w.core->outbox()) {
    if (!w.partitioned) disp_from_workers_.emplace_back(id, std::move(frame));
  }
  w.core->outbox().clear();
}

// ---- dispatcher --------------------------------------------------------------

void Simulation::DispatcherTurn() {
  // As DispatcherLoop: worker frames, the scheduler's and the reconciler's
  // messages, timers, placement, then the output.
  while (!disp_from_workers_.empty()) {
    auto [identity, frame] = std::move(disp_from_workers_.front());
    disp_from_workers_.pop_front();
    disp_->OnWorkerFrame(identity, frame.data(), frame.size(), &disp_out_);
  }
  DispatcherInbox in{disp_.get(), &disp_out_, &answer_ticket_};
  while (!disp_from_sched_.empty()) in.FromScheduler(PopFront(&disp_from_sched_));
  while (!disp_from_recon_.empty()) in.FromReconciler(PopFront(&disp_from_recon_));
  const Micros now = clock_.Steady();  // the loop's timers, as DispatcherLoop
  if (now >= next_beat_) {
    disp_->Heartbeat(&disp_out_);
    recon_from_disp_.push_back(EncodeInternal(InternalType::kWorkersSeen, disp_->Seen()));
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
    sched_from_disp_.push_back(EncodeInternal(InternalType::kPlaced, disp_out_.placed));
  }
  if (!disp_out_.started.items.empty()) {
    sched_from_disp_.push_back(EncodeInternal(InternalType::kStartedBatch, disp_out_.started));
  }
  if (!disp_out_.results.items.empty()) {
    sched_from_disp_.push_back(EncodeInternal(InternalType::kResultBatch, disp_out_.results));
  }
  for (const actors::LogFetched& fetched : disp_out_.logs) {
    sched_from_disp_.push_back(EncodeInternal(InternalType::kLogFetched, fetched));
  }
  for (const actors::WorkerGone& gone : disp_out_.gone) {
    sched_from_disp_.push_back(EncodeInternal(InternalType::kWorkerGone, gone));
    if (disp_->HasWorker(gone.worker_id)) continue;  // executions handed back; it stays
    recon_from_disp_.push_back(
        EncodeInternal(InternalType::kWorkerLeft, actors::WorkerLeft{gone.worker_id}));
  }
  disp_out_.Clear();
}

// ---- scheduler ---------------------------------------------------------------

std::string Simulation::OnClientFrame(const std::string& identity, const std::string& frame) {
  auto env = transport::DecodeEnvelope(frame.data(), frame.size(), actors::ClientLimits());
  REQUIRE(env.ok());
  REQUIRE(env->type == static_cast<uint16_t>(InternalType::kSubmitRun));
  REQUIRE(actors::ClientRequestVersion(*env) == actors::kClientProtocolVersion);
  actors::SubmitReply reply;
  if (health_->failing()) {
    // As SchedulerLoop::OnSubmit: not journaled, so refused, not held.
    reply.code = static_cast<uint8_t>(StatusCode::kFull);
    reply.error = "new runs are refused while the coordinator cannot write its journal: " +
                  health_->Summary(clock_.Steady());
    sessions_->Reply(identity, InternalType::kSubmitReply, reply);
    return "";
  }
  auto submit = transport::BodyAs<actors::SubmitRun>(*env);
  REQUIRE(submit.ok());
  auto run_id = sched_->Submit(std::move(*submit));
  REQUIRE(run_id.ok());
  sessions_->Accepted(identity, *run_id);  // answered once the run is journaled
  sched_pending_ = true;
  submitted_.push_back(*run_id);
  return *run_id;
}

void Simulation::SchedulerTurn() {
  // As SchedulerLoop: the dispatcher's and the reconciler's messages,
  // timers, then, when a commit may be tried, the commit.
  SchedulerInbox in{sched_.get(), turn_.get(), sessions_.get()};
  while (!sched_from_disp_.empty()) {
    in.FromDispatcher(PopFront(&sched_from_disp_));
    sched_pending_ = true;
  }
  while (!sched_from_recon_.empty()) {
    in.FromReconciler(PopFront(&sched_from_recon_));
    sched_pending_ = true;
  }
  sched_->OnTimers();
  sessions_->ExpireLogs(clock_.Steady());
  if (health_->RetryDue(clock_.Steady())) CommitSchedulerTurn();
  SendSchedulerOutput();
}

bool Simulation::CommitSchedulerTurn(bool place_early) {
  // Place before commit: the READY executions staged so far go to the
  // dispatcher with a ticket; it runs (here: one turn, so it always answers
  // in time) and its answer joins this commit.
  if (place_early && turn_->BeginEarlyPlacement(&sched_frames_)) {
    for (std::string& frame : sched_frames_.to_dispatcher) {
      disp_from_sched_.push_back(std::move(frame));
    }
    sched_frames_.to_dispatcher.clear();
    DispatcherTurn();
    SchedulerInbox in{sched_.get(), turn_.get(), sessions_.get()};
    while (!sched_from_disp_.empty()) in.FromDispatcher(PopFront(&sched_from_disp_));
    CHECK_FALSE(turn_->AwaitingPlacement());  // a ticket is always answered
  }
  const bool committed = turn_->Commit(clock_.Now(), clock_.Steady(), &sched_frames_);
  if (committed) {
    sched_pending_ = false;
  } else {
    ++failed_commits_;
  }
  SendSchedulerOutput();
  return committed;
}

void Simulation::SendSchedulerOutput() {
  for (std::string& frame : sched_frames_.to_dispatcher) {
    disp_from_sched_.push_back(std::move(frame));
  }
  for (std::string& frame : sched_frames_.to_reconciler) {
    recon_from_sched_.push_back(std::move(frame));
  }
  sched_frames_.Clear();
  for (actors::ClientFrame& f : sessions_->TakeFrames()) DeliverToClient(std::move(f));
}

void Simulation::DeliverToClient(actors::ClientFrame f) {
  auto env = transport::DecodeEnvelope(f.frame.data(), f.frame.size(), actors::ClientLimits());
  REQUIRE(env.ok());
  const auto type = static_cast<InternalType>(env->type);
  if (type == InternalType::kSubmitReply) {
    auto reply = transport::BodyAs<actors::SubmitReply>(*env);
    REQUIRE(reply.ok());
    if (!reply->run_id.empty()) {
      // A run id reaches its client only once the run is durable.
      auto run = store_->GetRun(reply->run_id);
      REQUIRE(run.ok());
      CHECK(run->has_value());
    }
  }
  to_clients_.push_back({std::move(f.identity), type, std::move(f.frame)});
}

std::vector<actors::SubmitReply> Simulation::SubmitReplies(const std::string& client) const {
  std::vector<actors::SubmitReply> replies;
  for (const ClientMessage& m : to_clients_) {
    if (m.identity != client || m.type != InternalType::kSubmitReply) continue;
    auto env = transport::DecodeEnvelope(m.frame.data(), m.frame.size(), actors::ClientLimits());
    REQUIRE(env.ok());
    auto reply = transport::BodyAs<actors::SubmitReply>(*env);
    REQUIRE(reply.ok());
    replies.push_back(std::move(*reply));
  }
  return replies;
}

// ---- reconciler --------------------------------------------------------------

void Simulation::ReconcilerTurn() {
  // As ReconcilerLoop: the scheduler's messages, then the dispatcher's,
  // then liveness and deadlines (both on the steady clock).
  ReconcilerInbox in{recon_.get()};
  while (!recon_from_sched_.empty()) in.FromScheduler(PopFront(&recon_from_sched_));
  while (!recon_from_disp_.empty()) in.FromDispatcher(PopFront(&recon_from_disp_));
  for (const actors::WorkerLost& lost : recon_->LostWorkers(clock_.Steady())) {
    disp_from_recon_.push_back(EncodeInternal(InternalType::kWorkerLost, lost));
  }
  actors::DeadlineExceeded expired = recon_->Expired(clock_.Steady());
  if (!expired.exceeded.empty()) {
    sched_from_recon_.push_back(EncodeInternal(InternalType::kDeadlineExceeded, expired));
  }
}

// ---- driving -------------------------------------------------------------------

bool Simulation::Idle() const {
  if (sched_pending_ || !disp_from_workers_.empty()) return false;
  for (const auto* q : {&disp_from_sched_, &disp_from_recon_, &sched_from_disp_, &sched_from_recon_,
                        &recon_from_sched_, &recon_from_disp_}) {
    if (!q->empty()) return false;
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

std::map<std::string, RunStatus> Simulation::finished_runs() {
  std::map<std::string, RunStatus> finished;
  for (const std::string& run_id : submitted_) {
    auto run = store_->GetRun(run_id);
    REQUIRE(run.ok());
    if (run->has_value() && IsFinal((*run)->status)) finished[run_id] = (*run)->status;
  }
  return finished;
}

}  // namespace apollo11::sim
