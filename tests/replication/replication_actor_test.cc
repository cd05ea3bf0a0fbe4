// The replication actors over real sockets in one process: a leader journal
// whose commits are observed, a standby journal applied by its actor.

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "common/clock.h"
#include "replication/replication_leader.h"
#include "replication/replication_standby.h"
#include "storage/journal.h"
#include "tests/storage/storage_test_util.h"

namespace apollo11::replication {
namespace {

storage::RunBatch Step(int i) {
  storage::RunBatch b;
  storage::TransitionRecord t;
  t.run_id = "r1";
  t.task_id = "t" + std::to_string(i);
  t.to = TaskState::kReady;
  b.Append(t);
  return b;
}

bool WaitUntil(const std::function<bool()>& done, int ms) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  while (std::chrono::steady_clock::now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return done();
}

struct Pair {
  storage::testing::TempDir dir;
  zmq::context_t ctx;
  SystemClock clock;
  std::unique_ptr<storage::Journal> leader_journal, standby_journal;
  std::unique_ptr<ReplicationLeader> leader;
  std::unique_ptr<ReplicationStandby> standby;

  void StartLeader(bool sync, Millis timeout) {
    auto opened = storage::Journal::Open(dir.path() + "/leader", {});
    REQUIRE(opened.ok());
    leader_journal = std::move(opened).value();
    ReplicationLeaderConfig c;
    c.name = "c1";
    c.standbys = {"s1"};
    c.sync = sync;
    c.timeout = timeout;
    c.epoch = 1;
    auto started = ReplicationLeader::Start(ctx, leader_journal.get(), &clock, c);
    REQUIRE(started.ok());
    leader = std::move(*started);
    leader_journal->SetCommitObserver(leader.get());
  }
  void StartStandby() {
    if (!standby_journal) {
      auto opened = storage::Journal::Open(dir.path() + "/standby", {});
      REQUIRE(opened.ok());
      standby_journal = std::move(opened).value();
    }
    ReplicationStandbyConfig c;
    c.leader_endpoint = leader->endpoint();
    c.leader_name = "c1";
    c.name = "s1";
    c.idle_hello = Millis(100);
    auto started = ReplicationStandby::Start(ctx, standby_journal.get(), &clock, c);
    REQUIRE(started.ok());
    standby = std::move(*started);
  }
  ~Pair() {
    standby.reset();
    if (leader_journal) leader_journal->SetCommitObserver(nullptr);
    leader.reset();
  }
};

TEST_CASE("sync commits wait for the standby's acknowledgement", "[replication]") {
  Pair p;
  p.StartLeader(/*sync=*/true, Millis(5000));
  p.StartStandby();
  // Until the standby has said hello and caught up, nobody is waited for.
  REQUIRE(WaitUntil([&] { return !p.leader->lagging(); }, 5000));
  for (int i = 0; i < 50; ++i) {
    storage::RunBatch b = Step(i);
    REQUIRE(p.leader_journal->Commit(b).ok());
    // Commit returned: the standby has the batch durably already.
    CHECK(p.standby_journal->last_batch() == static_cast<uint64_t>(i + 1));
  }
  CHECK_FALSE(p.leader->lagging());
  CHECK(p.standby_journal->HistoryOfRun("r1")->size() == 50);
  CHECK(p.leader->Snapshot().standbys.size() == 1);
}

// The slowest of `n` commits of steps from `first` on.
std::chrono::steady_clock::duration SlowestCommit(Pair& p, int first, int n) {
  auto slowest = std::chrono::steady_clock::duration::zero();
  for (int i = first; i < first + n; ++i) {
    storage::RunBatch b = Step(i);
    const auto one = std::chrono::steady_clock::now();
    REQUIRE(p.leader_journal->Commit(b).ok());
    slowest = std::max(slowest, std::chrono::steady_clock::now() - one);
  }
  return slowest;
}

TEST_CASE(
    "without a standby a sync commit waits the timeout once, then the leader is lagging until "
    "one catches up",
    "[replication]") {
  Pair p;
  p.StartLeader(/*sync=*/true, Millis(500));
  const auto start = std::chrono::steady_clock::now();
  SlowestCommit(p, 0, 1);
  CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(500));
  CHECK(p.leader->lagging());
  CHECK(p.leader->Snapshot().lagging);
  // Lagging: later commits do not wait for the timeout.
  CHECK(SlowestCommit(p, 1, 19) < std::chrono::milliseconds(500));
  // A standby catches up (from the window) and sync release resumes.
  p.StartStandby();
  REQUIRE(WaitUntil([&] { return !p.leader->lagging(); }, 5000));
  CHECK(p.standby_journal->last_batch() == 20);
  SlowestCommit(p, 20, 1);
  CHECK(p.standby_journal->last_batch() == 21);  // synchronous again
  // The standby goes away: the next commit waits the timeout once more.
  p.standby.reset();
  const auto again = std::chrono::steady_clock::now();
  SlowestCommit(p, 21, 1);
  CHECK(std::chrono::steady_clock::now() - again >= std::chrono::milliseconds(500));
  CHECK(p.leader->lagging());
}

TEST_CASE("async commits do not wait, and the standby follows", "[replication]") {
  Pair p;
  p.StartLeader(/*sync=*/false, Millis(1000));
  for (int i = 0; i < 30; ++i) {
    storage::RunBatch b = Step(i);
    REQUIRE(p.leader_journal->Commit(b).ok());
  }
  p.StartStandby();
  REQUIRE(WaitUntil([&] { return p.standby_journal->last_batch() == 30; }, 5000));
  REQUIRE(WaitUntil([&] { return p.leader->worst_lag_seq() == 0; }, 5000));
}

}  // namespace
}  // namespace apollo11::replication
