#pragma once
// DagRun: the task states of one run and the rules that move them. Plain
// logic: no sockets, threads, clock or journal. Events go in (a result, a
// retry timer firing, a lost worker, a cancel); Effects come out (transitions
// to journal, tasks to dispatch, timers to arm, executions to kill). The caller
// journals the transitions before acting on the rest.
//
// Cost: every event touches only the task concerned and, when it ends, its
// dependents (in-degree counting); nothing rescans the DAG except Cancel and
// Resume. Not thread-safe: one owner (the scheduler actor) calls it.

#include <cstdint>
#include <memory>
#include <queue>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "engine/run_graph.h"
#include "engine/task_state.h"

namespace apollo11::engine {

// One state change, for the journal. `attempt` is 0 for tasks that never ran.
// `task` is a slot: a task of the graph, or a foreach instance (see
// DagRun::IsInstance).
struct TaskTransition {
  int task = 0;
  uint32_t attempt = 0;
  TaskState from = TaskState::kPending;
  TaskState to = TaskState::kPending;
  std::string reason;
};

// What the caller must do after an event, in order: journal `transitions`,
// then send `dispatch`, arm `retry_timers` (call OnRetryDue at the due time)
// and cancel `kill` on their workers. Reuse one Effects and clear() it per
// loop turn to avoid allocations.
struct Effects {
  std::vector<TaskTransition> transitions;
  std::vector<int> dispatch;                         // tasks that went READY
  std::vector<std::pair<int, Micros>> retry_timers;  // task, due time
  std::vector<int> kill;                             // running tasks to cancel
  // foreach tasks that went READY: the caller reads their items and calls
  // Expand or FailExpansion (in the same turn, before its commit).
  std::vector<int> expand;
  void clear() {
    expand.clear();
    transitions.clear();
    dispatch.clear();
    retry_timers.clear();
    kill.clear();
  }
};

struct DagRunOptions {
  // Worker losses one task survives; the next loss fails it.
  int max_requeues = 3;
  // Retry-storm stagger: each retry's delay gets StaggerOffset(delay before
  // jitter, retry_stagger, domain of the pipeline, stagger_key + "." + task
  // id) added (engine/retry.h); 0 = none. The scheduler passes the run id.
  double retry_stagger = 0.0;
  std::string stagger_key{};
  // Items one foreach task may expand into; more fails the task.
  int max_foreach_items = 10000;
};

class DagRun {
 public:
  // A run over `graph` (shared, immutable); every task starts PENDING.
  explicit DagRun(std::shared_ptr<const RunGraph> graph, DagRunOptions options = {});

  // Starts the run: tasks without dependencies become eligible, and the
  // dependents of reused tasks are evaluated as after any success. Nothing
  // goes READY until PromoteEligible. Call once, and not after Resume.
  void Start(Micros now, Effects* out);

  // A rerun, before Start: `task` keeps the SUCCESS it had in the run being
  // rerun instead of running (PENDING -> SUCCESS with `reason`, attempt 0;
  // see IsReuseTransition). InvalidInput for a bad index, a foreach instance
  // or a task not PENDING; Internal after Start or Resume.
  Status Reuse(int task, std::string reason, Effects* out);

  // Moves up to `budget` eligible tasks PENDING -> READY (attempt 1), highest
  // TaskSpec::priority first, then lower task index. Honours the pipeline's
  // concurrency: READY + RUNNING + RETRYING tasks of this run stay at or
  // below it (a task waiting for a retry keeps its slot). The scheduler passes
  // max_backlog - in_flight as budget. Returns how many went READY.
  int PromoteEligible(int budget, Effects* out);

  // READY -> RUNNING: the current attempt was handed to `worker`. A
  // mismatched attempt or a task not READY is refused (NotFound), unchanged.
  Status OnDispatched(int task, uint32_t attempt, const std::string& worker, Micros now,
                      Effects* out);

  // The result of `attempt`. A result for another attempt or for a task not
  // RUNNING is stale: refused with NotFound and nothing changes (the caller
  // records and acks it). Success ends SUCCESS; a failure or timeout either
  // goes RETRYING (timer in out->retry_timers; u01 is a uniform [0,1) sample
  // for jitter) or ends FAILED/TIMEOUT. Dependents of an ended task are
  // re-evaluated in the same call; SKIPPED/CANCELED propagate transitively.
  Status OnResult(int task, uint32_t attempt, AttemptOutcome outcome, int exit_code, bool retryable,
                  const std::string& error, Micros now, double u01, Effects* out);

  // A retry timer fired: RETRYING -> READY with attempt + 1, straight into
  // out->dispatch (the task kept its concurrency slot; it bypasses the backlog
  // budget, so the backlog may overshoot by the retries due in one turn).
  // NotFound if the task is not RETRYING (a stale timer).
  Status OnRetryDue(int task, Micros now, Effects* out);

  // The caller moved a RETRYING task's due time: `due` is when its timer now
  // fires, 0 while its timer waits for a slot (the coordinator's
  // --max-retrying cap). Only Explain reads it. NotFound if not RETRYING.
  Status SetRetryDue(int task, Micros due);

  // The worker running `attempt` was lost: RUNNING -> READY with attempt + 1
  // and requeues + 1, without using a retry. Past max_requeues the task ends
  // FAILED "requeued N times after worker loss". NotFound if stale.
  Status OnRequeue(int task, uint32_t attempt, const std::string& reason, Effects* out);

  // User cancel: every task not final goes CANCELED with `reason`; RUNNING
  // ones are also listed in out->kill. The run's outcome becomes CANCELED.
  void Cancel(const std::string& reason, Effects* out);

  // Crash recovery: sets one task's state as journaled, before Resume (and
  // instead of Start). `retry_due` is when a RETRYING task's timer fires (0 =
  // at Resume). InvalidInput for a bad index or an impossible record.
  Status Restore(int task, TaskState state, uint32_t attempt, int retries_used, int requeues,
                 Micros retry_due = 0);
  // Rebuilds counters and eligibility from the restored states (the one O(N)
  // pass), settles any task whose fate the crash left open, re-emits READY
  // tasks in out->dispatch and RETRYING ones in out->retry_timers. RUNNING
  // tasks are left to the reconciler.
  Status Resume(Micros now, Effects* out);

  // foreach fan-out. A task with foreach goes READY like any other but is
  // listed in out->expand instead of out->dispatch. Expand gives it `items`
  // instances (slots ID[0].. appended after the graph's tasks): 0 ends it
  // SKIPPED, more than max_foreach_items FAILED, otherwise it goes RUNNING
  // and up to max_parallel instances go READY (out->dispatch). Instances run,
  // retry, requeue and cancel like tasks, through the same calls with their
  // slot; the task ends once all of them ended: SUCCESS when all succeeded,
  // else FAILED naming the failed ones. `source` names the items' origin in
  // reasons. NotFound unless the task is an unexpanded foreach task READY.
  // A rerun passes `reused`: item i with reused[i] set keeps the SUCCESS it
  // had in the run being rerun (PENDING -> SUCCESS, attempt 0, with
  // `reuse_reason`) instead of running; the others run as above.
  Status Expand(int task, int items, const std::string& source, Effects* out,
                const std::vector<bool>& reused = {}, const std::string& reuse_reason = "");
  // The items could not be read (`reason`): READY -> FAILED.
  Status FailExpansion(int task, std::string reason, Effects* out);
  // Crash recovery: the journaled expansion of `task`, after Restore of the
  // task and before Restore of its instances' slots and Resume.
  Status RestoreExpansion(int task, int items);

  // Graph tasks and foreach instances together; slots() >= size().
  int slots() const { return static_cast<int>(tasks_.size()); }
  bool IsInstance(int slot) const { return slot >= graph_->size(); }
  // The graph task of a slot (itself for a task).
  int ParentOf(int slot) const { return IsInstance(slot) ? parent_[slot - graph_->size()] : slot; }
  // An instance's item index; -1 for a task.
  int InstanceIndex(int slot) const;
  // The slot of instance `i` of `task`, or -1.
  int InstanceSlot(int task, int i) const;
  // Instances of an expanded foreach task; 0 otherwise.
  int InstanceCount(int task) const;
  // The id of a slot: the task's, or "ID[i]" for an instance.
  std::string Id(int slot) const;
  // The spec a slot runs (an instance runs its task's).
  const dsl::TaskSpec& Spec(int slot) const { return graph_->task(ParentOf(slot)); }

  // True when every task and instance is final.
  bool Finished() const { return final_count_ == slots(); }
  // The run's outcome once Finished (kRunning before): CANCELED after Cancel;
  // FAILED if a task ended FAILED/TIMEOUT with no handler or any task is
  // CANCELED; else SUCCESS.
  RunStatus Outcome() const;

  const RunGraph& graph() const { return *graph_; }
  // Tasks of the graph (instances not counted: see slots()).
  int size() const { return graph_->size(); }
  TaskState state(int task) const { return tasks_[task].state; }
  // 0 before the first READY; +1 on every retry or requeue.
  uint32_t attempt(int task) const { return tasks_[task].attempt; }
  int retries_used(int task) const { return tasks_[task].retries_used; }
  int requeues(int task) const { return tasks_[task].requeues; }
  // Tasks currently in `s`; O(1).
  int count(TaskState s) const { return counts_[static_cast<int>(s)]; }
  // READY + RUNNING + RETRYING: what the concurrency limit counts.
  int active() const { return active_; }
  // PENDING with its dependencies satisfied: waits only for PromoteEligible
  // (backlog budget or concurrency).
  bool IsEligible(int task) const {
    return tasks_[task].state == TaskState::kPending && tasks_[task].queued;
  }
  // Why the task is where it is, in one sentence ("waiting on 2 of 3
  // dependencies: load (RUNNING), clean (PENDING)").
  std::string Explain(int task) const;

 private:
  struct TaskRt {
    int32_t resolved = 0;  // dependency edges whose upstream is final
    int32_t met = 0;       // of those, edges whose condition holds
    uint32_t attempt = 0;
    uint16_t retries_used = 0;
    uint16_t requeues = 0;
    TaskState state = TaskState::kPending;
    bool queued = false;  // eligible: in (or popped from) ready_queue_
  };
  struct QueueKey {
    int priority;
    int task;
    // std::priority_queue pops the largest: higher priority, then lower index.
    bool operator<(const QueueKey& o) const {
      return priority != o.priority ? priority < o.priority : task > o.task;
    }
  };

  Status CheckIndex(int task) const;
  // Applies one checked transition and records it; Internal if illegal.
  Status Transition(int task, TaskState to, std::string reason, Effects* out);
  // Applies a transition the caller checked and records it.
  void Record(int task, TaskState to, std::string reason, Effects* out);
  // `task` reached a final state: update its dependents, promote or settle
  // them, transitively (iteratively: chains can be 100k long).
  Status Propagate(int task, Effects* out);
  // Runs propagation for every task queued in work_.
  Status Drain(Effects* out);
  // Re-evaluates one PENDING task after its counters changed; appends to
  // `settled` if it became SKIPPED/CANCELED.
  Status Evaluate(int task, int last_upstream, Effects* out, std::vector<int>* settled);
  bool Eligible(int task) const;
  bool Impossible(int task) const;
  std::string ReadyReason(int task) const;
  std::string ImpossibleFate(int task, int last_upstream, TaskState* fate) const;
  bool CancelsDownstream(int upstream) const;
  bool ConcurrencyFull() const;

  // An expanded foreach task's instances: slots [first, first + count);
  // `next` of them were promoted, `ended` are final, `failed` not SUCCESS.
  // Instances are promoted in index order: those below `next` were
  // promoted (or passed), those from `next` on are PENDING, or final
  // without having run (a rerun's reused items: `ahead` counts them, and
  // they are in `ended` too). Running ones: next - (ended - ahead).
  struct Fanout {
    int first = 0, count = 0, next = 0, ended = 0, failed = 0, ahead = 0;
  };
  bool IsFanout(int task) const { return fanout_.count(task) > 0; }
  // Appends the instance slots of `task` (PENDING).
  Fanout& AddInstances(int task, int items);
  // Moves PENDING instances READY while the task's max_parallel allows.
  void PromoteInstances(int task, Effects* out);
  // An instance reached a final state: counts it, starts the next, and ends
  // its task once all ended.
  Status InstanceEnded(int slot, Effects* out);
  Status FinishFanout(int task, Effects* out);
  // One instance of `task` succeeded: its dependents with trigger: any that
  // wait on its success become eligible (the others wait for the task).
  void QueueEarlyAny(int task);
  // True when `e`, an edge from a fanout still RUNNING to a trigger: any
  // dependent, is met early by an instance's success.
  bool EarlyMet(const Edge& e) const;
  // Resume's part for foreach: re-counts each fanout, re-expands READY
  // foreach tasks and settles finished ones.
  Status ResumeFanouts(Effects* out);
  std::string ExplainFanout(int task) const;

  std::shared_ptr<const RunGraph> graph_;
  DagRunOptions options_;
  std::vector<TaskRt> tasks_;
  std::vector<Micros> retry_due_;
  std::priority_queue<QueueKey> ready_queue_;
  std::vector<int> work_;    // scratch for Propagate
  std::vector<int> parent_;  // by slot - size(): an instance's task
  std::unordered_map<int, Fanout> fanout_;
  int counts_[kTaskStateCount] = {};
  int final_count_ = 0;
  int active_ = 0;
  int unhandled_failures_ = 0;
  bool started_ = false;
  bool canceled_ = false;
};

}  // namespace apollo11::engine
