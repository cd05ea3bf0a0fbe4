#include "executor/executor.h"

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <system_error>

#include "dsl/task_types.h"
#include "executor/child_process.h"
#include "executor/containment.h"
#include "executor/curl_multi.h"
#include "executor/db_pool.h"
#include "executor/executor_exec.h"
#include "executor/log_sink.h"
#include "executor/process_group.h"
#include "executor/secret_resolver.h"
#include "executor/task_inputs.h"
#include "executor/task_output_file.h"

namespace apollo11::executor {

namespace {

// An execution's cgroup leaf: its exec id (no '/', at most 200 bytes of it)
// and attempt.
std::string ContainmentLeaf(const ExecRequest& r) {
  std::string name = r.exec_id.substr(0, 200);
  std::replace(name.begin(), name.end(), '/', '_');
  return name + "." + std::to_string(r.attempt);
}

std::string LogBase(const std::string& dir, const std::string& exec_id, uint32_t attempt) {
  std::string name = exec_id;
  std::replace(name.begin(), name.end(), '/', '_');
  return dir + "/" + name + "." + std::to_string(attempt);
}

// What a shell task and a python task execute.
std::vector<std::string> ShellArgv(const ExecRequest& r) { return {"/bin/sh", "-c", r.command}; }
std::vector<std::string> PythonArgv(const ExecRequest& r) {
  std::vector<std::string> argv = {"python3", r.script};
  argv.insert(argv.end(), r.args.begin(), r.args.end());
  return argv;
}

}  // namespace

std::string UnknownTaskTypeError(int type) {
  return "unknown task type " + std::to_string(type) + " (this worker knows " +
         dsl::TaskTypeNameList() + "): upgrade the worker";
}

const char* ToString(ExecOutcomeKind kind) {
  switch (kind) {
    case ExecOutcomeKind::kSuccess:
      return "SUCCESS";
    case ExecOutcomeKind::kFailed:
      return "FAILED";
    case ExecOutcomeKind::kTimeout:
      return "TIMEOUT";
    case ExecOutcomeKind::kCanceled:
      return "CANCELED";
    case ExecOutcomeKind::kAlreadyDone:
      return "ALREADY_DONE";
    case ExecOutcomeKind::kRejected:
      return "REJECTED";
  }
  return "?";
}

Executor::Executor(ExecutorOptions options, const Clock& clock, ProcessGroupObserver* observer)
    : options_(std::move(options)),
      clock_(clock),
      observer_(observer),
      ignored_signals_(IgnoredSignals()) {
  containment_ = std::make_unique<Containment>(options_.containment, options_.containment_name);
}

Executor::~Executor() {
  for (auto& [key, exec] : execs_) {
    if (exec->easy != nullptr) {
      curl_->Remove(exec->easy);
    } else if (exec->child.pid > 0 && !exec->reaped) {
      containment_->Signal(&exec->contained, SIGKILL);
      while (::waitpid(exec->child.pid, nullptr, 0) < 0 && errno == EINTR) {
      }
      containment_->LeaderReaped(&exec->contained);
      containment_->KillRest(&exec->contained);
      if (observer_ != nullptr) observer_->GroupReaped(exec->child.pid);
    }
  }
  execs_.clear();
}

const std::string& Executor::containment() const { return containment_->description(); }

std::vector<std::pair<std::string, size_t>> Executor::KillLeftovers() {
  return containment_->KillLeftovers();
}

// Each task type's runner, found by the type's enumerator (kShell ->
// kShellRunner): a type added to APOLLO11_TASK_TYPES without its runner here
// does not compile, and a value outside the list has none.
const Executor::Runner* Executor::RunnerOf(dsl::TaskType type) {
  static constexpr Runner kShellRunner{.start = &Executor::StartProcessTask,
                                       .argv = &ShellArgv,
                                       .out = LogSink::Keep::kTail,
                                       .err_log = true,
                                       .invalid_input_final = false};
  static constexpr Runner kPythonRunner{.start = &Executor::StartProcessTask,
                                        .argv = &PythonArgv,
                                        .out = LogSink::Keep::kTail,
                                        .err_log = true,
                                        .invalid_input_final = false};
  static constexpr Runner kHttpRunner{.start = &Executor::StartHttp,
                                      .argv = nullptr,
                                      .out = LogSink::Keep::kHead,  // the body's first bytes
                                      .err_log = true,              // its precheck's output, if any
                                      .invalid_input_final = false};
  static constexpr Runner kDbRunner{.start = &Executor::StartDb,
                                    .argv = nullptr,
                                    .out = LogSink::Keep::kTail,
                                    .err_log = true,
                                    // A wrong URL or password variable stays wrong.
                                    .invalid_input_final = true};
  static constexpr Runner kNoopRunner{.start = nullptr,
                                      .argv = nullptr,
                                      .out = LogSink::Keep::kTail,
                                      .err_log = false,
                                      .invalid_input_final = false};
  switch (type) {
#define APOLLO11_TASK_TYPE_RUNNER(enumerator, name, required) \
  case dsl::TaskType::enumerator:                             \
    return &enumerator##Runner;
    APOLLO11_TASK_TYPES(APOLLO11_TASK_TYPE_RUNNER)
#undef APOLLO11_TASK_TYPE_RUNNER
    default:  // a value outside the list: a newer coordinator's type
      return nullptr;
  }
}

Status Executor::Launch(const ExecRequest& request) {
  const Micros now = clock_.Now();
  Key key(request.exec_id, request.attempt);
  if (execs_.count(key) > 0) {
    return Status::Busy("execution " + request.exec_id + " attempt " +
                        std::to_string(request.attempt) + " is already running");
  }
  const Runner* runner = RunnerOf(request.type);
  if (runner == nullptr) {
    return FinishAtOnce(request, now, ExecOutcomeKind::kFailed, /*retryable=*/false,
                        UnknownTaskTypeError(static_cast<int>(request.type)));
  }
  if (runner->start == nullptr)
    return FinishAtOnce(request, now, ExecOutcomeKind::kSuccess, true, "");

  auto exec = std::make_unique<Exec>();
  exec->req = request;
  exec->runner = runner;
  const auto pipeline = request.env.find("APOLLO11_PIPELINE");
  const SecretScope scope{options_.secrets_dir,
                          pipeline == request.env.end() ? std::string() : pipeline->second};
  if (auto failed = ResolveSecrets(request.secrets, scope, ProcessEnv(), &exec->req.env)) {
    return FinishAtOnce(request, now, ExecOutcomeKind::kFailed, failed->retryable,
                        std::move(failed->error));
  }
  if (!request.secrets.empty()) {
    auto mask = std::make_shared<SecretMask>();
    for (const auto& [name, ref] : request.secrets) mask->Add(exec->req.env[name]);
    if (!mask->empty()) {
      exec->mask = mask;
      masks_[key] = std::move(mask);
    }
  }
  exec->started_at = now;
  if (request.timeout.count() > 0) {
    exec->deadline =
        clock_.Steady() + static_cast<Micros>(request.timeout.count()) * kMicrosPerMilli;
  }
  if (Status logs = OpenLogs(exec.get()); !logs.ok()) {
    masks_.erase(key);
    return logs;
  }
  // A process task runs its own precheck (StartProcessTask); an http or db
  // task's is a process of its own before the transfer or statement.
  const bool precheck_first =
      request.run_precheck && !request.precheck.empty() && runner->argv == nullptr;
  Status started =
      precheck_first ? StartPrecheckFirst(exec.get()) : (this->*runner->start)(exec.get());
  exec->req.inputs = {};  // a process's are on disk now; up to ~10 MiB not to keep twice
  if (!started.ok()) {
    ExecOutcome o = MakeOutcome(exec.get(), ExecOutcomeKind::kFailed);
    o.error = started.message();
    if (runner->invalid_input_final) o.retryable = started.code() != StatusCode::kInvalidInput;
    ready_.push_back(std::move(o));
    return Status::Ok();
  }
  execs_.emplace(std::move(key), std::move(exec));
  return Status::Ok();
}

Status Executor::FinishAtOnce(const ExecRequest& request, Micros now, ExecOutcomeKind kind,
                              bool retryable, std::string error) {
  ExecOutcome o;
  o.exec_id = request.exec_id;
  o.attempt = request.attempt;
  o.kind = kind;
  o.retryable = retryable;
  o.error = std::move(error);
  o.started_at = now;
  o.finished_at = now;
  ready_.push_back(std::move(o));
  return Status::Ok();
}

Status Executor::OpenLogs(Exec* exec) {
  const ExecRequest& r = exec->req;
  std::string base;
  if (!options_.log_dir.empty()) {
    if (!log_dir_ready_) {
      std::error_code ec;
      std::filesystem::create_directories(options_.log_dir, ec);
      if (ec)
        return Status::Io("could not create log dir " + options_.log_dir + ": " + ec.message());
      log_dir_ready_ = true;
    }
    base = LogBase(options_.log_dir, r.exec_id, r.attempt);
  }
  exec->out.SetMask(exec->mask.get());
  exec->err.SetMask(exec->mask.get());
  APOLLO11_RETURN_IF_ERROR(exec->out.Open(base.empty() ? "" : base + ".out", options_.max_log_bytes,
                                          exec->runner->out, options_.output_tail_bytes));
  if (!exec->runner->err_log) return Status::Ok();
  return exec->err.Open(base.empty() ? "" : base + ".err", options_.max_log_bytes,
                        LogSink::Keep::kTail, options_.stderr_tail_bytes);
}

Status Executor::PrepareInputs(Exec* exec) {
  ExecRequest& r = exec->req;
  Status prepared =
      exec->inputs.Prepare(options_.inputs_dir, r.exec_id, r.attempt, r.inputs, &r.env);
  r.inputs = {};  // on disk now
  return prepared;
}

Status Executor::StartProcessTask(Exec* exec) {
  APOLLO11_RETURN_IF_ERROR(PrepareInputs(exec));
  APOLLO11_RETURN_IF_ERROR(WriteTaskCode(exec));
  exec->req.env["APOLLO11_OUTPUT"] = TaskOutputFile::PathIn(exec->inputs.dir());
  return StartProcess(exec, exec->req.run_precheck);
}

Status Executor::WriteTaskCode(Exec* exec) {
  ExecRequest& r = exec->req;
  if (r.type != dsl::TaskType::kPython || (!r.script.empty() && r.script.front() == '/')) {
    return Status::Ok();  // not python, or a path on this worker (no captured code)
  }
  auto path = exec->inputs.WriteCode(r.script.empty() ? "task.py" : r.script, r.code);
  if (!path.ok()) return path.status();
  r.script = std::move(*path);
  std::string().swap(r.code);  // on disk now
  return Status::Ok();
}

Status Executor::StartPrecheckFirst(Exec* exec) {
  APOLLO11_RETURN_IF_ERROR(PrepareInputs(exec));
  return StartProcess(exec, /*precheck=*/true);
}

Status Executor::StartAfterPrecheck(Exec* exec) {
  if (exec->runner->argv != nullptr) return StartProcess(exec, /*precheck=*/false);
  exec->in_precheck = false;
  return (this->*exec->runner->start)(exec);
}

Status Executor::StartProcess(Exec* exec, bool precheck) {
  const ExecRequest& r = exec->req;
  const std::vector<std::string> argv =
      precheck ? std::vector<std::string>{"/bin/sh", "-c", r.precheck} : exec->runner->argv(r);
  Status fits = TaskInputs::CheckExecSize(argv, r.env);
  if (!fits.ok()) return Status::InvalidInput("could not start: " + fits.message());
  SpawnOptions spawn;
  spawn.ignored_signals = &ignored_signals_;
  APOLLO11_RETURN_IF_ERROR(containment_->Prepare(ContainmentLeaf(r), &exec->contained, &spawn));
  Result<ChildProcess> child = SpawnChild(argv, r.env, r.workdir, spawn);
  if (!child.ok()) {
    containment_->Abandon(&exec->contained, &spawn);
    return child.status();
  }
  containment_->Started(&exec->contained, &spawn, child->pid);
  if (observer_ != nullptr) {
    // Not reaped yet, so /proc still has it even if it has already exited.
    std::optional<ProcStat> st = ReadProcStat(child->pid);
    if (st.has_value()) observer_->GroupStarted(child->pid, st->start_time, r);
  }
  exec->child = *child;
  exec->in_precheck = precheck;
  exec->reaped = false;
  exec->wait_status = 0;
  return Status::Ok();
}

void Executor::Cancel(const std::string& exec_id, uint32_t attempt) {
  auto it = execs_.find(Key(exec_id, attempt));
  if (it == execs_.end()) return;
  Exec* exec = it->second.get();
  Micros now = clock_.Steady();
  if (exec->easy != nullptr) {
    curl_->Remove(exec->easy);
    ExecOutcome o = MakeOutcome(exec, ExecOutcomeKind::kCanceled);
    o.error = "canceled (HTTP request aborted)";
    ready_.push_back(std::move(o));
    execs_.erase(it);
    return;
  }
  if (exec->db != nullptr) {
    StopDb(exec, ExecOutcomeKind::kCanceled, now);
    return;
  }
  Stop(exec, ExecOutcomeKind::kCanceled, now);
}

void Executor::AppendPollItems(std::vector<zmq_pollitem_t>* items) const {
  for (const auto& [key, exec] : execs_) {
    for (int fd : {exec->child.pidfd, exec->child.stdout_fd, exec->child.stderr_fd}) {
      if (fd >= 0) items->push_back(zmq_pollitem_t{nullptr, fd, ZMQ_POLLIN, 0});
    }
  }
  if (curl_ != nullptr) curl_->AppendPollItems(items);
  if (db_pool_ != nullptr)
    items->push_back(zmq_pollitem_t{nullptr, db_pool_->event_fd(), ZMQ_POLLIN, 0});
}

Micros Executor::NextDeadline() const {
  if (!ready_.empty()) return clock_.Steady();
  Micros next = 0;
  auto consider = [&next](Micros t) {
    if (t != 0 && (next == 0 || t < next)) next = t;
  };
  for (const auto& [key, exec] : execs_) {
    if (exec->easy != nullptr) continue;
    if (!exec->stop.has_value()) {
      consider(exec->deadline);
    } else if (!exec->killed) {
      consider(exec->kill_at);
    }
  }
  if (curl_ != nullptr) consider(curl_->NextDeadline());
  return next;
}

void Executor::Process(Micros now, std::vector<ExecOutcome>* finished) {
  const size_t first = finished->size();
  ProcessExecs(now, finished);
  MaskOutcomes(finished, first);
}

void Executor::MaskOutcomes(std::vector<ExecOutcome>* finished, size_t first) {
  if (masks_.empty()) return;
  for (size_t i = first; i < finished->size(); ++i) {
    ExecOutcome& o = (*finished)[i];
    auto it = masks_.find(Key(o.exec_id, o.attempt));
    if (it == masks_.end()) continue;
    const SecretMask& mask = *it->second;
    o.error = mask.Mask(o.error);
    if (!o.task_output.empty()) o.task_output = mask.MaskJson(o.task_output);
    // The output and stderr tails were masked as they were written (LogSink).
    masks_.erase(it);
  }
}

void Executor::ProcessExecs(Micros now, std::vector<ExecOutcome>* finished) {
  for (auto& o : ready_) finished->push_back(std::move(o));
  ready_.clear();

  // One poll(2) over every process fd tells which need attention.
  std::vector<pollfd> fds;
  std::vector<Exec*> owners;
  for (auto& [key, exec] : execs_) {
    for (int fd : {exec->child.pidfd, exec->child.stdout_fd, exec->child.stderr_fd}) {
      if (fd < 0) continue;
      fds.push_back(pollfd{fd, POLLIN, 0});
      owners.push_back(exec.get());
    }
  }
  if (!fds.empty() && ::poll(fds.data(), fds.size(), 0) > 0) {
    for (size_t i = 0; i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      Exec* exec = owners[i];
      if (fds[i].fd == exec->child.pidfd) {
        Reap(exec);
      } else {
        ReadPipes(exec, /*drain=*/false);
      }
    }
  }

  if (curl_ != nullptr) {
    std::vector<std::pair<CURL*, CURLcode>> done;
    curl_->Process(now, &done);
    for (auto& [easy, code] : done) {
      Exec* exec = nullptr;
      curl_->curl().curl_easy_getinfo(easy, CURLINFO_PRIVATE, reinterpret_cast<char**>(&exec));
      if (exec != nullptr) FinishHttp(exec, code, finished);
    }
  }

  ProcessDb(now, finished);

  std::vector<ContainedExec*> contained;
  for (auto& [key, exec] : execs_) {
    if (exec->easy == nullptr && exec->db == nullptr) contained.push_back(&exec->contained);
  }
  containment_->Tick(now, contained);

  for (auto it = execs_.begin(); it != execs_.end();) {
    Exec* exec = it->second.get();
    if (exec->easy == nullptr && exec->db == nullptr && Advance(exec, now, finished)) {
      it = execs_.erase(it);
    } else {
      ++it;
    }
  }
  if (execs_.empty() && !contained.empty()) containment_->Tick(now, {});
}

ExecOutcome Executor::MakeOutcome(Exec* exec, ExecOutcomeKind kind) {
  ExecOutcome o;
  o.exec_id = exec->req.exec_id;
  o.attempt = exec->req.attempt;
  o.kind = kind;
  o.started_at = exec->started_at;
  o.finished_at = clock_.Now();
  // Only files that exist: a task that printed nothing has none.
  o.stdout_path = exec->out.created() ? exec->out.path() : "";
  o.stderr_path = exec->err.created() ? exec->err.path() : "";
  o.output = exec->out.Finish();
  o.output_bytes = exec->out.bytes_seen();  // after Finish: the bytes a mask held back
  o.stderr_tail = exec->err.Finish();
  for (const auto& [name, sink] :
       {std::pair{"stdout", &exec->out}, std::pair{"stderr", &exec->err}}) {
    if (sink->write_error().empty()) continue;
    if (!o.logs_truncated.empty()) o.logs_truncated += "; ";
    o.logs_truncated += std::string(name) + ": " + sink->write_error();
  }
  return o;
}

std::vector<std::pair<std::string, uint32_t>> Executor::RunningExecs() const {
  std::vector<Key> out;
  out.reserve(execs_.size());
  for (const auto& [key, exec] : execs_) out.push_back(key);
  return out;
}

Result<OutputSlice> Executor::ReadOutput(const std::string& exec_id, uint32_t attempt,
                                         bool stderr_stream, uint64_t offset,
                                         uint64_t max_bytes) const {
  const std::string name =
      exec_id + "." + std::to_string(attempt) + (stderr_stream ? ".err" : ".out");
  if (options_.log_dir.empty() || name.find('/') != std::string::npos) {
    return Status::Unsupported("no output files are kept");
  }
  FILE* f = std::fopen((options_.log_dir + "/" + name).c_str(), "rb");
  if (f == nullptr) return Status::NotFound("no output file " + name);
  OutputSlice slice;
  std::fseek(f, 0, SEEK_END);
  const long size = std::ftell(f);
  slice.size = size > 0 ? static_cast<uint64_t>(size) : 0;
  if (offset < slice.size) {
    const uint64_t want = std::min<uint64_t>(slice.size - offset, max_bytes);
    slice.data.resize(want);
    std::fseek(f, static_cast<long>(offset), SEEK_SET);
    slice.data.resize(std::fread(slice.data.data(), 1, want, f));
  }
  std::fclose(f);
  return slice;
}

}  // namespace apollo11::executor
