#pragma once
// The pipeline model: what a YAML pipeline means once parsed, imports resolved,
// templates applied and named retry policies looked up. The parser produces
// it, the engine runs it, the journal stores it (as canonical JSON, see
// pipeline_json.h) so a run keeps the exact spec it started with.

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/duration.h"
#include "common/rare.h"
#include "common/shared_text.h"
#include "dsl/task_types.h"

namespace apollo11::dsl {

// Where something was written, for error messages: FILE:LINE:COL (1-based).
// The parser's locations in one file share its name (SharedText).
struct SourceLocation {
  SharedText file;
  int line = 0;
  int column = 0;

  bool operator==(const SourceLocation&) const = default;
};

enum class DependencyCondition { kSuccess, kFailure, kTimeout, kDone };
enum class Trigger { kAll, kAny };
enum class Backoff { kFixed, kExponential };

const char* ToString(DependencyCondition c);
const char* ToString(Trigger t);
const char* ToString(Backoff b);

// Whether `name` is a pipeline name: dot-separated words of [a-z0-9_-]
// ("shop.orders"). The parser refuses any other; the worker checks again
// before a name becomes a directory (executor/secret_scope.h).
bool IsPipelineName(std::string_view name);

// How a failed (or timed-out) attempt is retried. A task without a policy is
// not retried: there is no global default.
struct RetryPolicy {
  int max_retries = 0;  // retries after the first attempt
  Millis delay{1000};   // first retry's delay
  Backoff backoff = Backoff::kFixed;
  Millis max_delay{0};             // cap on the delay; 0 = no cap
  double jitter = 0.0;             // +/- fraction of the delay; 0.2 default for exponential
  std::vector<int> on_exit_codes;  // retry only these exit codes; empty = any failure

  bool operator==(const RetryPolicy&) const = default;
};

struct Dependency {
  std::string task;  // upstream task id
  DependencyCondition on = DependencyCondition::kSuccess;
  // Boxed: the scheduler's model (decoded from a snapshot) has none, and a
  // 100k-task DAG has about 180k dependencies.
  Rare<SourceLocation> where;

  bool operator==(const Dependency&) const = default;
};

// The defaults of the task fields boxed with one other than "" (Rare's
// policy): an http task's method and every task's worker group.
struct DefaultHttpMethod {
  static const std::string& Value();  // "GET"
};
struct DefaultGroup {
  static const std::string& Value();  // "default"
};

// One task. The fields most tasks leave unset are Rare or RareOptional
// (common/rare.h): 8 bytes each until set. Each member is listed in
// APOLLO11_TASK_FIELDS (dsl/task_fields.h), which gives its YAML key, reader,
// snapshot JSON and whether workers get it.
struct TaskSpec {
  std::string id;
  // The four small fields side by side: 16 bytes, where spread out among the
  // pointers they took 32.
  TaskType type = TaskType::kNoop;
  Trigger trigger = Trigger::kAll;
  int priority = 0;            // higher is placed first
  int max_parallel = 0;        // foreach instances running at once; 0 = no cap
  Rare<SourceLocation> where;  // boxed, as Dependency's

  // shell
  Rare<std::string> command;
  Rare<std::string> workdir;
  // python: the script's file name. When the parser reads files, `script:`
  // is read into `code` and only its file name is kept here (the snapshot
  // holds what runs, not where it was read from); a pipeline parsed without
  // file reads (registered over HTTP) may instead name an absolute path on
  // the worker, which is run as it is then (its code is not captured).
  Rare<std::string> script;
  Rare<std::vector<std::string>> args;
  // http
  Rare<std::string> url;
  Rare<std::string, DefaultHttpMethod> method;  // boxed only when not GET
  Rare<std::map<std::string, std::string>> headers;
  Rare<std::string> body;
  Rare<std::vector<int>> expect_status;  // empty = any 2xx
  // db: host is a URL postgres://, mysql:// or sqlite://
  Rare<std::string> db_host;
  Rare<std::string> sql;  // db: the statement; a db task's `script:` file is read into it

  std::vector<Dependency> depends_on;
  RareOptional<RetryPolicy> retry;  // none: not retried
  RareOptional<Millis> timeout;
  Rare<std::string, DefaultGroup> group;  // boxed only when not "default"
  // Runs only on a worker of its group announcing all of these (--labels).
  Rare<std::vector<std::string>> labels;
  Rare<std::string> idempotency_key;  // template; empty = "${run_id}.${task_id}"
  Rare<std::string> precheck;         // shell command run before a requeued attempt
  Rare<std::map<std::string, std::string>> env;
  Rare<std::string> foreach;  // upstream task whose output fans this task out
  // Where foreach's items are: empty = one item per line of the upstream's
  // stdout; "output" or "output.PATH" = the JSON array at that path of its
  // $APOLLO11_OUTPUT output. Set by `foreach: {task: T, items: ...}`.
  Rare<std::string> foreach_items;
  // db: values bound in order to $1.. (postgres) or ? (mysql, sqlite), never
  // pasted into the SQL text.
  Rare<std::vector<std::string>> sql_params;
  // db: the environment variable holding the password (executor/db_password.h).
  Rare<std::string> db_password_env;
  // Environment variable name -> secret reference (dsl/secret_ref.h); the
  // worker resolves the values at launch. Only references are stored.
  Rare<std::map<std::string, std::string>> secrets;
  // python: the source the worker runs (`code:` inline, or a `script:`
  // file's content read at submission or registration, which may be
  // empty), at most kMaxTaskCodeBytes. Unused when `script` is an absolute
  // path: a path on the worker.
  Rare<std::string> code;

  bool operator==(const TaskSpec&) const = default;
};

// An alert rule declared in the pipeline.
struct AlertRule {
  std::vector<std::string> events;  // e.g. retries_exhausted, task_timeout, run_failed
  std::string webhook;              // URL, or empty
  std::string command;              // shell command, or empty

  bool operator==(const AlertRule&) const = default;
};

struct PipelineSpec {
  std::string version;          // "1.0"
  std::string name;             // domain-prefixed, e.g. "order.sync"
  std::string source_file;      // absolute path of the top-level file
  std::vector<TaskSpec> tasks;  // in file order
  std::map<std::string, std::string> params;
  int concurrency = 0;   // max tasks running at once in one run; 0 = unlimited
  std::string schedule;  // cron text, validated; empty = none
  // How the schedule fires (sched; docs/dsl.md "Schedules"). Only with a
  // schedule; the defaults otherwise.
  std::string timezone;                     // IANA zone name; empty = UTC
  std::string catchup = "latest";           // none | latest | all
  Millis catchup_window{24 * 3600 * 1000};  // how far back catch-up looks
  std::string overlap = "skip";             // skip | queue | allow
  int max_active_runs = 1;                  // runs of the schedule at once
  std::vector<AlertRule> alerts;

  // The task with `id`, or nullptr.
  const TaskSpec* FindTask(const std::string& id) const;

  // Field-by-field equality, source locations included (added for JSON round-trip tests).
  bool operator==(const PipelineSpec&) const = default;
};

}  // namespace apollo11::dsl
