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

// A db task's param with its placeholders replaced, each by a value the
// DISPATCH carried (never pasted into the SQL: the result is bound):
// ${task.idempotency_key}, ${run_id}, ${task_id} from the task's APOLLO11_*
// environment, ${params.NAME} and ${tasks.ID.output} (the upstream's whole
// output) from its inputs. An unknown placeholder stays as written.
std::string ExpandParam(const std::string& value, const ExecRequest& r) {
  auto lookup = [&r](const std::string& name) -> std::optional<std::string> {
    static const std::pair<const char*, const char*> kEnv[] = {
        {"task.idempotency_key", "APOLLO11_IDEMPOTENCY_KEY"},
        {"run_id", "APOLLO11_RUN_ID"},
        {"task_id", "APOLLO11_TASK_ID"},
    };
    for (const auto& [placeholder, var] : kEnv) {
      if (name != placeholder) continue;
      auto it = r.env.find(var);
      if (it != r.env.end()) return it->second;
    }
    for (const TaskInput& in : r.inputs) {
      const bool output = in.kind == TaskInput::Kind::kOutput;
      if ((!output && name == "params." + in.name) ||
          (output && name == "tasks." + in.name + ".output")) {
        return in.value;
      }
    }
    return std::nullopt;
  };
  std::string out;
  size_t at = 0;
  for (size_t open = value.find("${"); open != std::string::npos; open = value.find("${", at)) {
    const size_t close = value.find('}', open + 2);
    if (close == std::string::npos) break;
    std::optional<std::string> v = lookup(value.substr(open + 2, close - open - 2));
    out += value.substr(at, open - at);
    out += v.has_value() ? *v : value.substr(open, close + 1 - open);
    at = close + 1;
  }
  return out + value.substr(at);
}

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
  for (const std::string& p : r.sql_params) job->params.push_back(ExpandParam(p, r));
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
