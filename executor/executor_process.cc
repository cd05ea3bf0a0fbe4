#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <optional>
#include <string>

#include "executor/containment.h"
#include "executor/executor.h"
#include "executor/executor_exec.h"
#include "executor/task_output_file.h"

// The process side of Executor: stopping a task, reading its pipes, reaping
// it and turning its end into an outcome.

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

}  // namespace

void Executor::Stop(Exec* exec, ExecOutcomeKind why, Micros now) {
  if (exec->stop.has_value()) return;
  exec->stop = why;
  if (exec->reaped) return;  // Advance() kills the stragglers
  if (exec->req.kill_grace.count() <= 0) {
    containment_->Signal(&exec->contained, SIGKILL);
    exec->killed = true;
    return;
  }
  containment_->Signal(&exec->contained, SIGTERM);
  exec->kill_at = now + static_cast<Micros>(exec->req.kill_grace.count()) * kMicrosPerMilli;
}

void Executor::ReadPipes(Exec* exec, bool drain) {
  char buf[kReadChunk];
  int* fds[2] = {&exec->child.stdout_fd, &exec->child.stderr_fd};
  // An http or db task's stdout log is its answer (a body, rows): what its
  // precheck prints goes to its stderr log.
  const bool aside = exec->in_precheck && exec->runner->argv == nullptr;
  LogSink* sinks[2] = {aside ? &exec->err : &exec->out, &exec->err};
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
  containment_->LeaderReaped(&exec->contained);
  if (observer_ != nullptr) observer_->GroupReaped(exec->child.pid);
  ::close(exec->child.pidfd);
  exec->child.pidfd = -1;
}

bool Executor::Advance(Exec* exec, Micros now, std::vector<ExecOutcome>* finished) {
  if (!exec->reaped) {
    if (!exec->stop.has_value() && exec->deadline != 0 && now >= exec->deadline) {
      Stop(exec, ExecOutcomeKind::kTimeout, now);
    }
    if (exec->stop.has_value() && !exec->killed && now >= exec->kill_at) {
      containment_->Signal(&exec->contained, SIGKILL);
      exec->killed = true;
    }
    return false;
  }
  ReadPipes(exec, /*drain=*/true);
  // The main process is gone: whatever it left must not outlive it, whether
  // the attempt succeeded, failed or was stopped (a stop signalled them all
  // already: they are not counted as left over).
  const size_t left = containment_->KillRest(&exec->contained);
  if (!exec->stop.has_value()) exec->leftovers += left;
  std::optional<ExecOutcome> o = EndOf(exec);
  if (!o.has_value()) return false;  // the task started after its precheck
  if (exec->leftovers > 0) {
    const std::string note = LeftoverNote(exec->leftovers);
    o->error = o->error.empty() ? note : o->error + "; " + note;
  }
  finished->push_back(std::move(*o));
  return true;
}

std::optional<ExecOutcome> Executor::EndOf(Exec* exec) {
  const int st = exec->wait_status;
  const bool exited = st >= 0 && WIFEXITED(st);
  const int code = st < 0 ? -1 : exited ? WEXITSTATUS(st) : -WTERMSIG(st);
  if (exec->stop.has_value()) {
    ExecOutcome o = MakeOutcome(exec, *exec->stop);
    o.exit_code = code;
    if (*exec->stop == ExecOutcomeKind::kTimeout) {
      o.error = "timed out after " + FormatDuration(exec->req.timeout) + " (process group killed)";
    } else {
      o.error = "canceled (process group killed)";
    }
    return o;
  }
  if (exec->in_precheck) {
    if (exited && code == 0) {
      Status started = StartAfterPrecheck(exec);
      if (started.ok()) return std::nullopt;
      ExecOutcome o = MakeOutcome(exec, ExecOutcomeKind::kFailed);
      o.error = started.message();
      if (exec->runner->invalid_input_final) {
        o.retryable = started.code() != StatusCode::kInvalidInput;
      }
      return o;
    }
    if (exited && code == 3) {
      ExecOutcome o = MakeOutcome(exec, ExecOutcomeKind::kAlreadyDone);
      o.exit_code = 3;
      o.error = "precheck exited 3: already done, task not rerun";
      return o;
    }
    ExecOutcome o = MakeOutcome(exec, ExecOutcomeKind::kFailed);
    o.exit_code = code;
    o.retryable = false;
    o.error = exited ? "precheck exited " + std::to_string(code) + ": refusing to rerun"
                     : "precheck killed by signal " + std::to_string(-code) + ": refusing to rerun";
    return o;
  }
  ExecOutcome o =
      MakeOutcome(exec, exited && code == 0 ? ExecOutcomeKind::kSuccess : ExecOutcomeKind::kFailed);
  o.exit_code = code;
  if (st < 0) {
    o.error = "exit status lost (reaped by someone else)";
  } else if (!exited || code != 0) {
    o.error = EndedReason(exited, code);
  } else {
    ReadTaskOutput(exec, &o);
  }
  return o;
}

void Executor::ReadTaskOutput(Exec* exec, ExecOutcome* o) const {
  Result<std::string> out = TaskOutputFile::Read(TaskOutputFile::PathIn(exec->inputs.dir()),
                                                 options_.max_task_output_bytes);
  if (out.ok()) {
    o->task_output = std::move(*out);
    return;
  }
  o->kind = ExecOutcomeKind::kFailed;
  o->retryable = out.status().code() != StatusCode::kInvalidInput;
  o->error = out.status().message();
}

}  // namespace apollo11::executor
