#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "executor/db_password.h"
#include "executor/db_pool.h"
#include "executor/executor.h"
#include "executor/executor_exec.h"

// The db side of Executor: a db task's statement runs on a DbPool thread;
// timeouts and cancels ask the server to stop it, and the attempt ends when
// the pool reports it, or a kill grace later if the server does not answer.

namespace apollo11::executor {

namespace {

constexpr int kMaxConnectTimeoutS = 10;

}  // namespace

Status Executor::StartDb(Exec* exec) {
  const ExecRequest& r = exec->req;
  Result<DbTarget> target = DbTarget::Parse(r.db_host);
  if (!target.ok()) return target.status();
  Result<std::string> password = ResolveDbPassword(r);
  if (!password.ok()) return password.status();
  if (db_pool_ == nullptr) {
    db_pool_ = std::make_unique<DbPool>(std::max<size_t>(1, options_.db_threads));
    if (!db_pool_->ok()) {
      db_pool_.reset();
      return Status::Internal("could not start: eventfd for the db pool failed");
    }
  }
  auto job = std::make_shared<DbJob>();
  job->exec_id = r.exec_id;
  job->attempt = r.attempt;
  job->target = *target;
  job->password = std::move(*password);
  job->sql = r.sql;
  // Expanded by the coordinator (dsl/templated_fields.h); bound as they are.
  job->params = r.sql_params;
  job->connect_timeout_s = kMaxConnectTimeoutS;
  if (r.timeout.count() > 0) {
    const auto seconds = static_cast<int>((r.timeout.count() + 999) / 1000);
    job->connect_timeout_s = std::clamp(seconds, 1, kMaxConnectTimeoutS);
  }
  exec->db = job;
  db_pool_->Submit(std::move(job));
  return Status::Ok();
}

void Executor::StopDb(Exec* exec, ExecOutcomeKind why, Micros now) {
  if (exec->stop.has_value()) return;
  exec->stop = why;
  const Micros grace = std::max<Micros>(
      static_cast<Micros>(exec->req.kill_grace.count()) * kMicrosPerMilli, 1000 * kMicrosPerMilli);
  exec->kill_at = now + grace;
  db_pool_->Cancel(exec->db);
}

ExecOutcome Executor::DbOutcome(Exec* exec, bool answered) {
  const DbJob& job = *exec->db;
  if (exec->stop.has_value()) {
    const std::string how = answered ? "statement canceled on the server"
                                     : "statement cancel sent; the server has not answered";
    ExecOutcome o = MakeOutcome(exec, *exec->stop);
    o.error = *exec->stop == ExecOutcomeKind::kTimeout
                  ? "timed out after " + FormatDuration(exec->req.timeout) + " (" + how + ")"
                  : "canceled (" + how + ")";
    return o;
  }
  if (job.run.ok) {
    const std::string line = job.run.summary + "\n";
    exec->out.Write(line.data(), line.size());
    ExecOutcome o = MakeOutcome(exec, ExecOutcomeKind::kSuccess);
    if (!job.sql.empty()) o.task_output = job.rows.Dump();
    return o;
  }
  const std::string line = job.run.error + "\n";
  exec->err.Write(line.data(), line.size());
  ExecOutcome o = MakeOutcome(exec, ExecOutcomeKind::kFailed);
  o.error = job.run.error;
  o.retryable = job.run.retryable;
  o.exit_code = job.run.code;
  return o;
}

void Executor::ProcessDb(Micros now, std::vector<ExecOutcome>* finished) {
  if (db_pool_ == nullptr) return;
  for (const std::shared_ptr<DbJob>& job : db_pool_->TakeFinished()) {
    auto it = execs_.find(Key(job->exec_id, job->attempt));
    if (it == execs_.end() || it->second->db != job) continue;  // reported already
    finished->push_back(DbOutcome(it->second.get(), /*answered=*/true));
    execs_.erase(it);
  }
  for (auto it = execs_.begin(); it != execs_.end();) {
    Exec* exec = it->second.get();
    if (exec->db == nullptr) {
      ++it;
      continue;
    }
    if (!exec->stop.has_value() && exec->deadline != 0 && now >= exec->deadline) {
      StopDb(exec, ExecOutcomeKind::kTimeout, now);
    }
    if (exec->stop.has_value() && now >= exec->kill_at) {
      // The server has not answered the cancel: report it, and leave the
      // pool thread to finish (its result is dropped).
      db_pool_->Cancel(exec->db);
      finished->push_back(DbOutcome(exec, /*answered=*/false));
      it = execs_.erase(it);
      continue;
    }
    ++it;
  }
}

}  // namespace apollo11::executor
