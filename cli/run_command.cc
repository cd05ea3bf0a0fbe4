// `apollo11 run FILE`: an embedded run. Validates the pipeline, then starts
// the coordinator's actors and a worker in this process, linked over inproc
// ZeroMQ sockets exactly as a cluster is over tcp, submits the run, shows
// progress, and exits with the run's outcome.
//
// `apollo11 run --resume RUN_ID`: the same, for a run an earlier process left
// unfinished (killed, powered off): the coordinator recovers it from the
// journal and carries on where it stopped.

#include <malloc.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <thread>

#include "actors/actor_loop.h"
#include "actors/coordinator.h"
#include "actors/internal_messages.h"
#include "actors/worker_actor.h"
#include "cli/command.h"
#include "cli/logging_setup.h"
#include "cli/state_dir.h"
#include "common/json_dump.h"
#include "common/log_event.h"
#include "dsl/diagnostic.h"
#include "dsl/parser.h"
#include "dsl/pipeline_json.h"
#include "storage/journal.h"
#include "storage/state_dir_lock.h"
#include "transport/codec.h"
#include "transport/sockets.h"

namespace apollo11::cli {
namespace {

std::atomic<int> g_interrupts{0};

extern "C" void OnInterrupt(int) { g_interrupts.fetch_add(1); }

struct RunFlags {
  std::string file;
  std::string resume;  // run id to continue instead of a new run of `file`
  std::string state_dir;
  bool json = false;
  unsigned slots = 0;
  size_t max_backlog = 1000;
  std::string heartbeat = "1s";
  int liveness = 3;
  std::string log_level = "warn";
  std::string log_format;  // json, text; empty: text on a terminal, else json
};

const char* kStateOrder[] = {"PENDING", "READY",   "RUNNING", "RETRYING", "SUCCESS",
                             "FAILED",  "TIMEOUT", "SKIPPED", "CANCELED"};

std::string ProgressLine(const std::vector<uint32_t>& counts, double elapsed) {
  std::string line;
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%7.1fs ", elapsed);
  line += buf;
  for (const char* name : kStateOrder) {
    auto state = ParseTaskState(name);
    uint32_t n = counts.size() > static_cast<size_t>(*state) ? counts[static_cast<int>(*state)] : 0;
    if (n == 0) continue;
    std::snprintf(buf, sizeof(buf), " %s %u", name, n);
    line += buf;
  }
  return line;
}

// Counts of a run's tasks by state, read from the journal (resume mode has
// no RunProgress subscription: the run was submitted by another process).
std::vector<uint32_t> CountsFromJournal(storage::Journal& journal, const std::string& run_id) {
  std::vector<uint32_t> counts(kTaskStateCount, 0);
  auto execs = journal.ExecutionsOfRun(run_id);
  if (!execs.ok()) return counts;
  for (const storage::ExecutionRecord& e : *execs) ++counts[static_cast<int>(e.state)];
  return counts;
}

int Run(const RunFlags& flags) {
  SetProcessLogNode(CoordinatorLogNode());
  LogSettings log;
  log.level = flags.log_level;
  log.format = flags.log_format;
  if (Status s = SetUpLogging(log); !s.ok()) {
    std::fprintf(stderr, "apollo11 run: %s\n", s.message().c_str());
    return kExitInvalidInput;
  }
  const bool resume = !flags.resume.empty();
  if (resume == !flags.file.empty()) {
    std::fprintf(stderr, "apollo11 run: give a pipeline FILE, or --resume RUN_ID (not both)\n");
    return kExitInvalidInput;
  }

  // 1. The pipeline: the same checks and messages as `validate`. Only its
  // snapshot (canonical JSON) and task count are kept: the model is freed
  // before the coordinator builds its own from the snapshot, so the two are
  // never in memory at once.
  actors::SubmitRun submit;
  size_t task_count = 0;
  if (!resume) {
    dsl::ParseResult parsed = dsl::LoadPipelineFile(flags.file);
    for (const dsl::Diagnostic& d : parsed.diagnostics) {
      std::fprintf(stderr, "%s\n", dsl::FormatDiagnostic(d).c_str());
    }
    if (!parsed.ok()) return kExitInvalidInput;
    const dsl::PipelineSpec& spec = *parsed.pipeline;
    for (const dsl::TaskSpec& task : spec.tasks) {
      if (task.type == dsl::TaskType::kDb) {
        std::fprintf(stderr,
                     "%s:%d:%d: error: task '%s' is a db task; db tasks validate but this version "
                     "of Apollo-11 cannot run them yet\n",
                     task.where.file.c_str(), task.where.line, task.where.column, task.id.c_str());
        return kExitInvalidInput;
      }
      if (!task.foreach.empty()) {
        std::fprintf(stderr,
                     "%s:%d:%d: error: task '%s' uses foreach; dynamic fan-out validates but this "
                     "version of Apollo-11 cannot run it yet\n",
                     task.where.file.c_str(), task.where.line, task.where.column, task.id.c_str());
        return kExitInvalidInput;
      }
    }
    submit.pipeline_json = dsl::CanonicalJson(spec);
    submit.pipeline_hash = dsl::HashCanonicalJson(submit.pipeline_json);
    submit.params = spec.params;
    task_count = spec.tasks.size();
  }
  // yaml-cpp's node tree of a large file peaks at several times the model's
  // size (66 MB of RSS for 10k tasks); all of it is free now. Hand those pages back
  // to the OS, or the process keeps them as RSS for the whole run while the
  // coordinator's threads allocate from arenas of their own.
  ::malloc_trim(0);
  auto heartbeat = ParseDuration(flags.heartbeat);
  if (!heartbeat.ok()) {
    std::fprintf(stderr, "apollo11 run: --heartbeat: %s\n", heartbeat.status().message().c_str());
    return kExitInvalidInput;
  }

  // 2. The state dir: locked for this process, journal opened once.
  const std::string state_dir = ResolveStateDir(flags.state_dir);
  auto lock = storage::StateDirLock::Acquire(state_dir);
  if (!lock.ok()) {
    std::fprintf(stderr, "apollo11 run: %s\n", lock.status().message().c_str());
    return kExitInternal;
  }
  // Ours now: keep the JSON log in it too, for `apollo11 trace`.
  log.file = state_dir + "/coordinator.log";
  if (Status s = SetUpLogging(log); !s.ok()) {
    std::fprintf(stderr, "apollo11 run: %s\n", s.message().c_str());
    return kExitInternal;
  }
  auto journal = storage::Journal::Open(JournalDir(state_dir), storage::JournalOptions{});
  if (!journal.ok()) {
    std::fprintf(stderr, "apollo11 run: cannot open the journal in %s: %s\n", state_dir.c_str(),
                 journal.status().ToString().c_str());
    return kExitInternal;
  }
  size_t resumed_tasks = 0;
  if (resume) {
    auto previous = (*journal)->GetRun(flags.resume);
    if (!previous.ok()) {
      std::fprintf(stderr, "apollo11 run: %s\n", previous.status().ToString().c_str());
      return kExitInternal;
    }
    if (!previous->has_value()) {
      std::fprintf(stderr, "apollo11 run: no run %s in %s\n", flags.resume.c_str(),
                   state_dir.c_str());
      return kExitInvalidInput;
    }
    const storage::RunRecord& record = **previous;
    if (IsFinal(record.status)) {
      std::fprintf(stderr, "apollo11 run: run %s already ended %s; nothing to resume\n",
                   flags.resume.c_str(), ToString(record.status));
      auto execs = (*journal)->ExecutionsOfRun(flags.resume);
      if (execs.ok()) PrintRunSummary(RunSummaryJson(record, *execs), stdout);
      return record.status == RunStatus::kSuccess ? kExitOk : kExitRunFailed;
    }
    resumed_tasks = record.task_count;
  } else if (auto unfinished = (*journal)->UnfinishedRuns();
             unfinished.ok() && !unfinished->empty()) {
    for (const storage::RunRecord& r : *unfinished) {
      std::fprintf(stderr,
                   "note: run %s of %s was interrupted; continue it with `apollo11 run --resume "
                   "%s`\n",
                   r.run_id.c_str(), r.pipeline_name.c_str(), r.run_id.c_str());
    }
  }
  auto epoch = (*journal)->BumpEpoch();
  if (!epoch.ok()) {
    std::fprintf(stderr, "apollo11 run: %s\n", epoch.status().ToString().c_str());
    return kExitInternal;
  }

  // 3. The actors.
  SystemClock clock;
  zmq::context_t ctx;
  const std::string instance = std::to_string(::getpid());
  actors::CoordinatorConfig cc;
  cc.instance = instance;
  cc.worker_endpoint = "inproc://a11-" + instance + "-workers";
  cc.client_endpoint = "inproc://a11-" + instance + "-clients";
  cc.epoch = *epoch;
  cc.scheduler.max_backlog = flags.max_backlog;
  cc.reconciler.heartbeat = *heartbeat;
  cc.reconciler.liveness = flags.liveness;
  if (resume) {
    cc.scheduler.recover = actors::SchedulerOptions::RecoverMode::kOne;
    cc.scheduler.recover_run = flags.resume;
  } else {
    cc.scheduler.recover = actors::SchedulerOptions::RecoverMode::kNone;
  }
  auto coordinator = actors::Coordinator::Start(ctx, journal->get(), &clock, cc);
  if (!coordinator.ok()) {
    std::fprintf(stderr, "apollo11 run: coordinator failed to start: %s\n",
                 coordinator.status().ToString().c_str());
    return kExitInternal;
  }
  actors::WorkerConfig wc;
  wc.coordinator_endpoint = (*coordinator)->worker_endpoint();
  // A fixed identity: the state dir lock makes it unique, and a resumed run's
  // worker finds the results the killed process left in its outbox.
  wc.worker.worker_id = "local";
  wc.outbox_dir = state_dir + "/worker-local/outbox";
  wc.worker.slots = flags.slots ? flags.slots : std::max(1u, std::thread::hardware_concurrency());
  wc.worker.heartbeat = *heartbeat;
  wc.worker.liveness = flags.liveness;
  wc.executor.log_dir = LogDir(state_dir);
  auto worker = actors::WorkerActor::Start(ctx, &clock, wc);
  if (!worker.ok()) {
    std::fprintf(stderr, "apollo11 run: worker failed to start: %s\n",
                 worker.status().ToString().c_str());
    return kExitInternal;
  }

  // 4. Submit and follow.
  zmq::socket_t client(ctx, zmq::socket_type::dealer);
  transport::SocketOptions client_options;
  client_options.immediate = false;
  Status s = transport::ConfigureDealer(client, "cli-" + instance, client_options);
  if (s.ok()) s = transport::Connect(client, (*coordinator)->client_endpoint());
  std::string frame;
  if (!resume) {
    transport::Encode(static_cast<uint16_t>(actors::InternalType::kSubmitRun), submit, &frame);
    // The snapshot is the coordinator's now: do not hold megabytes of it for
    // the run (nor two copies while sending).
    submit = actors::SubmitRun{};
    if (s.ok()) s = transport::Send(client, frame, /*dontwait=*/false);
    std::string().swap(frame);
  }
  if (!s.ok()) {
    std::fprintf(stderr, "apollo11 run: %s\n", s.ToString().c_str());
    return kExitInternal;
  }

  std::signal(SIGINT, OnInterrupt);
  std::signal(SIGTERM, OnInterrupt);
  const bool tty = ::isatty(STDERR_FILENO);
  const Micros started = clock.Now();
  std::string run_id = flags.resume;
  if (resume) {
    const actors::RecoveryReport& r = (*coordinator)->recovery();
    std::fprintf(stderr,
                 "run %s resumed: %zu tasks, %zu were RUNNING, %zu READY (recovered in %.1f ms)\n",
                 run_id.c_str(), resumed_tasks, r.running, r.ready,
                 static_cast<double>(r.elapsed_us) / 1000.0);
  }
  Micros last_poll = 0;
  bool cancel_sent = false;
  bool finished = false;
  Micros last_line = 0;
  std::vector<uint32_t> counts;
  transport::Envelope env;
  zmq::pollitem_t items[] = {{client.handle(), 0, ZMQ_POLLIN, 0}};
  while (!finished) {
    auto polled = transport::Poll(items, std::chrono::milliseconds(100));
    if (!polled.ok()) break;
    if (run_id.empty() && clock.Now() - started > 60 * kMicrosPerSecond) {
      std::fprintf(stderr, "apollo11 run: the scheduler did not answer the submission in 60s\n");
      return kExitInternal;
    }
    if (g_interrupts.load() > 1) {
      std::fprintf(stderr, "\napollo11 run: interrupted twice; exiting without waiting\n");
      std::_Exit(130);
    }
    if (g_interrupts.load() == 1 && !cancel_sent && !run_id.empty()) {
      std::fprintf(stderr, "\napollo11 run: canceling run %s (Ctrl-C again to abandon)\n",
                   run_id.c_str());
      actors::CancelRun cancel{run_id, "canceled by the user (interrupt)"};
      frame.clear();
      transport::Encode(static_cast<uint16_t>(actors::InternalType::kCancelRun), cancel, &frame);
      (void)transport::Send(client, frame, /*dontwait=*/false);
      cancel_sent = true;
    }
    for (;;) {
      auto msg = transport::Recv(client, /*dontwait=*/true);
      if (!msg.ok()) break;
      if (!transport::DecodeEnvelopeInto(msg->data(), msg->size(), &env, actors::ClientLimits())
               .ok()) {
        continue;
      }
      switch (static_cast<actors::InternalType>(env.type)) {
        case actors::InternalType::kSubmitReply: {
          auto reply = transport::BodyAs<actors::SubmitReply>(env);
          if (!reply.ok() || !reply->error.empty()) {
            std::fprintf(stderr, "apollo11 run: the run was refused: %s\n",
                         reply.ok() ? reply->error.c_str() : reply.status().message().c_str());
            return kExitInvalidInput;
          }
          run_id = reply->run_id;
          std::fprintf(stderr, "run %s started: %zu tasks (state in %s)\n", run_id.c_str(),
                       task_count, state_dir.c_str());
          break;
        }
        case actors::InternalType::kRunProgress: {
          auto progress = transport::BodyAs<actors::RunProgress>(env);
          if (progress.ok()) counts = progress->counts;
          break;
        }
        case actors::InternalType::kRunFinished:
          finished = true;
          break;
        default:
          break;
      }
    }
    if (resume && clock.Now() - last_poll >= 200 * kMicrosPerMilli) {
      // Nobody subscribed to the recovered run: follow it in the journal.
      last_poll = clock.Now();
      auto record = (*journal)->GetRun(run_id);
      if (record.ok() && record->has_value() && IsFinal((*record)->status)) finished = true;
      if (finished || !tty || counts.empty() || last_poll - last_line >= kMicrosPerSecond) {
        counts = CountsFromJournal(**journal, run_id);
      }
    }
    const Micros now = clock.Now();
    if (!counts.empty() && (tty || now - last_line >= 2 * kMicrosPerSecond || finished)) {
      std::string line =
          ProgressLine(counts, static_cast<double>(now - started) / kMicrosPerSecond);
      if (tty) {
        std::fprintf(stderr, "\r\033[K%s", line.c_str());
      } else {
        std::fprintf(stderr, "%s\n", line.c_str());
      }
      last_line = now;
    }
  }
  if (tty) std::fprintf(stderr, "\n");

  (*worker)->Stop();
  (*coordinator)->Stop();
  client.close();

  // 5. The summary, from the journal: what is reported is what was recorded.
  auto run = (*journal)->GetRun(run_id);
  auto execs = (*journal)->ExecutionsOfRun(run_id);
  if (!run.ok() || !run->has_value() || !execs.ok()) {
    std::fprintf(stderr, "apollo11 run: cannot read run %s back from the journal\n",
                 run_id.c_str());
    return kExitInternal;
  }
  const storage::RunRecord& record = **run;
  if (flags.json) {
    std::printf("%s\n", SafeJsonDump(RunSummaryJson(record, *execs), 2).c_str());
  } else {
    PrintRunSummary(RunSummaryJson(record, *execs), stdout);
  }
  if (!finished) return kExitInternal;
  return record.status == RunStatus::kSuccess ? kExitOk : kExitRunFailed;
}

}  // namespace

void AddRunCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<RunFlags>();
  CLI::App* cmd = app.add_subcommand("run", "run a pipeline on this machine (embedded mode)");
  cmd->add_option("file", flags->file, "pipeline YAML file");
  cmd->add_option("--resume", flags->resume,
                  "continue run RUN_ID that an interrupted process left unfinished");
  cmd->add_option("--state-dir", flags->state_dir,
                  "where the journal and task logs live (default $APOLLO11_STATE_DIR or "
                  "./.apollo11)");
  cmd->add_flag("--json", flags->json, "print the final summary as JSON on stdout");
  cmd->add_option("--slots", flags->slots, "tasks run at once (default: number of cores)");
  cmd->add_option("--max-backlog", flags->max_backlog,
                  "READY+RUNNING executions before promotion pauses")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--heartbeat", flags->heartbeat, "heartbeat interval between actors");
  cmd->add_option("--log-level", flags->log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  cmd->add_option("--log-format", flags->log_format,
                  "stderr log format: json or text (default: text on a terminal, else json)")
      ->check(CLI::IsMember({"json", "text"}));
  cmd->callback([flags, exit_code] { *exit_code = Run(*flags); });
}

}  // namespace apollo11::cli
