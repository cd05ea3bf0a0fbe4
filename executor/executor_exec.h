#pragma once
// The executor's record of one attempt in flight, shared by the files that
// implement Executor (executor.cc, executor_process.cc, executor_http.cc,
// executor_db.cc).
// Internal to the executor library.

#include <unistd.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/libcurl_api.h"
#include "executor/child_process.h"
#include "executor/containment.h"
#include "executor/db_pool.h"
#include "executor/executor.h"
#include "executor/log_sink.h"
#include "executor/task_inputs.h"

namespace apollo11::executor {

// How the executor runs one task type: each type of APOLLO11_TASK_TYPES
// (dsl/task_types.h) has one, named after its enumerator (kShell:
// kShellRunner, in Executor::RunnerOf).
struct Executor::Runner {
  // Starts the attempt once its logs are open; a failure becomes its FAILED
  // outcome. nullptr: nothing runs, the attempt succeeds at once (noop).
  Status (Executor::*start)(Exec* exec);
  // What a process task executes (shell, python); nullptr for other runners.
  std::vector<std::string> (*argv)(const ExecRequest& request);
  LogSink::Keep out;  // what the stdout log keeps in memory: the tail, or the head (an HTTP body)
  bool err_log;       // whether stderr is captured
  // A start refused as InvalidInput is not retried (db: a wrong URL or
  // password variable stays wrong); otherwise a failed start may be.
  bool invalid_input_final;
};

// One attempt in flight: a process (precheck, then task), an HTTP transfer or
// a db statement.
struct Executor::Exec {
  ExecRequest req;
  const Runner* runner = nullptr;
  Micros started_at = 0;
  Micros deadline = 0;                     // 0 = no timeout
  std::shared_ptr<const SecretMask> mask;  // null when nothing to mask; the sinks use it
  LogSink out;
  LogSink err;
  TaskInputs inputs;  // processes: removed with the Exec, when the attempt has ended

  // process
  bool in_precheck = false;
  ChildProcess child;
  bool reaped = false;
  int wait_status = 0;
  ContainedExec contained;
  size_t leftovers = 0;                 // leftover processes killed so far (precheck's too)
  std::optional<ExecOutcomeKind> stop;  // set once a timeout or cancel began
  Micros kill_at = 0;                   // SIGKILL the group at this time
  bool killed = false;                  // SIGKILL sent

  // http (`curl` set with `easy`)
  const LibCurl* curl = nullptr;
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  char curl_error[CURL_ERROR_SIZE] = {0};

  // db: the job on the DbPool (deadline, stop and kill_at as for processes)
  std::shared_ptr<DbJob> db;

  ~Exec() {
    for (int fd : {child.pidfd, child.stdout_fd, child.stderr_fd}) {
      if (fd >= 0) ::close(fd);
    }
    if (easy != nullptr) curl->curl_easy_cleanup(easy);
    if (headers != nullptr) curl->curl_slist_free_all(headers);
  }
};

}  // namespace apollo11::executor
