#pragma once
// A deterministic simulator of one coordinator and N workers, after CAF's
// deterministic test fixture: SchedulerCore, DispatcherCore, ReconcilerCore
// and one WorkerCore per worker (over a FakeTaskRunner whose attempts finish
// when the test says) exchange messages through in-memory mailboxes on a
// FakeClock. No threads, sockets or sleeps: a test runs one actor turn at a
// time (SchedulerTurn, DispatcherTurn, ReconcilerTurn, WorkerTurn) or all of
// them until nothing is left to do (RunUntilIdle), and moves time by hand.
//
// Each turn mirrors one iteration of that actor's loop in actors/ (the order
// in which it reads its inputs and sends its outputs). The scheduler's
// place-before-commit turn protocol is in CommitSchedulerTurn alone.
//
// Two invariants are checked on every delivery to a worker: a DISPATCH
// arrives only when its READY -> RUNNING is durable in the store, and an ACK
// only when the result it acknowledges is.

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "actors/dispatcher_core.h"
#include "actors/reconciler_core.h"
#include "actors/scheduler_core.h"
#include "actors/worker_core.h"
#include "common/clock.h"
#include "dsl/pipeline.h"
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

  // A worker joins: it says HELLO and grants credit for its slots.
  SimWorker& AddWorker(const std::string& id, uint32_t slots = 1);
  SimWorker& worker(const std::string& id) { return *workers_.at(id); }

  // Submits a run of `tasks` (shell tasks by default) as a client would; the
  // next scheduler turn commits it. Returns the run id.
  std::string Submit(const std::vector<dsl::TaskSpec>& tasks);
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

  // Stops the coordinator (its three cores and their mailboxes) and starts a
  // new one on the same store: new epoch, recovery, claim window. Workers
  // keep running and find out through their heartbeats.
  void RestartCoordinator();

  // The durable state of one execution (nullopt when none).
  std::optional<storage::ExecutionRecord> Execution(const std::string& exec_id);
  // The disk is full: every commit from now on fails with kFull, and
  // nothing of a failed commit is applied (FaultyRunStore).
  void FillStore();
  // Space is back: commits succeed again.
  void FreeStore();

  FakeClock& clock() { return clock_; }
  actors::SchedulerCore& scheduler() { return *sched_; }
  actors::DispatcherCore& dispatcher() { return *disp_; }
  // Scheduler commits that failed, and ACK frames delivered to workers.
  size_t failed_commits() const { return failed_commits_; }
  size_t acks_delivered() const { return acks_delivered_; }
  // Runs that ended, by run id: their RunStatus.
  const std::map<std::string, RunStatus>& finished_runs() const { return finished_; }
  // Every DISPATCH delivered to a worker, in order: (worker id, attempt).
  const std::vector<std::pair<std::string, transport::ExecRef>>& dispatches() const {
    return dispatches_;
  }

 private:
  using FromScheduler =
      std::variant<actors::Enqueue, actors::AdoptRunning, actors::ReleaseDispatch,
                   actors::AckResults, actors::CancelExecs, actors::PausePlacement>;
  using FromDispatcher =
      std::variant<actors::Placed, actors::StartedBatch, actors::ResultBatch, actors::WorkerGone>;
  using ToReconciler = std::variant<actors::WorkersSeen, actors::WorkerLeft, actors::WatchDeadlines,
                                    actors::Unwatch>;

  // The store the scheduler commits to: an in-memory RunStore behind a
  // fault injector.
  void OpenStore();
  void StartCoordinator();
  // The scheduler's turn protocol (actors/coordinator.cc SchedulerBody's
  // flush): hands the turn's READY executions to the dispatcher with a
  // ticket and lets it place them before the commit, commits once, and only
  // then releases the staged messages, in order. A failed commit releases
  // nothing. Returns whether the commit succeeded. Without `place_early`
  // (the first commit after start), nothing is placed before it.
  bool CommitSchedulerTurn(bool place_early = true);
  void FromDispatcherToScheduler(FromDispatcher& m);
  // Routes the dispatcher's output as DispatcherBody does.
  void SendDispatcherOutput();
  void Deliver(SimWorker& w, const std::string& frame);
  bool Idle() const;

  SimOptions options_;
  FakeClock clock_;
  std::unique_ptr<storage::MemoryRunStore> memory_;
  std::unique_ptr<storage::FaultyRunStore> store_;
  uint64_t epoch_ = 0;
  std::unique_ptr<actors::SchedulerCore> sched_;
  std::unique_ptr<actors::DispatcherCore> disp_;
  std::unique_ptr<actors::ReconcilerCore> recon_;
  std::map<std::string, std::unique_ptr<SimWorker>> workers_;

  // Mailboxes.
  std::deque<std::pair<std::string, std::string>> disp_from_workers_;  // identity, frame
  std::deque<FromScheduler> disp_from_sched_;
  std::deque<actors::WorkerLost> disp_from_recon_;
  std::deque<FromDispatcher> sched_from_disp_;
  std::deque<actors::DeadlineExceeded> sched_from_recon_;
  std::deque<ToReconciler> recon_in_;

  // Actor-loop state kept between turns, as the loops keep it.
  bool sched_pending_ = false;  // something was staged since the last commit
  bool commit_failing_ = false;
  uint64_t next_ticket_ = 0, placed_ticket_ = 0, answer_ticket_ = 0;
  Micros next_beat_ = 0, next_probe_ = 0;
  actors::DispatcherOutput disp_out_;
  actors::SchedulerOutbox sched_out_;

  size_t failed_commits_ = 0, acks_delivered_ = 0;
  std::map<std::string, RunStatus> finished_;
  std::vector<std::pair<std::string, transport::ExecRef>> dispatches_;
};

// A shell task `id` depending on `deps`, for Submit.
dsl::TaskSpec Task(const std::string& id, std::vector<std::string> deps = {});

}  // namespace apollo11::sim
