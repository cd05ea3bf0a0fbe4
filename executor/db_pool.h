#pragma once
// DbPool: the threads that run db tasks' SQL for the Executor, so that the
// worker's actor loop never blocks on a database. `threads` runner threads
// take jobs in submission order (a job waits while all are busy); one more
// thread carries cancels to the servers (PQcancel and KILL QUERY open
// connections of their own, so they block too). A finished job is announced
// on event_fd(), which the executor polls.
//
// Thread safety: Submit, Cancel, TakeFinished and event_fd are called by the
// executor's thread; the pool's threads only touch jobs under their locks.

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "executor/db_connection.h"

namespace apollo11::executor {

// One db task attempt handed to the pool. The executor fills the inputs
// before Submit and reads the results only once TakeFinished returned it.
struct DbJob {
  std::string exec_id;
  uint32_t attempt = 0;
  DbTarget target;
  std::string password;
  std::string sql;
  std::vector<std::string> params;
  int connect_timeout_s = 10;

  DbRun run;  // set by the pool before the job is finished
  DbResultJson rows;

  Mutex mu;
  DbConnection* conn GUARDED_BY(mu) = nullptr;   // while Run may be executing
  bool cancel_requested GUARDED_BY(mu) = false;  // no statement starts once set
};

class DbPool {
 public:
  // Starts `threads` runner threads and the cancel thread; ok() says whether
  // the eventfd could be created (else nothing was started).
  explicit DbPool(size_t threads);
  // Cancels running jobs on their servers, drops queued ones and joins every
  // thread (a job whose server does not answer the cancel is waited for).
  ~DbPool();
  DbPool(const DbPool&) = delete;
  DbPool& operator=(const DbPool&) = delete;

  bool ok() const { return event_fd_ >= 0; }
  // Readable when a job has finished.
  int event_fd() const { return event_fd_; }

  void Submit(std::shared_ptr<DbJob> job);
  // Asks for `job`'s statement to be stopped on the server, without blocking.
  void Cancel(std::shared_ptr<DbJob> job);
  // The jobs finished since the last call; clears the eventfd.
  std::vector<std::shared_ptr<DbJob>> TakeFinished();

 private:
  void RunnerLoop();
  void CancelLoop();
  void Execute(DbJob* job);

  int event_fd_ = -1;
  Mutex mu_;
  CondVar work_cv_;
  CondVar cancel_cv_;
  std::deque<std::shared_ptr<DbJob>> queued_ GUARDED_BY(mu_);
  std::vector<std::shared_ptr<DbJob>> running_ GUARDED_BY(mu_);
  std::deque<std::shared_ptr<DbJob>> cancels_ GUARDED_BY(mu_);
  std::vector<std::shared_ptr<DbJob>> finished_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  bool runners_done_ GUARDED_BY(mu_) = false;
  std::vector<std::jthread> runners_;
  std::jthread canceller_;
};

}  // namespace apollo11::executor
