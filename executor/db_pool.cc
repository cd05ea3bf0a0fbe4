#include "executor/db_pool.h"

#include <pthread.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

namespace apollo11::executor {

DbPool::DbPool(size_t threads) {
  event_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (event_fd_ < 0) return;
  for (size_t i = 0; i < threads; ++i) {
    runners_.emplace_back([this] {
      pthread_setname_np(pthread_self(), "apollo11-db");
      RunnerLoop();
    });
  }
  canceller_ = std::jthread([this] {
    pthread_setname_np(pthread_self(), "apollo11-dbcancel");
    CancelLoop();
  });
}

DbPool::~DbPool() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    queued_.clear();
    for (const auto& job : running_) cancels_.push_back(job);
  }
  work_cv_.SignalAll();
  cancel_cv_.SignalAll();
  for (std::jthread& t : runners_) {
    if (t.joinable()) t.join();
  }
  {
    MutexLock lock(&mu_);
    runners_done_ = true;
  }
  cancel_cv_.SignalAll();
  if (canceller_.joinable()) canceller_.join();
  if (event_fd_ >= 0) ::close(event_fd_);
}

void DbPool::Submit(std::shared_ptr<DbJob> job) {
  {
    MutexLock lock(&mu_);
    queued_.push_back(std::move(job));
  }
  work_cv_.Signal();
}

void DbPool::Cancel(std::shared_ptr<DbJob> job) {
  {
    MutexLock lock(&mu_);
    cancels_.push_back(std::move(job));
  }
  cancel_cv_.Signal();
}

std::vector<std::shared_ptr<DbJob>> DbPool::TakeFinished() {
  uint64_t count = 0;
  while (::read(event_fd_, &count, sizeof(count)) < 0 && errno == EINTR) {
  }
  MutexLock lock(&mu_);
  std::vector<std::shared_ptr<DbJob>> out;
  out.swap(finished_);
  return out;
}

void DbPool::RunnerLoop() {
  for (;;) {
    std::shared_ptr<DbJob> job;
    {
      MutexLock lock(&mu_);
      while (!stopping_ && queued_.empty()) work_cv_.Wait(mu_);
      if (stopping_) return;
      job = std::move(queued_.front());
      queued_.pop_front();
      running_.push_back(job);
    }
    Execute(job.get());
    {
      MutexLock lock(&mu_);
      running_.erase(std::find(running_.begin(), running_.end(), job));
      finished_.push_back(std::move(job));
    }
    const uint64_t one = 1;
    while (::write(event_fd_, &one, sizeof(one)) < 0 && errno == EINTR) {
    }
  }
}

void DbPool::Execute(DbJob* job) {
  {
    MutexLock lock(&job->mu);
    if (job->cancel_requested) {
      job->run.error = "canceled before it started";
      return;
    }
  }
  std::unique_ptr<DbConnection> conn = NewDbConnection(job->target);
  DbRun run = conn->Connect(job->target, job->password, job->connect_timeout_s);
  if (run.ok) {
    MutexLock lock(&job->mu);
    if (job->cancel_requested) {
      run.ok = false;
      run.error = "canceled before the statement started";
    } else {
      job->conn = conn.get();
    }
  }
  if (run.ok && !job->sql.empty()) {
    run = conn->Run(job->sql, job->params, &job->rows);
  } else if (run.ok) {
    run.summary = "connected (no SQL to run)";
  }
  {
    MutexLock lock(&job->mu);  // a cancel in progress finishes first
    job->conn = nullptr;
  }
  conn.reset();
  job->run = std::move(run);
}

void DbPool::CancelLoop() {
  for (;;) {
    std::shared_ptr<DbJob> job;
    {
      MutexLock lock(&mu_);
      while (cancels_.empty() && !runners_done_) cancel_cv_.Wait(mu_);
      if (cancels_.empty()) return;
      job = std::move(cancels_.front());
      cancels_.pop_front();
    }
    MutexLock lock(&job->mu);
    job->cancel_requested = true;
    if (job->conn != nullptr) job->conn->CancelOnServer();
  }
}

}  // namespace apollo11::executor
