#include "tests/sim/simulation.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "dsl/pipeline_json.h"

namespace apollo11::sim {
namespace {

using actors::ClientType;
using actors::InternalType;
using transport::MsgType;

std::optional<transport::Envelope> Peek(const std::string& frame) {
  auto env = transport::DecodeEnvelope(frame.data(), frame.size());
  if (!env.ok()) return std::nullopt;
  return std::optional<transport::Envelope>(std::move(*env));
}

// Decodes an internal frame as the loops' DrainSocket does. Between the
// simulator's own actors a malformed frame is a bug: it fails the test.
transport::Envelope Internal(const std::string& frame) {
  auto env = transport::DecodeEnvelope(frame.data(), frame.size(), actors::InternalLimits());
  REQUIRE(env.ok());
  return std::move(*env);
}

template <class Queue, class Handle>
void Drain(Queue* q, Handle&& handle) {
  while (!q->empty()) {
    std::string frame = std::move(q->front());
    q->pop_front();
    handle(Internal(frame));
  }
}

void MoveAll(std::vector<std::string>* from, std::deque<std::string>* to) {
  for (std::string& frame : *from) to->push_back(std::move(frame));
  from->clear();
}

}  // namespace

// The dispatcher's WorkerLink: a worker that left has no connection (the
// send fails); a partitioned one loses the frame.
class Simulation::Workers final : public actors::WorkerLink {
 public:
  explicit Workers(Simulation* sim) : sim_(sim) {}
  bool Send(const std::string& identity, const std::string& frame) override {
    auto w = sim_->workers_.find(identity);
    if (w == sim_->workers_.end()) return false;
    if (!w->second->partitioned) sim_->Deliver(*w->second, frame);
    return true;
  }

 private:
  Simulation* sim_;
};

dsl::TaskSpec Task(const std::string& id, std::vector<std::string> deps) {
  dsl::TaskSpec t;
  t.id = id;
  t.type = dsl::TaskType::kShell;
  t.command = "true";
  for (auto& d : deps) t.depends_on.push_back({d, dsl::DependencyCondition::kSuccess, {}});
  return t;
}

Simulation::Simulation(SimOptions options)
    : options_(options),
      random_(engine::NewSeededRandom(options.seed)),
      link_(std::make_unique<Workers>(this)) {
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
  actors::SchedulerTurnConfig sc;
  sc.store = store_.get();
  sc.clock = &clock_;
  sc.options.claim_window = options_.claim_window;
  sc.options.max_requeues = options_.max_requeues;
  sc.options.random = random_.get();
  sc.journal_dir = "(simulated store)";
  sc.journal_health = options_.journal;
  sched_ = std::make_unique<actors::SchedulerTurn>(sc);
  actors::DispatcherOptions dopt;
  dopt.epoch = epoch_;
  disp_ = std::make_unique<actors::DispatcherTurn>(
      &clock_, dopt,
      actors::DispatcherTurnOptions{options_.heartbeat, options_.reconcile_interval});
  actors::ReconcilerOptions ro;
  ro.heartbeat = options_.heartbeat;
  ro.liveness = options_.liveness;
  recon_ = std::make_unique<actors::ReconcilerTurn>(&clock_, ro);
  // As SchedulerLoop starts: recovery, then one commit without early
  // placement (the dispatcher is not up yet), whose output the dispatcher
  // reads before any worker frame.
  sched_->Start();
  REQUIRE(CommitSchedulerTurn(/*place_early=*/false));
}

void Simulation::RestartCoordinator() {
  sched_.reset();
  disp_.reset();
  recon_.reset();
  for (auto* q : {&disp_from_sched_, &disp_from_recon_, &sched_from_disp_, &sched_from_recon_,
                  &recon_from_sched_, &recon_from_disp_}) {
    q->clear();
  }
  disp_from_workers_.clear();
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

// ---- clients -------------------------------------------------------------------

std::string Simulation::Submit(const std::vector<dsl::TaskSpec>& tasks, const std::string& client) {
  dsl::PipelineSpec spec;
  spec.version = "1.0";
  spec.name = "sim";
  spec.tasks = tasks;
  actors::SubmitRun s;
  s.pipeline_json = dsl::CanonicalJson(spec);
  s.pipeline_hash = dsl::ContentHash(spec);
  const std::vector<std::string> before = sched_->core().ActiveRunIds();
  Send(ClientType::kSubmitRun, s, client);
  for (const std::string& id : sched_->core().ActiveRunIds()) {
    if (std::binary_search(before.begin(), before.end(), id)) continue;
    started_.push_back(id);
    return id;
  }
  return "";
}

void Simulation::SendBytes(const std::string& frame, const std::string& client) {
  sched_->FromClient(client, transport::PeerAuth{}, frame.data(), frame.size());
  SendSchedulerOutput();  // what the gate answers at once, it answers now
}

actors::QueryReply Simulation::Query(actors::QueryKind kind, const std::string& id,
                                     const std::string& arg, const std::string& client) {
  actors::Query q;
  q.kind = kind;
  q.id = id;
  q.arg = arg;
  const size_t before = Replies<actors::QueryReply>(ClientType::kQueryReply, client).size();
  Send(ClientType::kQuery, q, client);
  auto replies = Replies<actors::QueryReply>(ClientType::kQueryReply, client);
  REQUIRE(replies.size() == before + 1);
  return replies.back();
}

void Simulation::DeliverToClient(actors::ClientFrame f) {
  auto env = transport::DecodeEnvelope(f.frame.data(), f.frame.size(), actors::ClientLimits());
  REQUIRE(env.ok());
  const auto type = static_cast<ClientType>(env->type);
  if (type == ClientType::kSubmitReply) {
    auto reply = transport::BodyAs<actors::SubmitReply>(*env);
    REQUIRE(reply.ok());
    if (!reply->run_id.empty()) CheckRunDurable(reply->run_id);
  }
  if (type == ClientType::kRegistryReply) {
    auto reply = transport::BodyAs<actors::RegistryReply>(*env);
    REQUIRE(reply.ok());
    auto json = nlohmann::json::parse(reply->json, nullptr, false);
    if (json.is_object() && json.contains("run_id")) CheckRunDurable(json["run_id"]);
  }
  to_clients_.push_back({std::move(f.identity), type, std::move(f.frame)});
}

void Simulation::CheckRunDurable(const std::string& run_id) {
  // A run id reaches its client only once the run is durable.
  auto run = store_->GetRun(run_id);
  REQUIRE(run.ok());
  CHECK(run->has_value());
  if (std::find(started_.begin(), started_.end(), run_id) == started_.end()) {
    started_.push_back(run_id);
  }
}

// ---- worker ----------------------------------------------------------------

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

// ---- the coordinator's actors ------------------------------------------------

void Simulation::DispatcherTurn() {
  // As DispatcherLoop: worker frames, the scheduler's and the reconciler's
  // messages, then the turn's end.
  while (!disp_from_workers_.empty()) {
    auto [identity, frame] = std::move(disp_from_workers_.front());
    disp_from_workers_.pop_front();
    disp_->FromWorker(identity, transport::PeerAuth{}, frame.data(), frame.size());
  }
  Drain(&disp_from_sched_, [&](const transport::Envelope& e) { disp_->FromScheduler(e); });
  Drain(&disp_from_recon_, [&](const transport::Envelope& e) { disp_->FromReconciler(e); });
  actors::DispatcherFrames out;
  disp_->End(*link_, &out);
  for (std::string& frame : out.to_scheduler) sched_from_disp_.push_back(std::move(frame));
  for (std::string& frame : out.to_reconciler) recon_from_disp_.push_back(std::move(frame));
}

void Simulation::SchedulerTurn() {
  // As SchedulerLoop: the dispatcher's and the reconciler's messages, the
  // turn's timers, then, when a commit may be tried, the commit.
  Drain(&sched_from_disp_, [&](const transport::Envelope& e) { sched_->FromDispatcher(e); });
  Drain(&sched_from_recon_, [&](const transport::Envelope& e) { sched_->FromReconciler(e); });
  sched_->Tick();
  if (sched_->CommitDue() && CommitSchedulerTurn()) sched_->Retain();
  SendSchedulerOutput();
}

bool Simulation::CommitSchedulerTurn(bool place_early) {
  // Place before commit: the READY executions staged so far go to the
  // dispatcher with a ticket; it runs (here: one turn, so it always answers
  // in time) and its answer joins this commit.
  if (place_early && sched_->BeginEarlyPlacement()) {
    MoveAll(&sched_->frames().to_dispatcher, &disp_from_sched_);
    DispatcherTurn();
    Drain(&sched_from_disp_, [&](const transport::Envelope& e) { sched_->FromDispatcher(e); });
    CHECK_FALSE(sched_->AwaitingPlacement());  // a ticket is always answered
  }
  const bool committed = sched_->Commit();
  if (!committed) ++failed_commits_;
  SendSchedulerOutput();
  return committed;
}

void Simulation::SendSchedulerOutput() {
  MoveAll(&sched_->frames().to_dispatcher, &disp_from_sched_);
  MoveAll(&sched_->frames().to_reconciler, &recon_from_sched_);
  for (actors::ClientFrame& f : sched_->TakeClientFrames()) DeliverToClient(std::move(f));
}

void Simulation::ReconcilerTurn() {
  // As ReconcilerLoop: the scheduler's messages, then the dispatcher's,
  // then the turn's end.
  Drain(&recon_from_sched_, [&](const transport::Envelope& e) { recon_->FromScheduler(e); });
  Drain(&recon_from_disp_, [&](const transport::Envelope& e) { recon_->FromDispatcher(e); });
  actors::ReconcilerFrames out;
  recon_->End(&out);
  for (std::string& frame : out.to_dispatcher) disp_from_recon_.push_back(std::move(frame));
  for (std::string& frame : out.to_scheduler) sched_from_recon_.push_back(std::move(frame));
}

// ---- driving -------------------------------------------------------------------

bool Simulation::Idle() const {
  if (sched_->core().staged_transitions() > 0 || !disp_from_workers_.empty()) return false;
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
  for (const std::string& id : sched_->core().ActiveRunIds()) {
    if (std::find(started_.begin(), started_.end(), id) == started_.end()) started_.push_back(id);
  }
  std::map<std::string, RunStatus> finished;
  for (const std::string& run_id : started_) {
    auto run = store_->GetRun(run_id);
    REQUIRE(run.ok());
    if (run->has_value() && IsFinal((*run)->status)) finished[run_id] = (*run)->status;
  }
  return finished;
}

}  // namespace apollo11::sim
