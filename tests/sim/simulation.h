#pragma once
// A deterministic simulator of one coordinator and N workers, after CAF's
// deterministic test fixture. It runs the actors' own turns, the code their
// loops in actors/ run: SchedulerTurn (with its ClientGate and TurnCommit),
// DispatcherTurn and ReconcilerTurn, and one WorkerCore per worker (over a
// FakeTaskRunner whose attempts finish when the test says). They exchange
// encoded messages through in-memory mailboxes on a FakeClock. No threads,
// sockets or sleeps: a test runs one actor turn at a time or all of them
// until nothing is left to do (RunUntilIdle), and moves time by hand. What
// this file adds is only what the loops do with sockets: moving frames,
// and the scheduler's short wait for its placement (here: one dispatcher
// turn, which always answers).
//
// Clients talk to the scheduler in the client protocol's frames, through the
// same ClientGate as the CLI: submissions, queries, cancels, registry
// requests and triggers, or any bytes a hostile client sends.
//
// Invariants checked on every delivery: a DISPATCH reaches a worker only when
// its READY -> RUNNING is durable in the store, an ACK only when the result
// it acknowledges is, and a reply naming a run (a SubmitReply, a trigger's
// RegistryReply) reaches its client only when the run is.

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "actors/client_protocol.h"
#include "actors/dispatcher/dispatcher_turn.h"
#include "actors/reconciler/reconciler_turn.h"
#include "actors/scheduler/scheduler_turn.h"
#include "actors/worker/worker_core.h"
#include "common/clock.h"
#include "dsl/pipeline.h"
#include "engine/random_source.h"
#include "storage/faulty_run_store.h"
#include "storage/memory_run_store.h"
#include "tests/executor/fake_task_runner.h"

namespace apollo11::sim {

struct SimOptions {
  Millis heartbeat{100};
  int liveness = 3;
  Millis reconcile_interval{1000};  // the dispatcher's PROBE period
  Millis claim_window{400};         // after a restart, see SchedulerOptions
  uint32_t max_requeues = 3;
  actors::JournalHealthOptions journal;  // the commit retry back-off
  uint64_t seed = 1;                     // run ids and retry jitter
};

// A frame the scheduler sent to a client.
struct ClientMessage {
  std::string identity;
  actors::ClientType type;
  std::string frame;
};

// One simulated worker: a WorkerCore over a fake runner.
struct SimWorker {
  std::string id;
  testing::FakeTaskRunner runner;
  std::unique_ptr<actors::WorkerCore> core;
  std::deque<std::string> inbox;  // frames from the dispatcher
  // A partitioned worker hears nothing and is heard by no one; its frames
  // are lost (its connection stays up, so sends to it do not fail).
  bool partitioned = false;
  // The next this-many DISPATCH frames to it are lost on the way.
  int lose_dispatches = 0;
};

class Simulation {
 public:
  explicit Simulation(SimOptions options = {});
  ~Simulation();

  // A worker joins: it says HELLO and grants credit for its slots and its
  // prefetch (executions it queues beyond them).
  SimWorker& AddWorker(const std::string& id, uint32_t slots = 1, uint32_t prefetch = 0);
  SimWorker& worker(const std::string& id) { return *workers_.at(id); }

  // Client `client` sends a SubmitRun of `tasks` (shell tasks by default),
  // which the scheduler's gate takes at once, as the start of its next turn
  // does. Returns the id of the run it started, or "" when it refused it
  // (its SubmitReply then is in client_messages() already). An accepted run
  // is answered after the commit that holds it.
  std::string Submit(const std::vector<dsl::TaskSpec>& tasks, const std::string& client = "client");
  // Client `client` sends `body` as a client message of `type`, taken at
  // once; a reply the gate gives at once is delivered at once.
  template <class T>
  void Send(actors::ClientType type, const T& body, const std::string& client = "client") {
    std::string frame;
    transport::Encode(static_cast<uint16_t>(type), body, &frame);
    SendBytes(frame, client);
  }
  // Client `client` sends these bytes, whatever they are.
  void SendBytes(const std::string& frame, const std::string& client = "client");
  // A query, answered at once (kLogs excepted): the reply.
  actors::QueryReply Query(actors::QueryKind kind, const std::string& id,
                           const std::string& arg = "", const std::string& client = "client");
  // The replies of `type` that `client` received, decoded as T, in order.
  template <class T>
  std::vector<T> Replies(actors::ClientType type, const std::string& client = "client") const;
  std::vector<actors::SubmitReply> SubmitReplies(const std::string& client = "client") const {
    return Replies<actors::SubmitReply>(actors::ClientType::kSubmitReply, client);
  }

  // Worker `id` says BYE and exits: its connection is gone afterwards.
  void Leave(const std::string& id);
  // Ends the running attempt of `exec_id` on `worker` (via its runner) and
  // runs the worker's turn, which reports it.
  void Finish(const std::string& worker, const std::string& exec_id,
              executor::ExecOutcomeKind kind = executor::ExecOutcomeKind::kSuccess);

  // One turn of each actor, as its loop in actors/ does it.
  void SchedulerTurn();
  void DispatcherTurn();
  void ReconcilerTurn();
  void WorkerTurn(const std::string& id);
  // Turns of every actor, round after round, until no mailbox holds anything
  // and no timer is due (at most `max_rounds`). Time does not move.
  void RunUntilIdle(int max_rounds = 50);
  // Moves both clocks by `by` in steps of `step`, running until idle after each.
  void AdvanceBy(Millis by, Millis step);

  // Stops the coordinator (its three turns and their mailboxes) and starts a
  // new one on the same store: new epoch, recovery, claim window. Workers
  // keep running and find out through their heartbeats; clients'
  // subscriptions are lost.
  void RestartCoordinator();

  // The durable state of one execution (nullopt when none).
  std::optional<storage::ExecutionRecord> Execution(const std::string& exec_id);
  // The disk is full: every commit from now on fails with kFull, and
  // nothing of a failed commit is applied (FaultyRunStore).
  void FillStore();
  // Space is back: commits succeed again.
  void FreeStore();

  FakeClock& clock() { return clock_; }
  actors::SchedulerCore& scheduler() { return sched_->core(); }
  actors::DispatcherCore& dispatcher() { return disp_->core(); }
  // Scheduler commits that failed, and ACK frames delivered to workers.
  size_t failed_commits() const { return failed_commits_; }
  size_t acks_delivered() const { return acks_delivered_; }
  // Successful commits of the store (the current coordinator's and earlier ones).
  uint64_t commits() const;
  // Runs started here (submitted or triggered) whose end is durable, by run
  // id: their RunStatus.
  std::map<std::string, RunStatus> finished_runs();
  // Every frame the scheduler sent to a client, in order.
  const std::vector<ClientMessage>& client_messages() const { return to_clients_; }
  // Every DISPATCH delivered to a worker, in order: (worker id, attempt).
  const std::vector<std::pair<std::string, transport::ExecRef>>& dispatches() const {
    return dispatches_;
  }

 private:
  class Workers;  // the dispatcher's WorkerLink: the workers' inboxes

  // The store the scheduler commits to: an in-memory RunStore behind a
  // fault injector.
  void OpenStore();
  void StartCoordinator();
  // The end of the scheduler's turn (SchedulerLoop::Flush): early placement
  // with one dispatcher turn to answer it, the commit, then the output.
  // Returns whether the commit succeeded.
  bool CommitSchedulerTurn(bool place_early = true);
  // Delivers what the scheduler released (SchedulerLoop::SendOut).
  void SendSchedulerOutput();
  void Deliver(SimWorker& w, const std::string& frame);
  void DeliverToClient(actors::ClientFrame f);
  // Checks that the run a reply names is durable, and remembers it.
  void CheckRunDurable(const std::string& run_id);
  bool Idle() const;

  SimOptions options_;
  FakeClock clock_;
  std::unique_ptr<engine::RandomSource> random_;  // the schedulers' (see SimOptions::seed)
  std::unique_ptr<storage::MemoryRunStore> memory_;
  std::unique_ptr<storage::FaultyRunStore> store_;
  uint64_t epoch_ = 0;
  // The coordinator.
  std::unique_ptr<actors::SchedulerTurn> sched_;
  std::unique_ptr<actors::DispatcherTurn> disp_;
  std::unique_ptr<actors::ReconcilerTurn> recon_;
  std::unique_ptr<Workers> link_;
  std::map<std::string, std::unique_ptr<SimWorker>> workers_;

  // Mailboxes: encoded internal messages, one per link, as the PAIR sockets.
  std::deque<std::pair<std::string, std::string>> disp_from_workers_;  // identity, frame
  std::deque<std::string> disp_from_sched_, disp_from_recon_;
  std::deque<std::string> sched_from_disp_, sched_from_recon_;
  std::deque<std::string> recon_from_sched_, recon_from_disp_;

  size_t failed_commits_ = 0, acks_delivered_ = 0;
  std::vector<std::string> started_;  // ids of the runs started, in order
  std::vector<ClientMessage> to_clients_;
  std::vector<std::pair<std::string, transport::ExecRef>> dispatches_;
};

// A shell task `id` depending on `deps`, for Submit.
dsl::TaskSpec Task(const std::string& id, std::vector<std::string> deps = {});

template <class T>
std::vector<T> Simulation::Replies(actors::ClientType type, const std::string& client) const {
  std::vector<T> replies;
  for (const ClientMessage& m : to_clients_) {
    if (m.identity != client || m.type != type) continue;
    auto env = transport::DecodeEnvelope(m.frame.data(), m.frame.size(), actors::ClientLimits());
    if (!env.ok()) continue;  // DeliverToClient checked every frame already
    auto reply = transport::BodyAs<T>(*env);
    if (reply.ok()) replies.push_back(std::move(*reply));
  }
  return replies;
}

}  // namespace apollo11::sim
