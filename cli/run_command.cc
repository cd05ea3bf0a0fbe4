// `apollo11 run FILE`: an embedded run. Validates the pipeline, then starts
// a Node of role all in this process, its coordinator and worker linked over
// inproc ZeroMQ sockets exactly as a cluster is over tcp, submits the run as
// any client does (RemoteCoordinator::SubmitAndFollow), shows progress
// (RunFollower, cli/run_follower.h), and exits with the run's outcome.
//
// `apollo11 run --resume RUN_ID`: the same, for a run an earlier process left
// unfinished (killed, powered off): the coordinator recovers it from the
// journal and carries on where it stopped.
//
// RunEmbeddedRerun (`apollo11 rerun` without a coordinator): the same, for a
// rerun of a finished run of the state dir.

#include <malloc.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "actors/client_protocol.h"
#include "actors/dispatcher/dispatcher_core.h"
#include "actors/queries/run_views.h"
#include "actors/scheduler/spec_handoff.h"
#include "cli/command.h"
#include "cli/logging_setup.h"
#include "cli/node.h"
#include "cli/remote.h"
#include "cli/run_follower.h"
#include "cli/state_dir.h"
#include "cli/usage_errors.h"
#include "common/ids.h"
#include "common/json_dump.h"
#include "common/log_event.h"
#include "common/stderr_line.h"
#include "common/terminate_handler.h"
#include "dsl/diagnostic.h"
#include "dsl/param_values.h"
#include "dsl/parser.h"
#include "dsl/pipeline_json.h"
#include "executor/exec_types.h"
#include "storage/journal.h"

namespace apollo11::cli {
namespace {

struct RunFlags {
  std::string file;
  std::string resume;                     // run id to continue instead of a new run of `file`
  std::optional<actors::RerunRun> rerun;  // a rerun instead of a new run of `file`
  std::string state_dir;
  bool json = false;
  bool quiet = false;        // only the final summary and errors on stderr
  bool no_progress = false;  // no progress line, even on a terminal
  unsigned slots = 0;
  int prefetch = -1;  // -1: adaptive (actors/worker/queue_depth.h)
  size_t max_backlog = 1000;
  size_t max_retrying = 100;
  std::string heartbeat = "1s";
  int liveness = 3;
  std::string log_level = "warn";
  std::string log_format;  // json, text; empty: text on a terminal, else json
  std::vector<std::string> library_dirs;
  std::vector<std::string> params;  // registry: -p key=value
  std::string secrets_dir;          // empty: $APOLLO11_SECRETS_DIR, else the workers' default
};

// Where the embedded worker's tasks find their file: secrets: --secrets-dir,
// else $APOLLO11_SECRETS_DIR, else a node's default; made absolute.
std::string EmbeddedSecretsDir(const std::string& flag) {
  std::string dir = flag;
  if (dir.empty()) {
    const char* env = std::getenv("APOLLO11_SECRETS_DIR");
    dir = env != nullptr && *env != '\0' ? env : executor::ExecutorOptions{}.secrets_dir;
  }
  std::error_code ec;
  const std::filesystem::path absolute = std::filesystem::absolute(dir, ec);
  return ec ? dir : absolute.lexically_normal().string();
}

// Pipelines up to this many tasks are handed to the in-process scheduler as
// their model (SpecHandoff) besides their snapshot; larger ones are freed
// task by task while their snapshot is written, so the model and the text
// are never both whole in memory (the 1M-task run's peak).
constexpr size_t kHandoffMaxTasks = 65536;

// apollo11 run's one worker is in group default with no labels: a task that
// asks for another group or for labels would stay READY for good. Refused
// before anything starts, naming such tasks (five, then how many more).
Status RefuseUnplaceable(const dsl::PipelineSpec& spec) {
  std::string named;
  size_t count = 0;
  for (const dsl::TaskSpec& t : spec.tasks) {
    const std::string& group = t.group.get();
    const std::vector<std::string>& labels = t.labels.get();
    if (group == "default" && labels.empty()) continue;
    if (++count > 5) continue;
    std::string needs = group == "default" ? "" : "group " + group;
    for (const std::string& label : labels) {
      needs += (needs.empty() ? "label " : ", label ") + label;
    }
    named += (named.empty() ? "" : "; ") + ("'" + t.id + "' (" + needs + ")");
  }
  if (count == 0) return Status::Ok();
  if (count > 5) named += "; and " + std::to_string(count - 5) + " more";
  return Status::InvalidInput(
      "apollo11 run's one worker is in group default with no labels, so these tasks would wait "
      "for a worker for good: " +
      named + ". Run the pipeline on a cluster (apollo11 submit) or drop their group and labels");
}

// Parses and checks `file` as `validate` does, and keeps its snapshot
// (canonical JSON) and task count; the model goes to the embedded scheduler
// (SpecHandoff), or, for a large pipeline, is freed before the coordinator
// builds its own from the snapshot. kExitOk, or the exit code of the
// refusal.
int LoadPipeline(const std::string& file, const std::vector<std::string>& library_dirs, bool quiet,
                 const std::vector<std::string>& param_args, actors::SubmitRun* submit,
                 size_t* task_count) {
  dsl::ParseOptions options;
  options.library_dirs = library_dirs;
  dsl::ParseResult parsed = dsl::LoadPipelineFile(file, options);
  for (const dsl::Diagnostic& d : parsed.diagnostics) {
    if (quiet && d.severity != dsl::Diagnostic::Severity::kError) continue;
    StderrPrintf(
        d.severity == dsl::Diagnostic::Severity::kError ? spdlog::level::err : spdlog::level::warn,
        "diagnostic", "%s\n", dsl::FormatDiagnostic(d).c_str());
  }
  if (!parsed.ok()) return kExitInvalidInput;
  const dsl::PipelineSpec& spec = *parsed.pipeline;
  if (Status placeable = RefuseUnplaceable(spec); !placeable.ok()) {
    return FailCommand("run", placeable);
  }
  if (!spec.schedule.empty() && !quiet) {
    StderrPrintf(spdlog::level::warn, "note",
                 "apollo11 run: note: the pipeline's schedule (\"%s\") is not kept here: apollo11 "
                 "run runs it once, now. Register it (apollo11 pipelines add) to run it on its "
                 "schedule\n",
                 spec.schedule.c_str());
  }
  std::map<std::string, std::string> given;
  for (const std::string& arg : param_args) {
    Status s = dsl::ParseParamArg(arg, &given);
    if (!s.ok()) return FailCommand("run", s);
  }
  auto params = dsl::ResolveParams(spec.name, spec.params, given);
  if (!params.ok()) return FailCommand("run", params.status());
  *task_count = spec.tasks.size();
  dsl::ForgetSource(&*parsed.pipeline);
  if (*task_count <= kHandoffMaxTasks) {
    submit->pipeline_json = dsl::CanonicalJson(spec);
    submit->pipeline_hash = dsl::HashCanonicalJson(submit->pipeline_json);
    actors::SpecHandoff::Offer(submit->pipeline_hash, std::move(*parsed.pipeline));
  } else {
    submit->pipeline_json = dsl::TakeCanonicalJson(std::move(*parsed.pipeline));
    submit->pipeline_hash = dsl::HashCanonicalJson(submit->pipeline_json);
  }
  submit->params = std::move(*params);
  return kExitOk;
}

// A node of role all on inproc endpoints, without HTTP: the coordinator
// recovers nothing for a new run, and only RUN_ID for --resume.
NodeConfig EmbeddedNodeConfig(const RunFlags& flags, const std::string& state_dir,
                              Millis heartbeat) {
  NodeConfig c;
  c.state_dir = state_dir;
  const std::string instance = std::to_string(::getpid());
  actors::CoordinatorConfig& cc = c.coordinator_config;
  cc.instance = instance;
  cc.worker_endpoint = "inproc://a11-" + instance + "-workers";
  cc.client_endpoint = "inproc://a11-" + instance + "-clients";
  cc.scheduler.max_backlog = flags.max_backlog;
  cc.scheduler.max_retrying = flags.max_retrying;
  cc.scheduler.retry_stagger = actors::kDefaultRetryStagger;
  cc.reconciler.heartbeat = heartbeat;
  cc.reconciler.liveness = flags.liveness;
  if (!flags.resume.empty()) {
    cc.scheduler.recover = actors::SchedulerOptions::RecoverMode::kOne;
    cc.scheduler.recover_run = flags.resume;
  } else {
    cc.scheduler.recover = actors::SchedulerOptions::RecoverMode::kNone;
  }
  actors::WorkerConfig& wc = c.worker_config;
  // A fixed identity: the state dir lock makes it unique, and a resumed run's
  // worker finds the results the killed process left in its outbox.
  wc.worker.worker_id = "local";
  wc.outbox_dir = state_dir + "/worker-local/outbox";
  wc.worker.slots = flags.slots ? flags.slots : std::max(1u, std::thread::hardware_concurrency());
  actors::SetPrefetchFlag(flags.prefetch, &wc.worker);
  wc.worker.heartbeat = heartbeat;
  wc.worker.liveness = flags.liveness;
  wc.executor.log_dir = LogDir(state_dir);
  wc.executor.secrets_dir = EmbeddedSecretsDir(flags.secrets_dir);
  return c;
}

// --resume: the run must exist and be unfinished (nullopt: go on; `*tasks`
// gets its task count); else the exit code, after showing a finished one.
// A new run: runs an earlier process left unfinished are pointed out.
std::optional<int> CheckResume(storage::Journal& journal, const RunFlags& flags,
                               const std::string& state_dir, size_t* tasks) {
  if (flags.resume.empty()) {
    if (flags.quiet) return std::nullopt;
    if (auto unfinished = journal.UnfinishedRuns(); unfinished.ok()) {
      for (const storage::RunRecord& r : *unfinished) {
        StderrPrintf(spdlog::level::info, "run_interrupted_earlier",
                     "note: run %s of %s was interrupted; continue it with `apollo11 run "
                     "--resume %s`\n",
                     r.run_id.c_str(), r.pipeline_name.c_str(), r.run_id.c_str());
      }
    }
    return std::nullopt;
  }
  if (Status valid = CheckRunId(flags.resume); !valid.ok()) {
    StderrPrintf(spdlog::level::err, "error", "apollo11 run: --resume: %s\n",
                 valid.message().c_str());
    return kExitInvalidInput;
  }
  auto previous = journal.GetRun(flags.resume);
  if (!previous.ok()) {
    StderrPrintf(spdlog::level::err, "error", "apollo11 run: %s\n",
                 previous.status().ToString().c_str());
    return kExitInternal;
  }
  if (!previous->has_value()) {
    StderrPrintf(spdlog::level::err, "error", "apollo11 run: no run %s in %s\n",
                 flags.resume.c_str(), state_dir.c_str());
    return kExitInvalidInput;
  }
  const storage::RunRecord& record = **previous;
  if (IsFinal(record.status)) {
    StderrPrintf(spdlog::level::err, "error",
                 "apollo11 run: run %s already ended %s; nothing to resume\n", flags.resume.c_str(),
                 ToString(record.status));
    if (Status shown = PrintRunSummaryFromJournal(record, &journal, stdout); !shown.ok()) {
      StderrPrintf(spdlog::level::err, "error", "apollo11 run: cannot read run %s's tasks: %s\n",
                   flags.resume.c_str(), shown.ToString().c_str());
    }
    return record.status == RunStatus::kSuccess ? kExitOk : kExitRunFailed;
  }
  *tasks = record.task_count;
  return std::nullopt;
}

// Opens the node's state and starts its actors (nullopt), or returns the
// exit code, having said why on stderr. Logging moves to the state dir's
// coordinator.log once it is ours.
std::optional<int> StartNode(Node& node, const RunFlags& flags, LogSettings log,
                             size_t* resumed_tasks) {
  const std::string& state_dir = node.config().state_dir;
  if (Status s = node.OpenState(); !s.ok()) {
    if (node.failed_stage() == NodeStage::kJournal) {
      StderrPrintf(spdlog::level::err, "error", "apollo11 run: cannot open the journal in %s: %s\n",
                   state_dir.c_str(), s.ToString().c_str());
    } else {
      StderrPrintf(spdlog::level::err, "error", "apollo11 run: %s\n", s.message().c_str());
    }
    return kExitInternal;
  }
  log.file = state_dir + "/coordinator.log";
  if (Status s = SetUpLogging(log); !s.ok()) {
    StderrPrintf(spdlog::level::err, "error", "apollo11 run: %s\n", s.message().c_str());
    return kExitInternal;
  }
  InstallTerminateHandler();  // a thread that dies says so in the log before the abort
  if (auto code = CheckResume(*node.journal(), flags, state_dir, resumed_tasks)) return code;
  if (Status s = node.StartActors(); !s.ok()) {
    const NodeStage stage = node.failed_stage();
    const char* what = stage == NodeStage::kCoordinator ? "coordinator failed to start: "
                       : stage == NodeStage::kWorker    ? "worker failed to start: "
                                                        : "";
    StderrPrintf(spdlog::level::err, "error", "apollo11 run: %s%s\n", what, s.ToString().c_str());
    return kExitInternal;
  }
  return std::nullopt;
}

// Submits the run (or, resumed, takes it as it is) and follows it to its
// end. Returns the run id ("" when the submission failed, with `*code` set)
// and whether it finished.
std::string SubmitAndFollow(Node& node, RemoteCoordinator& client, actors::SubmitRun submit,
                            const RunFlags& flags, size_t tasks, bool* finished, int* code) {
  RunFollower follower(
      node,
      {.resume = !flags.resume.empty(), .quiet = flags.quiet, .no_progress = flags.no_progress});
  std::string run_id = flags.resume;
  FollowHooks hooks = follower.Hooks(tasks);
  if (flags.resume.empty()) {
    auto accepted = hooks.accepted;
    hooks.accepted = [&](const std::string& id) {
      run_id = id;
      accepted(id);
    };
    auto done = flags.rerun ? client.RerunAndFollow(*flags.rerun, hooks)
                            : client.SubmitAndFollow(std::move(submit), hooks);
    if (!done.ok() && run_id.empty()) {
      if (done.status().code() == StatusCode::kIo) {
        StderrPrintf(spdlog::level::err, "error",
                     "apollo11 run: the scheduler did not answer the submission in 60s\n");
        *code = kExitInternal;
      } else {
        StderrPrintf(spdlog::level::err, "error", "apollo11 %s: %s\n",
                     flags.rerun ? "rerun" : "run: the run was refused",
                     done.status().message().c_str());
        *code = kExitInvalidInput;
      }
      return "";
    }
    *finished = done.ok();
  } else {
    const actors::RecoveryReport& r = node.coordinator()->recovery();
    if (!flags.quiet) {
      std::fprintf(
          stderr, "run %s resumed: %zu tasks, %zu were RUNNING, %zu READY (recovered in %.1f ms)\n",
          run_id.c_str(), tasks, r.running, r.ready, static_cast<double>(r.elapsed_us) / 1000.0);
    }
    *finished = client.Follow(run_id, hooks).ok();
  }
  if (follower.failure()) {
    spdlog::error("an actor died: {}; stopping the run", follower.failure()->ToString());
    StderrPrintf(spdlog::level::err, "error", "apollo11 run: %s\n",
                 follower.failure()->ToString().c_str());
  }
  follower.Finish(run_id);
  return run_id;
}

// The summary, from the journal: what is reported is what was recorded.
int Summarize(storage::Journal& journal, const std::string& run_id, bool json, bool finished) {
  auto run = journal.GetRun(run_id);
  if (!run.ok() || !run->has_value()) {
    StderrPrintf(spdlog::level::err, "error",
                 "apollo11 run: cannot read run %s back from the journal\n", run_id.c_str());
    return kExitInternal;
  }
  const storage::RunRecord& record = **run;
  Status shown;
  if (json) {
    // Every task, written as the journal yields them.
    shown = actors::WriteRunSummaryJson(record, &journal, [](std::string_view piece) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
    });
    if (shown.ok()) std::fputc('\n', stdout);
  } else {
    shown = PrintRunSummaryFromJournal(record, &journal, stdout);
  }
  if (!shown.ok()) {
    StderrPrintf(spdlog::level::err, "error",
                 "apollo11 run: cannot read run %s back from the journal: %s\n", run_id.c_str(),
                 shown.ToString().c_str());
    return kExitInternal;
  }
  if (!finished) return kExitInternal;
  return record.status == RunStatus::kSuccess ? kExitOk : kExitRunFailed;
}

int Run(const RunFlags& flags) {
  SetProcessLogNode(CoordinatorLogNode());
  LogSettings log;
  // --quiet: only errors on stderr, unless a level was asked for.
  log.level = flags.quiet && flags.log_level == "warn" ? "error" : flags.log_level;
  log.format = flags.log_format;
  if (Status s = SetUpLogging(log); !s.ok()) {
    StderrPrintf(spdlog::level::err, "error", "apollo11 run: %s\n", s.message().c_str());
    return kExitInvalidInput;
  }
  const bool resume = !flags.resume.empty();
  if (!flags.rerun && resume == !flags.file.empty()) {
    StderrPrintf(spdlog::level::err, "error",
                 "apollo11 run: give a pipeline FILE, or --resume RUN_ID (not both)\n");
    return kExitInvalidInput;
  }
  actors::SubmitRun submit;
  size_t tasks = 0;
  if (!resume && !flags.rerun) {
    if (int code = LoadPipeline(flags.file, flags.library_dirs, flags.quiet, flags.params, &submit,
                                &tasks);
        code != kExitOk)
      return code;
  }
  // yaml-cpp's node tree of a large file peaks at several times the model's
  // size (66 MB of RSS for 10k tasks); all of it is free now. Hand those pages back
  // to the OS, or the process keeps them as RSS for the whole run while the
  // coordinator's threads allocate from arenas of their own.
  ::malloc_trim(0);
  auto heartbeat = ParseDuration(flags.heartbeat);
  if (!heartbeat.ok()) {
    StderrPrintf(spdlog::level::err, "error", "apollo11 run: --heartbeat: %s\n",
                 heartbeat.status().message().c_str());
    return kExitInvalidInput;
  }
  SystemClock clock;
  const std::string state_dir = ResolveStateDir(flags.state_dir);
  Node node(EmbeddedNodeConfig(flags, state_dir, *heartbeat), &clock);
  if (auto code = StartNode(node, flags, log, &tasks)) return *code;
  if (flags.rerun) {  // the original's task count, for the start line
    auto original = node.journal()->GetRun(flags.rerun->run_id);
    if (original.ok() && original->has_value()) tasks = (*original)->task_count;
  }
  auto client =
      RemoteCoordinator::ConnectWithKeys(node.coordinator()->client_endpoint(), std::nullopt, "",
                                         std::chrono::seconds(60), &node.context());
  if (!client.ok()) {
    StderrPrintf(spdlog::level::err, "error", "apollo11 run: %s\n",
                 client.status().ToString().c_str());
    return kExitInternal;
  }
  (*client)->set_warn_on_journal_error(false);  // run reports from the journal itself
  RunFollower::CatchInterrupts();
  bool finished = false;
  int code = kExitOk;
  // The snapshot is the coordinator's once sent: it is moved, not copied.
  const std::string run_id =
      SubmitAndFollow(node, **client, std::move(submit), flags, tasks, &finished, &code);
  if (run_id.empty()) return code;
  node.Stop(/*drain=*/false);
  client->reset();
  return Summarize(*node.journal(), run_id, flags.json, finished);
}

}  // namespace

int RunEmbeddedRerun(const actors::RerunRun& rerun, const std::string& state_dir, bool json,
                     bool quiet) {
  RunFlags flags;
  flags.rerun = rerun;
  flags.state_dir = state_dir;
  flags.json = json;
  flags.quiet = quiet;
  return Run(flags);
}

void AddRunCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<RunFlags>();
  CLI::App* cmd = app.add_subcommand("run", "run a pipeline on this machine (embedded mode)");
  cmd->add_option("file", flags->file, "pipeline YAML file");
  AddLibraryOption(cmd, &flags->library_dirs);
  cmd->add_option("-p,--param", flags->params,
                  "a declared param: key=value (repeatable; undeclared or ill-typed are refused)")
      ->allow_extra_args(false);
  cmd->add_option("--resume", flags->resume,
                  "continue run RUN_ID that an interrupted process left unfinished");
  cmd->add_option("--state-dir", flags->state_dir,
                  "where the journal and task logs live (default $APOLLO11_STATE_DIR, "
                  "else $XDG_STATE_HOME/apollo11, else ~/.local/state/apollo11)");
  cmd->add_option("--secrets-dir", flags->secrets_dir,
                  "where tasks' file: secrets live, DIR/PIPELINE/ or DIR/DOMAIN/ (default "
                  "$APOLLO11_SECRETS_DIR, else /etc/apollo11/secrets)");
  cmd->add_flag("--json", flags->json, "print the final summary as JSON on stdout");
  cmd->add_flag("--quiet,-q", flags->quiet,
                "print only the final summary and errors (no start line, notes or progress)");
  cmd->add_flag("--no-progress", flags->no_progress,
                "no progress line (it is drawn only when stderr is a terminal)");
  cmd->add_option("--slots", flags->slots, "tasks run at once (0: the number of cores)")
      ->check(AtLeast(0));
  cmd->add_option("--prefetch", flags->prefetch,
                  "executions queued beyond --slots, started as slots free (-1: adapts to how long "
                  "tasks take, between 2 x slots and 32 x slots, at least 4, at most 256)")
      ->check(CLI::Range(-1, static_cast<int>(actors::kMaxWorkerPrefetch)));
  cmd->add_option("--max-backlog", flags->max_backlog,
                  "READY+RUNNING executions before promotion pauses")
      ->check(AtLeast(1));
  cmd->add_option("--max-retrying", flags->max_retrying,
                  "retries waiting with a backoff timer at once; more queue (0 = no cap)");
  cmd->add_option("--heartbeat", flags->heartbeat, "heartbeat interval between actors");
  cmd->add_option("--log-level", flags->log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  cmd->add_option("--log-format", flags->log_format,
                  "stderr log format: json or text (default: text on a terminal, else json)")
      ->check(CLI::IsMember({"json", "text"}));
  cmd->callback([flags, exit_code] { *exit_code = Run(*flags); });
}

}  // namespace apollo11::cli
