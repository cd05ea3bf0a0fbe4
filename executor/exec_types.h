#pragma once
// What the worker asks the executor to run and what comes back. Plain values:
// the worker fills an ExecRequest from a DISPATCH message and turns an
// ExecOutcome into a RESULT message.

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/duration.h"
#include "dsl/pipeline.h"

namespace apollo11::executor {

// A run parameter or an upstream's output that a shell or python task reads:
// written to a file in its $APOLLO11_INPUTS_DIR, and set in its environment
// when small (executor/task_inputs.h has the contract).
struct TaskInput {
  enum class Kind : uint8_t { kParam, kOutput };
  Kind kind = Kind::kParam;
  std::string name;  // the parameter's name or the upstream task's id
  std::string value;
  bool operator==(const TaskInput&) const = default;
};

// One attempt of one task. The caller resolves templates and adds the
// APOLLO11_* variables to `env` before launching. The members named like
// dsl::TaskSpec's are the kWire fields of APOLLO11_TASK_FIELDS
// (dsl/task_fields.h), filled from the DISPATCH by dsl::CopyWireFields.
struct ExecRequest {
  std::string exec_id;  // "<run_id>.<task_id>"
  uint32_t attempt = 0;
  dsl::TaskType type = dsl::TaskType::kNoop;
  // shell
  std::string command;
  std::string workdir;  // shell and python; empty = the worker's cwd
  // python: `python3 SCRIPT ARGS...`; with `code`, SCRIPT is the file
  // name the code is written to in the attempt's inputs directory.
  std::string script;
  std::string code;
  std::vector<std::string> args;
  // http
  std::string url;
  std::string method = "GET";
  std::map<std::string, std::string> headers;
  std::string body;
  std::vector<int> expect_status;  // empty = any 2xx
  // db (executor/db_task.h): URL without password, SQL, bound parameters, and
  // the variable holding the password.
  std::string db_host;
  std::string sql;
  std::vector<std::string> sql_params;
  std::string db_password_env;
  // Added to (and overriding) the worker's own environment.
  std::map<std::string, std::string> env;
  // Parameters and upstream outputs (shell, python and db tasks).
  std::vector<TaskInput> inputs;
  Millis timeout{0};  // 0 = none; covers the precheck too
  Millis kill_grace{2000};
  std::string precheck;  // shell command; run first when run_precheck
  bool run_precheck = false;
  // Variable name -> secret reference (dsl/secret_ref.h); the executor
  // resolves them into the task's environment at launch (secret_resolver.h).
  std::map<std::string, std::string> secrets;
};

enum class ExecOutcomeKind { kSuccess, kFailed, kTimeout, kCanceled, kAlreadyDone, kRejected };

// "SUCCESS", "FAILED", ... for logs and messages.
const char* ToString(ExecOutcomeKind kind);

// Why an attempt of a type this worker does not know (a DISPATCH from a
// newer coordinator) fails: the value, the types it knows, what to do.
std::string UnknownTaskTypeError(int type);

// How one attempt ended.
struct ExecOutcome {
  std::string exec_id;
  uint32_t attempt = 0;
  ExecOutcomeKind kind = ExecOutcomeKind::kFailed;
  // Process exit code, -N when killed by signal N; for http the HTTP status
  // (0 when no response arrived).
  int exit_code = 0;
  bool retryable = true;  // false: retrying cannot help (4xx, precheck refusal, rejected)
  std::string output;     // stdout tail (http: body head), <= output_tail_bytes
  // How many bytes the task printed to stdout (http: the body's size), of
  // which `output` holds the tail (head): more than output.size() when cut.
  uint64_t output_bytes = 0;
  std::string error;        // one human sentence; empty on success
  std::string stderr_tail;  // last <= stderr_tail_bytes of stderr (processes only)
  Micros started_at = 0;
  Micros finished_at = 0;
  std::string stdout_path;  // empty when no log_dir is configured or nothing ran
  std::string stderr_path;
  // Empty when the log files hold everything the task printed (up to the cap);
  // otherwise why they do not ("stdout: disk full (...) after 4096 bytes").
  std::string logs_truncated;
  // JSON the task gave as its result ($APOLLO11_OUTPUT file, a db task's rows); empty = none.
  std::string task_output;
};

// How the processes of an execution are held so none outlives it
// (executor/containment.h).
enum class ContainmentMode {
  kAuto,         // a cgroup v2 leaf per execution when allowed, else the process tree
  kCgroup,       // a cgroup or nothing: without one, tasks cannot start
  kProcessTree,  // never a cgroup: subreaper and /proc scans
};

struct ExecutorOptions {
  // Per-execution logs go to LOG_DIR/<exec_id>.<attempt>.out and .err
  // (created if missing); empty = keep only the in-memory output tail.
  std::string log_dir;
  // Per stream; beyond it output is read and dropped, and a marker line written.
  size_t max_log_bytes = 16 << 20;
  size_t output_tail_bytes = 64 << 10;
  // Kept for the RESULT so a failure alert can show what the task said.
  size_t stderr_tail_bytes = 2 << 10;
  ContainmentMode containment = ContainmentMode::kAuto;
  // The worker's cgroup directory name: a worker restarted with the same
  // name kills what its predecessor left in it. Empty: "apollo11-PID".
  std::string containment_name = "";
  // Each execution's inputs go to a fresh directory under this one, removed
  // when the execution ends; empty = $TMPDIR (or /tmp). A node passes
  // TaskInputs::DefaultRoot (a tmpfs when there is one).
  std::string inputs_dir{};
  // Where tasks' file: secrets live, one directory per pipeline or domain
  // (executor/secret_scope.h); --secrets-dir.
  std::string secrets_dir = "/etc/apollo11/secrets";
  // The most a task may write to $APOLLO11_OUTPUT; more fails the task.
  size_t max_task_output_bytes = 64 << 10;
  // Threads running db tasks' statements (created on the first db task);
  // further db tasks wait for one to be free.
  size_t db_threads = 4;
};

}  // namespace apollo11::executor
