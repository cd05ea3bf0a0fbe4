// The replication actors over real sockets in one process: a leader journal
// whose commits are observed, a standby journal applied by its actor.

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "replication/copy_sender.h"
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

  // The in-sync sets recorded (ReplicationLeaderConfig::record_in_sync),
  // and how many more calls fail.
  std::mutex record_mu;
  std::vector<std::set<std::string>> recorded;
  int record_failures = 0;
  // The leader's settings a test may change before StartLeader.
  std::set<std::string> standbys = {"s1"};
  size_t copy_chunk = 1 << 20;
  Millis copy_stall{30000};

  std::set<std::string> LastRecorded() {
    std::lock_guard lock(record_mu);
    return recorded.empty() ? std::set<std::string>{} : recorded.back();
  }

  void OpenLeaderJournal() {
    if (leader_journal) return;
    auto opened = storage::Journal::Open(dir.path() + "/leader", {});
    REQUIRE(opened.ok());
    leader_journal = std::move(opened).value();
  }
  void StartLeader(bool sync, Millis timeout) {
    OpenLeaderJournal();
    ReplicationLeaderConfig c;
    c.name = "c1";
    c.standbys = standbys;
    c.copy_chunk = copy_chunk;
    c.copy_stall = copy_stall;
    c.sync = sync;
    c.timeout = timeout;
    c.epoch = 1;
    c.record_in_sync = [this](const std::set<std::string>& in_sync) {
      std::lock_guard lock(record_mu);
      if (record_failures > 0) {
        --record_failures;
        return Status::Io("etcd unreachable (test)");
      }
      recorded.push_back(in_sync);
      return Status::Ok();
    };
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
    "a sync leader with no standby in sync releases at once, a standby that catches up is waited "
    "for, and one that stops answering leaves the in-sync set, recorded before the release",
    "[replication]") {
  Pair p;
  p.StartLeader(/*sync=*/true, Millis(500));
  // A term starts with nobody in sync: lagging, and nothing waits.
  CHECK(p.leader->lagging());
  CHECK(p.leader->Snapshot().lagging);
  CHECK(SlowestCommit(p, 0, 20) < std::chrono::milliseconds(500));
  CHECK(p.LastRecorded().empty());  // the term's record (the leader alone) is the elector's
  // A standby catches up (from the window), joins the set, and sync
  // release resumes.
  p.StartStandby();
  REQUIRE(WaitUntil([&] { return !p.leader->lagging(); }, 5000));
  CHECK(p.standby_journal->last_batch() == 20);
  CHECK(p.leader->Snapshot().in_sync == std::vector<std::string>{"s1"});
  REQUIRE(WaitUntil([&] { return p.LastRecorded() == std::set<std::string>{"c1", "s1"}; }, 5000));
  SlowestCommit(p, 20, 1);
  CHECK(p.standby_journal->last_batch() == 21);  // synchronous again
  // The standby goes away: the next commit waits the timeout once, and
  // returns only after the record no longer names the standby.
  p.standby.reset();
  const auto again = std::chrono::steady_clock::now();
  SlowestCommit(p, 21, 1);
  CHECK(std::chrono::steady_clock::now() - again >= std::chrono::milliseconds(500));
  CHECK(p.LastRecorded() == std::set<std::string>{"c1"});
  CHECK(p.leader->lagging());
  CHECK(p.leader->Snapshot().in_sync.empty());
  CHECK(SlowestCommit(p, 22, 5) < std::chrono::milliseconds(500));
}

TEST_CASE("a batch whose standby dropped out is held until the drop is recorded", "[replication]") {
  Pair p;
  p.StartLeader(/*sync=*/true, Millis(300));
  p.StartStandby();
  REQUIRE(WaitUntil([&] { return p.LastRecorded() == std::set<std::string>{"c1", "s1"}; }, 5000));
  p.standby.reset();
  {
    std::lock_guard lock(p.record_mu);
    p.record_failures = 4;  // etcd unreachable for the next four attempts
  }
  const auto start = std::chrono::steady_clock::now();
  SlowestCommit(p, 0, 1);
  // Released only once recorded: the failures were used up (by this commit's
  // retries, and the actor's own at its ticks) and the record says so.
  CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(300 + 100));
  CHECK(p.LastRecorded() == std::set<std::string>{"c1"});
  std::lock_guard lock(p.record_mu);
  CHECK(p.record_failures == 0);
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

namespace apollo11::replication {
namespace {

// Every frame waiting on `socket` now, decoded.
std::vector<ReplicationFrame> Drain(zmq::socket_t& socket) {
  std::vector<ReplicationFrame> frames;
  zmq::message_t msg;
  while (socket.recv(msg, zmq::recv_flags::dontwait)) {
    auto f = DecodeFrame(msg.to_string_view());
    REQUIRE(f.ok());
    frames.push_back(*f);
  }
  return frames;
}

size_t CountOf(const std::vector<ReplicationFrame>& frames, FrameType type) {
  return std::count_if(frames.begin(), frames.end(),
                       [type](const ReplicationFrame& f) { return f.type == type; });
}

}  // namespace

TEST_CASE("a peer that does not read its journal copy holds the copy window, then loses its turn",
          "[replication][security]") {
  Pair p;
  p.standbys = {};  // any name (a link with --insecure)
  p.copy_chunk = 4096;
  p.copy_stall = Millis(600);
  p.OpenLeaderJournal();
  // History from before this term: a new standby needs a copy.
  for (int i = 0; i < 300; ++i) {
    storage::RunBatch b = Step(i);
    REQUIRE(p.leader_journal->Commit(b).ok());
  }
  p.StartLeader(/*sync=*/false, Millis(1000));

  zmq::socket_t thief(p.ctx, zmq::socket_type::dealer);
  thief.set(zmq::sockopt::routing_id, "thief");
  thief.set(zmq::sockopt::linger, 0);
  thief.connect(p.leader->endpoint());
  ReplicationFrame hello;
  hello.type = FrameType::kHello;
  hello.sender = "thief";
  hello.credit = 64;
  thief.send(zmq::buffer(EncodeFrame(hello)));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  // The copy's start and one window of chunks, nothing more, however long
  // the copy (its journal is well over 8 chunks of 4 KiB).
  auto first = Drain(thief);
  REQUIRE(CountOf(first, FrameType::kCopyBegin) == 1);
  const auto begin = std::find_if(first.begin(), first.end(), [](const ReplicationFrame& f) {
    return f.type == FrameType::kCopyBegin;
  });
  CHECK(begin->offset > kCopyWindowChunks * p.copy_chunk + 2 * p.copy_chunk);
  CHECK(CountOf(first, FrameType::kCopyChunk) == kCopyWindowChunks);
  CHECK(CountOf(first, FrameType::kCopyEnd) == 0);
  // Each chunk it says it wrote lets one more go.
  ReplicationFrame ack = hello;
  ack.type = FrameType::kAck;
  ack.credit = 0;
  ack.offset = 2 * p.copy_chunk;
  thief.send(zmq::buffer(EncodeFrame(ack)));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(CountOf(Drain(thief), FrameType::kCopyChunk) == 2);

  // A real standby asks meanwhile: it waits its turn, and gets its copy once
  // the silent peer's turn has stalled out.
  p.StartStandby();
  REQUIRE(WaitUntil([&] { return p.standby_journal->last_batch() == 300; }, 10000));
  CHECK(p.standby_journal->HistoryOfRun("r1")->size() == 300);
  CHECK(p.leader->Snapshot().copies == 1);
}

}  // namespace apollo11::replication
