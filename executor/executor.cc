#include "executor/executor.h"

#include <curl/curl.h>
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

#include "executor/child_process.h"
#include "executor/curl_multi.h"
#include "executor/log_sink.h"
#include "executor/process_group.h"
#include "executor/task_inputs.h"

namespace apollo11::executor {

namespace {

constexpr size_t kReadChunk = 64 << 10;
// Per fd per Process() call, so one chatty task cannot starve the loop.
constexpr size_t kReadBudget = 1 << 20;
// After the main process has exited: what is left in the pipe (background
// children that keep it open are not waited for).
constexpr size_t kDrainBudget = 4 << 20;

// The error of a process that ended on its own (not stopped by us), worded
// for the on-call engineer: the shell's 126/127 and a signal's name say more
// than the number, and a SIGKILL nobody in Apollo-11 sent is usually the
// kernel's OOM killer.
std::string EndedReason(bool exited, int code) {
  if (exited) {
    std::string reason = "exited with code " + std::to_string(code);
    if (code == 127) reason += " (command not found: check the command and the worker's PATH)";
    if (code == 126) reason += " (command not executable: check its permissions)";
    return reason;
  }
  const int sig = -code;
  std::string reason = "killed by signal " + std::to_string(sig);
  if (const char* name = sigabbrev_np(sig)) reason += std::string(" (SIG") + name + ")";
  if (sig == SIGKILL) {
    reason += "; not sent by Apollo-11: the kernel's OOM killer (see dmesg) or another process";
  }
  return reason;
}

std::string LogBase(const std::string& dir, const std::string& exec_id, uint32_t attempt) {
  std::string name = exec_id;
  std::replace(name.begin(), name.end(), '/', '_');
  return dir + "/" + name + "." + std::to_string(attempt);
}

size_t OnHttpBody(char* data, size_t size, size_t n, void* user) {
  static_cast<LogSink*>(user)->Write(data, size * n);
  return size * n;
}

}  // namespace

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

// One attempt in flight: a process (precheck, then task) or an HTTP transfer.
struct Executor::Exec {
  ExecRequest req;
  Micros started_at = 0;
  Micros deadline = 0;  // 0 = no timeout
  LogSink out;
  LogSink err;
  TaskInputs inputs;  // processes: removed with the Exec, when the attempt has ended

  // process
  bool in_precheck = false;
  ChildProcess child;
  bool reaped = false;
  int wait_status = 0;
  std::optional<ExecOutcomeKind> stop;  // set once a timeout or cancel began
  Micros kill_at = 0;                   // SIGKILL the group at this time
  bool killed = false;                  // SIGKILL sent

  // http
  CURL* easy = nullptr;
  curl_slist* headers = nullptr;
  char curl_error[CURL_ERROR_SIZE] = {0};

  ~Exec() {
    for (int fd : {child.pidfd, child.stdout_fd, child.stderr_fd}) {
      if (fd >= 0) ::close(fd);
    }
    if (easy != nullptr) curl_easy_cleanup(easy);
    if (headers != nullptr) curl_slist_free_all(headers);
  }
};

Executor::Executor(ExecutorOptions options, const Clock& clock, ProcessGroupObserver* observer)
    : options_(std::move(options)), clock_(clock), observer_(observer) {}

Executor::~Executor() {
  for (auto& [key, exec] : execs_) {
    if (exec->easy != nullptr) {
      curl_->Remove(exec->easy);
    } else if (exec->child.pid > 0 && !exec->reaped) {
      ::kill(-exec->child.pid, SIGKILL);
      while (::waitpid(exec->child.pid, nullptr, 0) < 0 && errno == EINTR) {
      }
      if (observer_ != nullptr) observer_->GroupReaped(exec->child.pid);
    }
  }
  execs_.clear();
}

Status Executor::Launch(const ExecRequest& request) {
  Micros now = clock_.Now();
  auto simple = [&](ExecOutcomeKind kind, bool retryable, std::string error) {
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
  };
  Key key(request.exec_id, request.attempt);
  if (execs_.count(key) > 0) {
    return Status::Busy("execution " + request.exec_id + " attempt " +
                        std::to_string(request.attempt) + " is already running");
  }
  switch (request.type) {
    case dsl::TaskType::kNoop:
      return simple(ExecOutcomeKind::kSuccess, true, "");
    case dsl::TaskType::kDb:
      return simple(ExecOutcomeKind::kRejected, false,
                    "db tasks are not supported by this worker yet");
    case dsl::TaskType::kShell:
    case dsl::TaskType::kPython:
    case dsl::TaskType::kHttp:
      break;
  }

  auto exec = std::make_unique<Exec>();
  exec->req = request;
  exec->started_at = now;
  if (request.timeout.count() > 0) {
    exec->deadline = now + static_cast<Micros>(request.timeout.count()) * kMicrosPerMilli;
  }
  const bool http = request.type == dsl::TaskType::kHttp;
  std::string base;
  if (!options_.log_dir.empty()) {
    if (!log_dir_ready_) {
      std::error_code ec;
      std::filesystem::create_directories(options_.log_dir, ec);
      if (ec)
        return Status::Io("could not create log dir " + options_.log_dir + ": " + ec.message());
      log_dir_ready_ = true;
    }
    base = LogBase(options_.log_dir, request.exec_id, request.attempt);
  }
  APOLLO11_RETURN_IF_ERROR(exec->out.Open(base.empty() ? "" : base + ".out", options_.max_log_bytes,
                                          http ? LogSink::Keep::kHead : LogSink::Keep::kTail,
                                          options_.output_tail_bytes));
  if (!http) {
    APOLLO11_RETURN_IF_ERROR(exec->err.Open(base.empty() ? "" : base + ".err",
                                            options_.max_log_bytes, LogSink::Keep::kTail,
                                            options_.stderr_tail_bytes));
  }

  Status started = http ? StartHttp(exec.get())
                        : exec->inputs.Prepare(options_.inputs_dir, request.exec_id,
                                               request.attempt, request.inputs, &exec->req.env);
  exec->req.inputs = {};  // on disk now; up to ~10 MiB not to keep twice
  if (started.ok() && !http) started = StartProcess(exec.get(), request.run_precheck);
  if (!started.ok()) {
    ExecOutcome o = MakeOutcome(exec.get(), ExecOutcomeKind::kFailed, now);
    o.error = started.message();
    ready_.push_back(std::move(o));
    return Status::Ok();
  }
  execs_.emplace(std::move(key), std::move(exec));
  return Status::Ok();
}

Status Executor::StartProcess(Exec* exec, bool precheck) {
  const ExecRequest& r = exec->req;
  std::vector<std::string> argv;
  if (precheck) {
    argv = {"/bin/sh", "-c", r.precheck};
  } else if (r.type == dsl::TaskType::kPython) {
    argv = {"python3", r.script};
    argv.insert(argv.end(), r.args.begin(), r.args.end());
  } else {
    argv = {"/bin/sh", "-c", r.command};
  }
  Status fits = TaskInputs::CheckExecSize(argv, r.env);
  if (!fits.ok()) return Status::InvalidInput("could not start: " + fits.message());
  Result<ChildProcess> child = SpawnChild(argv, r.env, r.workdir);
  if (!child.ok()) return child.status();
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

Status Executor::StartHttp(Exec* exec) {
  if (curl_ == nullptr) {
    curl_ = std::make_unique<CurlMulti>(clock_);
    if (!curl_->ok()) {
      curl_.reset();
      return Status::Internal("could not start: curl_multi_init failed");
    }
  }
  const ExecRequest& r = exec->req;
  exec->easy = curl_easy_init();
  if (exec->easy == nullptr) return Status::Internal("could not start: curl_easy_init failed");
  CURL* e = exec->easy;
  curl_easy_setopt(e, CURLOPT_URL, r.url.c_str());
  curl_easy_setopt(e, CURLOPT_PRIVATE, exec);
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, exec->curl_error);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &OnHttpBody);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, &exec->out);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_USERAGENT, "apollo11");
  curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
  // Redirects are followed (at most 5, http/https only); the final response counts.
  curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 1L);
  curl_easy_setopt(e, CURLOPT_MAXREDIRS, 5L);
  curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  if (r.timeout.count() > 0) {
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(r.timeout.count()));
  }
  for (const auto& [k, v] : r.headers) {
    exec->headers = curl_slist_append(exec->headers, (k + ": " + v).c_str());
  }
  if (exec->headers != nullptr) curl_easy_setopt(e, CURLOPT_HTTPHEADER, exec->headers);
  if (r.method == "HEAD") {
    curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
  } else if (!r.body.empty() || r.method == "POST") {
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(r.body.size()));
    curl_easy_setopt(e, CURLOPT_COPYPOSTFIELDS, r.body.c_str());
    if (r.method != "POST") curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r.method.c_str());
  } else if (r.method != "GET") {
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, r.method.c_str());
  }
  Status added = curl_->Add(e);
  if (!added.ok()) return Status::Internal("could not start: " + added.message());
  return Status::Ok();
}

void Executor::Cancel(const std::string& exec_id, uint32_t attempt) {
  auto it = execs_.find(Key(exec_id, attempt));
  if (it == execs_.end()) return;
  Exec* exec = it->second.get();
  Micros now = clock_.Now();
  if (exec->easy != nullptr) {
    curl_->Remove(exec->easy);
    ExecOutcome o = MakeOutcome(exec, ExecOutcomeKind::kCanceled, now);
    o.error = "canceled (HTTP request aborted)";
    ready_.push_back(std::move(o));
    execs_.erase(it);
    return;
  }
  Stop(exec, ExecOutcomeKind::kCanceled, now);
}

void Executor::Stop(Exec* exec, ExecOutcomeKind why, Micros now) {
  if (exec->stop.has_value()) return;
  exec->stop = why;
  if (exec->reaped) return;  // Advance() kills the stragglers
  if (exec->req.kill_grace.count() <= 0) {
    ::kill(-exec->child.pid, SIGKILL);
    exec->killed = true;
    return;
  }
  ::kill(-exec->child.pid, SIGTERM);
  exec->kill_at = now + static_cast<Micros>(exec->req.kill_grace.count()) * kMicrosPerMilli;
}

void Executor::AppendPollItems(std::vector<zmq_pollitem_t>* items) const {
  for (const auto& [key, exec] : execs_) {
    for (int fd : {exec->child.pidfd, exec->child.stdout_fd, exec->child.stderr_fd}) {
      if (fd >= 0) items->push_back(zmq_pollitem_t{nullptr, fd, ZMQ_POLLIN, 0});
    }
  }
  if (curl_ != nullptr) curl_->AppendPollItems(items);
}

Micros Executor::NextDeadline() const {
  if (!ready_.empty()) return clock_.Now();
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

void Executor::ReadPipes(Exec* exec, bool drain) {
  char buf[kReadChunk];
  int* fds[2] = {&exec->child.stdout_fd, &exec->child.stderr_fd};
  LogSink* sinks[2] = {&exec->out, &exec->err};
  for (int i = 0; i < 2; ++i) {
    int& fd = *fds[i];
    size_t budget = drain ? kDrainBudget : kReadBudget;
    while (fd >= 0 && budget > 0) {
      ssize_t n = ::read(fd, buf, std::min(sizeof(buf), budget));
      if (n > 0) {
        sinks[i]->Write(buf, static_cast<size_t>(n));
        budget -= static_cast<size_t>(n);
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else if (n < 0 && errno == EAGAIN) {
        break;
      } else {  // EOF or a real error
        ::close(fd);
        fd = -1;
      }
    }
    if (drain && fd >= 0) {
      // A background child may hold the pipe open: stop listening.
      ::close(fd);
      fd = -1;
    }
  }
}

void Executor::Reap(Exec* exec) {
  int status = 0;
  pid_t r;
  do {
    r = ::waitpid(exec->child.pid, &status, WNOHANG);
  } while (r < 0 && errno == EINTR);
  if (r == 0) return;  // not exited yet
  // r < 0 (ECHILD: someone else reaped it, e.g. SIGCHLD ignored) ends it too.
  exec->reaped = true;
  exec->wait_status = r > 0 ? status : -1;
  if (observer_ != nullptr) observer_->GroupReaped(exec->child.pid);
  ::close(exec->child.pidfd);
  exec->child.pidfd = -1;
}

void Executor::Process(Micros now, std::vector<ExecOutcome>* finished) {
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
      curl_easy_getinfo(easy, CURLINFO_PRIVATE, reinterpret_cast<char**>(&exec));
      if (exec != nullptr) FinishHttp(exec, code, now, finished);
    }
  }

  for (auto it = execs_.begin(); it != execs_.end();) {
    Exec* exec = it->second.get();
    if (exec->easy == nullptr && Advance(exec, now, finished)) {
      it = execs_.erase(it);
    } else {
      ++it;
    }
  }
}

bool Executor::Advance(Exec* exec, Micros now, std::vector<ExecOutcome>* finished) {
  if (!exec->reaped) {
    if (!exec->stop.has_value() && exec->deadline != 0 && now >= exec->deadline) {
      Stop(exec, ExecOutcomeKind::kTimeout, now);
    }
    if (exec->stop.has_value() && !exec->killed && now >= exec->kill_at) {
      ::kill(-exec->child.pid, SIGKILL);
      exec->killed = true;
    }
    return false;
  }
  ReadPipes(exec, /*drain=*/true);
  const int st = exec->wait_status;
  const bool exited = st >= 0 && WIFEXITED(st);
  const int code = st < 0 ? -1 : exited ? WEXITSTATUS(st) : -WTERMSIG(st);

  if (exec->stop.has_value()) {
    // The main process is gone; whatever it left in its group must not
    // outlive the task.
    if (!exec->killed) ::kill(-exec->child.pid, SIGKILL);
    ExecOutcome o = MakeOutcome(exec, *exec->stop, now);
    o.exit_code = code;
    if (*exec->stop == ExecOutcomeKind::kTimeout) {
      o.error = "timed out after " + FormatDuration(exec->req.timeout) + " (process group killed)";
    } else {
      o.error = "canceled (process group killed)";
    }
    finished->push_back(std::move(o));
    return true;
  }

  if (exec->in_precheck) {
    if (exited && code == 0) {
      Status started = StartProcess(exec, /*precheck=*/false);
      if (started.ok()) return false;
      ExecOutcome o = MakeOutcome(exec, ExecOutcomeKind::kFailed, now);
      o.error = started.message();
      finished->push_back(std::move(o));
      return true;
    }
    if (exited && code == 3) {
      ExecOutcome o = MakeOutcome(exec, ExecOutcomeKind::kAlreadyDone, now);
      o.exit_code = 3;
      o.error = "precheck exited 3: already done, task not rerun";
      finished->push_back(std::move(o));
      return true;
    }
    ExecOutcome o = MakeOutcome(exec, ExecOutcomeKind::kFailed, now);
    o.exit_code = code;
    o.retryable = false;
    o.error = exited ? "precheck exited " + std::to_string(code) + ": refusing to rerun"
                     : "precheck killed by signal " + std::to_string(-code) + ": refusing to rerun";
    finished->push_back(std::move(o));
    return true;
  }

  ExecOutcome o = MakeOutcome(
      exec, exited && code == 0 ? ExecOutcomeKind::kSuccess : ExecOutcomeKind::kFailed, now);
  o.exit_code = code;
  if (st < 0) {
    o.error = "exit status lost (reaped by someone else)";
  } else if (!exited || code != 0) {
    o.error = EndedReason(exited, code);
  }
  finished->push_back(std::move(o));
  return true;
}

void Executor::FinishHttp(Exec* exec, int curl_code, Micros now,
                          std::vector<ExecOutcome>* finished) {
  const ExecRequest& r = exec->req;
  long status = 0;
  curl_easy_getinfo(exec->easy, CURLINFO_RESPONSE_CODE, &status);
  ExecOutcome o = MakeOutcome(exec, ExecOutcomeKind::kFailed, now);
  o.exit_code = static_cast<int>(status);
  if (curl_code == CURLE_OK) {
    const bool ok = r.expect_status.empty()
                        ? (status >= 200 && status < 300)
                        : std::find(r.expect_status.begin(), r.expect_status.end(),
                                    static_cast<int>(status)) != r.expect_status.end();
    if (ok) {
      o.kind = ExecOutcomeKind::kSuccess;
    } else {
      o.retryable = status >= 500;
      o.error = "HTTP " + std::to_string(status) + " from " + r.url;
    }
  } else if (curl_code == CURLE_OPERATION_TIMEDOUT) {
    o.kind = ExecOutcomeKind::kTimeout;
    o.error = "timed out after " + FormatDuration(r.timeout) + " (HTTP request aborted)";
  } else {
    const CURLcode c = static_cast<CURLcode>(curl_code);
    o.retryable = c != CURLE_URL_MALFORMAT && c != CURLE_UNSUPPORTED_PROTOCOL &&
                  c != CURLE_TOO_MANY_REDIRECTS;
    std::string why = exec->curl_error[0] != '\0' ? exec->curl_error : curl_easy_strerror(c);
    o.error = "could not reach " + r.url + ": " + why;
  }
  finished->push_back(std::move(o));
  execs_.erase(Key(r.exec_id, r.attempt));  // `exec` and `r` are gone after this
}

ExecOutcome Executor::MakeOutcome(Exec* exec, ExecOutcomeKind kind, Micros now) {
  ExecOutcome o;
  o.exec_id = exec->req.exec_id;
  o.attempt = exec->req.attempt;
  o.kind = kind;
  o.started_at = exec->started_at;
  o.finished_at = now;
  // Only files that exist: a task that printed nothing has none.
  o.stdout_path = exec->out.created() ? exec->out.path() : "";
  o.stderr_path = exec->err.created() ? exec->err.path() : "";
  o.output = exec->out.Finish();
  o.stderr_tail = exec->err.Finish();
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
