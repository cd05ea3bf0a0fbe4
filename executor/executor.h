#pragma once
// Executor: runs task attempts for the worker actor without ever blocking its
// loop. Processes (shell, python, precheck) are spawned into their own process
// group and watched through pidfds and non-blocking pipes; HTTP tasks go
// through libcurl's multi interface. The actor adds AppendPollItems() to its
// zmq::poll set, waits at most until NextDeadline(), then calls Process().
//
// Policies worth knowing:
// - shell: /bin/sh -c COMMAND; python: python3 SCRIPT ARGS (python3 found on
//   the worker's PATH). Environment = the worker's plus request.env.
// - The precheck runs like a task and writes to the same log files; the
//   request's timeout covers precheck and task together.
// - A timeout or cancel sends SIGTERM to the process group, then SIGKILL after
//   kill_grace. Once the main process has exited, anything left of the task
//   gets SIGKILL at once and the outcome is reported (the kill is sent; the
//   kernel finishes it asynchronously). A task that exits normally is
//   reported when its main process is reaped, without waiting for pipe EOF.
// - Whatever a task leaves running when its main process ends (background
//   children, setsid'd daemons) is killed, at any end, success included, and
//   counted in the outcome's error ("killed 2 leftover processes"). What
//   holds an execution's processes is a Containment: a cgroup v2 leaf, or
//   the process tree with this process as a subreaper.
// - http: redirects are followed (at most 5, http/https only) and the final
//   status counts; exit_code carries the HTTP status.
// - db: the statement runs on a DbPool thread (executor/db_pool.h); a timeout
//   or cancel stops it on the server (PQcancel, KILL QUERY,
//   sqlite3_interrupt). The first rows or the rows affected become the
//   outcome's task_output (executor/db_result_json.h), a summary its output.
//
// Thread safety: none. One thread (the worker actor's) makes every call, and
// no other thread may modify the environment (setenv) while Launch runs.

#include <sys/types.h>
#include <zmq.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "executor/exec_types.h"
#include "executor/secret_mask.h"
#include "executor/task_runner.h"

namespace apollo11::executor {

class Containment;
class CurlMulti;
class DbPool;

// Told of each task process group the executor starts and reaps, so that the
// worker can keep a durable list of them and, restarted after kill -9, stop
// what its previous process left running (actors/orphan_guard.h). Called on
// the executor's thread.
class ProcessGroupObserver {
 public:
  virtual ~ProcessGroupObserver() = default;
  // A group led by `pgid`, whose leader started at `start_time`
  // (/proc/PID/stat field 22), now runs `request` (its precheck or task).
  virtual void GroupStarted(pid_t pgid, uint64_t start_time, const ExecRequest& request) = 0;
  // The group's leader has been reaped.
  virtual void GroupReaped(pid_t pgid) = 0;
};

class Executor final : public TaskRunner {
 public:
  // `clock` must outlive the executor; it stamps started_at and arms timers.
  // `observer`, when given, must outlive it too.
  Executor(ExecutorOptions options, const Clock& clock, ProcessGroupObserver* observer = nullptr);
  // Kills (SIGKILL to each execution's containment) and reaps whatever
  // still runs, and aborts HTTP transfers; no outcomes are reported for them.
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Starts one attempt without blocking. Refused (Busy) when the same
  // (exec_id, attempt) is still running, Io when its log files cannot be
  // opened. Everything else, including "could not start", is reported as an
  // ExecOutcome by a later Process(); a type outside APOLLO11_TASK_TYPES
  // fails, not retryable, with UnknownTaskTypeError and runs nothing. noop
  // finishes at the next Process() and touches no file.
  Status Launch(const ExecRequest& request) override;

  // Stops a running attempt: SIGTERM to its process group, SIGKILL after its
  // kill_grace (an HTTP transfer is aborted at once); the outcome is kCanceled.
  // Unknown or already finished attempts are ignored.
  void Cancel(const std::string& exec_id, uint32_t attempt) override;

  // Appends the fds to wait on (pidfds, output pipes, curl sockets). Valid
  // until the next call of Launch, Cancel or Process.
  void AppendPollItems(std::vector<zmq_pollitem_t>* items) const;

  // How executions are contained here, for the worker's log: "cgroup v2
  // DIR" or "process tree (subreaper): WHY NO CGROUP".
  const std::string& containment() const;
  // Kills what a previous process of this worker (same containment_name)
  // left in its cgroup; each leaf (exec id and attempt) with the number of
  // processes it held. Empty without cgroups. Call before the first Launch.
  std::vector<std::pair<std::string, size_t>> KillLeftovers();

  // The earliest time (Clock::Steady()) Process() must run even if no fd is
  // ready (timeouts, kill graces, curl timers, outcomes already waiting); 0 =
  // no timer.
  Micros NextDeadline() const;

  // Does all pending work without blocking: reads output, reaps exited
  // children, enforces timeouts and graces, drives curl. Appends every attempt
  // that finished to `finished`. `now` is Clock::Steady(): a wall-clock step
  // neither times a task out nor delays its timeout; outcomes are stamped
  // with wall time.
  void Process(Micros now, std::vector<ExecOutcome>* finished);

  // Attempts launched and not yet reported (queued noop outcomes excluded).
  size_t running() const override { return execs_.size(); }
  // Reads <log_dir>/<exec_id>.<attempt>.out/.err, the files Launch writes; an
  // exec id with a '/' names none (Unsupported), as does an empty log_dir.
  Result<OutputSlice> ReadOutput(const std::string& exec_id, uint32_t attempt, bool stderr_stream,
                                 uint64_t offset, uint64_t max_bytes) const override;
  std::vector<std::pair<std::string, uint32_t>> RunningExecs() const;

 private:
  struct Exec;
  struct Runner;
  using Key = std::pair<std::string, uint32_t>;

  // The runner of a task type (executor_exec.h), or nullptr for a value
  // outside APOLLO11_TASK_TYPES.
  static const Runner* RunnerOf(dsl::TaskType type);
  // Queues the outcome of an attempt that ends without running (noop, an
  // unknown type, secrets that do not resolve) for the next Process().
  Status FinishAtOnce(const ExecRequest& request, Micros now, ExecOutcomeKind kind, bool retryable,
                      std::string error);
  // Opens the attempt's stdout (and stderr, if its runner keeps one) log.
  Status OpenLogs(Exec* exec);
  // Writes the attempt's inputs (params, upstream outputs) to disk and names
  // them in its environment; the request no longer holds them.
  Status PrepareInputs(Exec* exec);
  // A python task's captured source (ExecRequest::code): written to the
  // attempt's inputs directory, and `script` made that file's path.
  Status WriteTaskCode(Exec* exec);
  // Starts a shell or python task: its inputs on disk, then its precheck or
  // itself (StartProcess).
  Status StartProcessTask(Exec* exec);
  // Starts an http or db task that must run its precheck first: the
  // precheck as a process (inputs on disk, the task's environment), the task
  // itself when it exits 0 (StartAfterPrecheck).
  Status StartPrecheckFirst(Exec* exec);
  // The task of `exec`, once its precheck exited 0: a process task's
  // process, an http transfer or a db statement.
  Status StartAfterPrecheck(Exec* exec);
  Status StartProcess(Exec* exec, bool precheck);
  Status StartHttp(Exec* exec);
  Status StartDb(Exec* exec);
  // Asks the server to stop `exec`'s statement; it is reported when the pool
  // answers or at the latest max(kill_grace, 1 s) later.
  void StopDb(Exec* exec, ExecOutcomeKind why, Micros now);
  // The outcome of a db attempt, from its job's result or its stop reason
  // (`answered`: the pool has finished the job).
  ExecOutcome DbOutcome(Exec* exec, bool answered);
  // Reports finished db jobs and enforces db timeouts and graces.
  void ProcessDb(Micros now, std::vector<ExecOutcome>* finished);
  void Stop(Exec* exec, ExecOutcomeKind why, Micros now);
  void ReadPipes(Exec* exec, bool drain);
  void Reap(Exec* exec);
  // Returns true when `exec` is finished and its outcome appended.
  bool Advance(Exec* exec, Micros now, std::vector<ExecOutcome>* finished);
  // The outcome of `exec` once its leader is reaped; nullopt when that was
  // its precheck and the task has now started.
  std::optional<ExecOutcome> EndOf(Exec* exec);
  void FinishHttp(Exec* exec, int curl_code, std::vector<ExecOutcome>* finished);
  // Process's work: every outcome that ended since the last call appended.
  void ProcessExecs(Micros now, std::vector<ExecOutcome>* finished);
  // Masks the secrets of each outcome from `first` on in their output,
  // stderr tail, error and task output (secret_mask.h), and forgets them.
  void MaskOutcomes(std::vector<ExecOutcome>* finished, size_t first);
  // The outcome of `exec`, stamped finished at the wall clock's now.
  ExecOutcome MakeOutcome(Exec* exec, ExecOutcomeKind kind);
  // Moves the task's $APOLLO11_OUTPUT into o->task_output, or turns *o into
  // a failure saying why it could not (too big or not JSON: not retryable).
  void ReadTaskOutput(Exec* exec, ExecOutcome* o) const;

  ExecutorOptions options_;
  const Clock& clock_;
  ProcessGroupObserver* observer_;
  // The signals this process ignored when the executor was made (the node
  // sets its dispositions first); every child gets them back at their
  // defaults, without a sigaction call per signal and spawn.
  const std::vector<int> ignored_signals_;
  bool log_dir_ready_ = false;
  std::map<Key, std::unique_ptr<Exec>> execs_;
  // The secret values of attempts that have secrets, until their outcome
  // leaves Process (secret_mask.h).
  std::map<Key, std::shared_ptr<const SecretMask>> masks_;
  std::vector<ExecOutcome> ready_;   // finished without running (noop, rejected, ...)
  std::unique_ptr<CurlMulti> curl_;  // created on the first HTTP task
  std::unique_ptr<Containment> containment_;
  std::unique_ptr<DbPool> db_pool_;  // created on the first db task
};

}  // namespace apollo11::executor
