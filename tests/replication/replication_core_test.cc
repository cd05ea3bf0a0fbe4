// The replication protocol without sockets: a leader core and standby cores
// wired through in-memory queues, stepped frame by frame.

#include <catch2/catch.hpp>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "replication/journal_replica_store.h"
#include "replication/replication_leader_core.h"
#include "replication/replication_standby_core.h"
#include "storage/batch_codec.h"
#include "storage/journal.h"
#include "storage/memory_run_store.h"
#include "tests/storage/storage_test_util.h"

namespace apollo11::replication {
namespace {

storage::RunBatch Step(const std::string& run, int i) {
  storage::RunBatch b;
  storage::TransitionRecord t;
  t.run_id = run;
  t.task_id = "t" + std::to_string(i);
  t.to = TaskState::kReady;
  b.Append(t);
  storage::RunRecord r;
  r.run_id = run;
  r.pipeline_name = "p";
  r.created_at = 1;
  if (i == 0) {
    b.CreateRun(r);
  } else {
    b.PutRun(r);
  }
  return b;
}

// A leader store and core, and standbys, delivering frames in order.
struct Cluster {
  explicit Cluster(LeaderOptions options = {}, size_t window = 4096)
      : leader_options(Named(std::move(options), window)), leader(leader_options, /*epoch=*/3, {}) {
    REQUIRE(store.BeginTerm(3).ok());
  }

  static LeaderOptions Named(LeaderOptions o, size_t window) {
    o.name = "c1";
    o.window_batches = window;
    return o;
  }

  // Commits `b` on the leader store and hands it to the core.
  void Commit(storage::RunBatch b) {
    const std::string encoded = storage::codec::EncodeBatch(b);
    const uint64_t first = store.last_seq() + 1, n = b.transitions();
    REQUIRE(store.Commit(b).ok());
    ReplicationLeaderCore::Output out;
    leader.OnCommitted(store.last_batch(), first, n, encoded, 1000 + store.last_batch(), &out);
    Queue(out);
  }
  void Queue(const ReplicationLeaderCore::Output& out) {
    for (const auto& [peer, frame] : out.frames) to_standby.emplace_back(peer, frame);
    for (const std::string& peer : out.copies) copies.push_back(peer);
  }
  // Delivers frames both ways until none is left (or only to `down`).
  void Run(ReplicationStandbyCore& s, const std::string& name) {
    while (!to_standby.empty() || !to_leader.empty()) {
      while (!to_standby.empty()) {
        auto [peer, frame] = std::move(to_standby.front());
        to_standby.pop_front();
        if (peer != name) continue;
        std::vector<std::string> replies;
        s.OnFrame(frame, 0, &replies);
        for (auto& r : replies) to_leader.push_back(std::move(r));
      }
      while (!to_leader.empty()) {
        std::string frame = std::move(to_leader.front());
        to_leader.pop_front();
        ReplicationLeaderCore::Output out;
        leader.OnFrame(name, frame, 0, &out);
        Queue(out);
      }
    }
  }
  void Hello(ReplicationStandbyCore& s, const std::string& name) {
    to_leader.push_back(s.Hello());
    Run(s, name);
  }

  storage::MemoryRunStore store;
  LeaderOptions leader_options;
  ReplicationLeaderCore leader;
  std::deque<std::pair<std::string, std::string>> to_standby;
  std::deque<std::string> to_leader;
  std::vector<std::string> copies;
};

void CheckEqual(storage::RunStore& a, storage::RunStore& b, const std::string& run) {
  CHECK(a.last_seq() == b.last_seq());
  CHECK(a.last_batch() == b.last_batch());
  auto ha = a.HistoryOfRun(run);
  auto hb = b.HistoryOfRun(run);
  REQUIRE(ha.ok());
  REQUIRE(hb.ok());
  REQUIRE(ha->size() == hb->size());
  for (size_t i = 0; i < ha->size(); ++i) {
    CHECK((*ha)[i].seq == (*hb)[i].seq);
    CHECK((*ha)[i].task_id == (*hb)[i].task_id);
  }
}

TEST_CASE("a standby applies the leader's batches in order and acknowledges them",
          "[replication]") {
  Cluster c;
  MemoryReplicaStore replica;
  ReplicationStandbyCore s({"s1", "c1", 8, 0}, &replica);
  c.Hello(s, "s1");
  CHECK(c.copies.empty());  // both empty: nothing to copy
  for (int i = 0; i < 20; ++i) {
    c.Commit(Step("r1", i));
    c.Run(s, "s1");
  }
  CheckEqual(c.store, replica.memory(), "r1");
  CHECK(s.counters().applied == 20);
  CHECK(s.counters().refused() == 0);
  CHECK(c.leader.best_acked_batch() == 20);
  CHECK(c.leader.standbys().at("s1").acked_seq == 20);
}

TEST_CASE("credit bounds the batches in flight to a standby", "[replication]") {
  Cluster c;
  MemoryReplicaStore replica;
  ReplicationStandbyCore s({"s1", "c1", 2, 0}, &replica);
  c.Hello(s, "s1");
  for (int i = 0; i < 5; ++i) c.Commit(Step("r1", i));
  CHECK(c.to_standby.size() == 2);  // no ack yet: two credits, two batches
  c.Run(s, "s1");                   // each ack returns a credit
  CHECK(replica.memory().last_batch() == 5);
  CheckEqual(c.store, replica.memory(), "r1");
}

TEST_CASE("what a standby says cannot grow the leader's queues or tables without bound",
          "[replication][security]") {
  Cluster c;
  for (int i = 0; i < 2000; ++i) c.Commit(Step("r1", i));
  ReplicationFrame hello;
  hello.type = FrameType::kHello;
  hello.sender = "greedy";
  hello.credit = UINT64_MAX;  // asks for everything at once
  ReplicationLeaderCore::Output out;
  c.leader.OnFrame("greedy", EncodeFrame(hello), 0, &out);
  CHECK(out.frames.size() == kMaxStandbyCredit);
  CHECK(c.leader.standbys().at("greedy").credit == 0);
  ReplicationFrame ack = hello;
  ack.type = FrameType::kAck;
  out.frames.clear();
  c.leader.OnFrame("greedy", EncodeFrame(ack), 0, &out);  // credit UINT64_MAX again
  CHECK(out.frames.size() == 2000 - kMaxStandbyCredit);
  CHECK(c.leader.standbys().at("greedy").credit <= kMaxStandbyCredit);

  // Standbys by the thousand: the table holds kMaxStandbys; a newcomer gets
  // in only in place of one silent for kStandbyIdle.
  for (size_t i = 0; i < 3 * kMaxStandbys; ++i) {
    hello.sender = "s" + std::to_string(i);
    hello.credit = 1;
    out = {};
    c.leader.OnFrame(hello.sender, EncodeFrame(hello), /*steady_now=*/1, &out);
  }
  CHECK(c.leader.standbys().size() == kMaxStandbys);
  CHECK(c.leader.refused().unknown_peer == 2 * kMaxStandbys + 1);
  hello.sender = "late";
  c.leader.OnFrame("late", EncodeFrame(hello), 1 + kStandbyIdle + 1, &out);
  CHECK(c.leader.standbys().count("late") == 1);
  CHECK(c.leader.standbys().size() == kMaxStandbys);
}

TEST_CASE("a standby that rejoins behind catches up from its last batch", "[replication]") {
  Cluster c;
  MemoryReplicaStore replica;
  ReplicationStandbyCore s({"s1", "c1", 16, 0}, &replica);
  c.Hello(s, "s1");
  for (int i = 0; i < 10; ++i) c.Commit(Step("r1", i));
  c.Run(s, "s1");
  // Down for 100 commits: nothing reaches it.
  for (int i = 10; i < 110; ++i) c.Commit(Step("r1", i));
  c.to_standby.clear();
  CHECK(replica.memory().last_batch() == 10);
  ReplicationStandbyCore back({"s1", "c1", 16}, &replica);
  c.Hello(back, "s1");
  CHECK(c.copies.empty());
  CheckEqual(c.store, replica.memory(), "r1");
  CHECK(back.counters().applied == 100);
}

TEST_CASE("a standby too far behind for the window is sent a copy", "[replication]") {
  Cluster c({}, /*window=*/4);
  for (int i = 0; i < 10; ++i) c.Commit(Step("r1", i));
  MemoryReplicaStore replica;
  ReplicationStandbyCore s({"s1", "c1", 16, 0}, &replica);
  c.Hello(s, "s1");
  REQUIRE(c.copies == std::vector<std::string>{"s1"});
  CHECK(c.to_standby.empty());  // no batch is streamed before the copy
  CHECK(replica.memory().last_batch() == 0);
}

TEST_CASE("a new standby installs a journal copy and then takes the stream", "[replication]") {
  storage::testing::TempDir dir;
  auto leader_journal = storage::Journal::Open(dir.path() + "/leader", {});
  REQUIRE(leader_journal.ok());
  storage::Journal& lj = **leader_journal;
  REQUIRE(lj.BeginTerm(5).ok());  // the term the core leads in
  LeaderOptions options;
  options.name = "c1";
  options.window_batches = 2;
  ReplicationLeaderCore leader(options, 5, {});
  ReplicationLeaderCore::Output out;
  auto commit = [&](int i) {
    storage::RunBatch b = Step("r1", i);
    const std::string encoded = storage::codec::EncodeBatch(b);
    const uint64_t first = lj.last_seq() + 1, n = b.transitions();
    REQUIRE(lj.Commit(b).ok());
    leader.OnCommitted(lj.last_batch(), first, n, encoded, 1, &out);
  };
  for (int i = 0; i < 5; ++i) commit(i);

  auto standby_journal = storage::Journal::Open(dir.path() + "/standby", {});
  REQUIRE(standby_journal.ok());
  JournalReplicaStore replica(standby_journal->get());
  ReplicationStandbyCore s({"s1", "c1", 16, 0}, &replica);
  std::vector<std::string> replies;
  leader.OnFrame("s1", s.Hello(), 0, &out);
  REQUIRE(out.copies == std::vector<std::string>{"s1"});
  out.copies.clear();

  // The copy, in chunks, as the actor streams it; a batch committed meanwhile
  // reaches the standby after the copy.
  auto position = lj.CopyTo(dir.path() + "/snapshot");
  REQUIRE(position.ok());
  commit(5);
  std::string bytes;
  {
    std::FILE* f = std::fopen((dir.path() + "/snapshot/data.mdb").c_str(), "rb");
    REQUIRE(f != nullptr);
    char buf[4096];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) bytes.append(buf, n);
    std::fclose(f);
  }
  s.OnFrame(leader.CopyBeginFrame(bytes.size()), 0, &replies);
  for (size_t off = 0; off < bytes.size(); off += 1000) {
    s.OnFrame(leader.CopyChunkFrame(off, std::string_view(bytes).substr(off, 1000)), 0, &replies);
  }
  s.OnFrame(leader.CopyEndFrame(bytes.size(), Crc32(bytes)), 0, &replies);
  CHECK(s.counters().copies_installed == 1);
  CHECK(replica.store()->last_batch() == 5);
  // A kAck per chunk written (the leader paces the copy by them), then the
  // kHello after the install.
  const size_t chunks = (bytes.size() + 999) / 1000;
  REQUIRE(replies.size() == chunks + 1);
  auto first_ack = DecodeFrame(replies[0]);
  REQUIRE(first_ack.ok());
  CHECK(first_ack->type == FrameType::kAck);
  CHECK(first_ack->offset == 1000);
  CHECK(DecodeFrame(replies[chunks - 1])->offset == bytes.size());
  leader.OnFrame("s1", replies[chunks - 1], 0, &out);
  CHECK(out.copy_acks == std::vector<std::pair<std::string, uint64_t>>{{"s1", bytes.size()}});
  CHECK(out.frames.empty());
  CHECK(leader.standbys().at("s1").acked_batch == 0);  // copy progress, not a batch
  const std::string hello = replies.back();
  replies.clear();
  out.copy_acks.clear();
  leader.OnFrame("s1", hello, 0, &out);
  REQUIRE(out.frames.size() == 1);  // batch 6, still in the window
  s.OnFrame(out.frames[0].second, 0, &replies);
  CHECK(replica.store()->last_batch() == 6);
  CHECK(replica.store()->last_seq() == 6);
  CHECK(standby_journal->get()->HistoryOfRun("r1")->size() == 6);
}

TEST_CASE("a standby that diverged in an older term gets a copy, not the stream", "[replication]") {
  // Batches 1-3 committed in term 5 reached both; batch 4 of term 5 reached
  // only the old leader, which is now a standby. The new leader (term 7)
  // starts from batch 3 and commits its own batch 4.
  storage::MemoryRunStore leader_store;
  MemoryReplicaStore old_replica, caught_up_replica;
  storage::MemoryRunStore& old_leader = old_replica.memory();
  storage::MemoryRunStore& caught_up = caught_up_replica.memory();
  for (int i = 0; i < 4; ++i) {
    storage::RunBatch b = Step("r1", i);
    storage::RunBatch copy = b;
    REQUIRE(old_leader.ApplyReplicated(i + 1, i + 1, 5, b).ok());
    if (i < 3) {
      storage::RunBatch again = copy;
      REQUIRE(leader_store.ApplyReplicated(i + 1, i + 1, 5, copy).ok());
      REQUIRE(caught_up.ApplyReplicated(i + 1, i + 1, 5, again).ok());
    }
  }
  REQUIRE(leader_store.BeginTerm(7).ok());
  ReplicationLeaderCore leader({"c2", {}, 4096}, 7, {3, 3, 5});
  ReplicationLeaderCore::Output out;
  storage::RunBatch own = Step("r2", 0);
  const std::string encoded = storage::codec::EncodeBatch(own);
  REQUIRE(leader_store.Commit(own).ok());
  CHECK(leader_store.last_batch_epoch() == 7);
  leader.OnCommitted(4, 4, 1, encoded, 1, &out);

  ReplicationStandbyCore diverged({"c1", "c2", 16}, &old_replica);
  ReplicationStandbyCore behind({"c3", "c2", 16}, &caught_up_replica);
  // Same batch number and seq as the leader's batch 4, another epoch: a copy.
  leader.OnFrame("c1", diverged.Hello(), 0, &out);
  CHECK(out.copies == std::vector<std::string>{"c1"});
  CHECK(out.frames.empty());
  // At batch 3 of term 5, as the leader started: the stream, from batch 4.
  out = {};
  leader.OnFrame("c3", behind.Hello(), 0, &out);
  CHECK(out.copies.empty());
  REQUIRE(out.frames.size() == 1);
  std::vector<std::string> replies;
  behind.OnFrame(out.frames[0].second, 0, &replies);
  CHECK(caught_up.last_batch() == 4);
  CHECK(caught_up.last_batch_epoch() == 7);
  CHECK(caught_up.HistoryOfRun("r2")->size() == 1);
}

TEST_CASE("a standby refuses every frame from a term older than one its journal began",
          "[replication]") {
  MemoryReplicaStore replica;
  storage::MemoryRunStore& store = replica.memory();
  REQUIRE(store.BeginTerm(9).ok());  // it won an election meanwhile
  ReplicationStandbyCore s({"s1", "c1", 16, 0}, &replica);
  ReplicationLeaderCore leader({"c1", {}, 16}, 8, {});
  std::vector<std::string> replies;
  s.OnFrame(leader.CopyBeginFrame(4), 0, &replies);
  ReplicationLeaderCore::Output out;
  storage::RunBatch b = Step("r1", 0);
  leader.OnCommitted(1, 1, 1, storage::codec::EncodeBatch(b), 1, &out);
  leader.OnFrame("s1", s.Hello(), 0, &out);
  REQUIRE(out.frames.size() == 1);
  s.OnFrame(out.frames[0].second, 0, &replies);
  CHECK(s.counters().refused_epoch == 2);
  CHECK(store.last_batch() == 0);
  CHECK(replies.empty());
}

TEST_CASE("a copy with a bad checksum is never installed", "[replication]") {
  storage::testing::TempDir dir;
  auto standby_journal = storage::Journal::Open(dir.path() + "/standby", {});
  REQUIRE(standby_journal.ok());
  JournalReplicaStore replica(standby_journal->get());
  ReplicationStandbyCore s({"s1", "c1", 16, 0}, &replica);
  ReplicationLeaderCore leader({"c1", {}, 16}, 5, {});
  std::vector<std::string> replies;
  s.OnFrame(leader.CopyBeginFrame(4), 0, &replies);
  s.OnFrame(leader.CopyChunkFrame(0, "abcd"), 0, &replies);
  s.OnFrame(leader.CopyEndFrame(4, Crc32("abce")), 0, &replies);
  CHECK(s.counters().copies_installed == 0);
  CHECK(s.counters().refused_checksum == 1);
  REQUIRE(replies.size() == 2);  // the chunk's kAck, then the kResync
  CHECK(DecodeFrame(replies[0])->type == FrameType::kAck);
  auto resync = DecodeFrame(replies[1]);
  REQUIRE(resync.ok());
  CHECK(resync->type == FrameType::kResync);
  CHECK(replica.store() != nullptr);
}

TEST_CASE("forged replication frames are refused, counted and never applied", "[replication]") {
  Cluster c(LeaderOptions{"", {"s1"}, 0});
  MemoryReplicaStore replica;
  ReplicationStandbyCore s({"s1", "c1", 16, 0}, &replica);
  c.Hello(s, "s1");
  c.Commit(Step("r1", 0));
  c.Run(s, "s1");
  REQUIRE(replica.memory().last_batch() == 1);

  // At the leader: a peer it does not know, and a frame whose sender is not
  // the peer it came from.
  ReplicationLeaderCore::Output out;
  ReplicationStandbyCore stranger({"x9", "c1", 16, 0}, &replica);
  c.leader.OnFrame("x9", stranger.Hello(), 0, &out);
  c.leader.OnFrame("s1", stranger.Hello(), 0, &out);
  c.leader.OnFrame("s1", "garbage", 0, &out);
  CHECK(c.leader.refused().unknown_peer == 2);
  CHECK(c.leader.refused().corrupt == 1);
  CHECK(out.frames.empty());
  CHECK(out.copies.empty());

  // At the standby: next batch forged from another sender, with a bad
  // checksum, with a gap, and from an older epoch.
  storage::RunBatch next = Step("r1", 1);
  ReplicationFrame f;
  f.type = FrameType::kBatch;
  f.epoch = 3;
  f.sender = "c1";
  f.batch = 2;
  f.seq = 2;
  f.payload = storage::codec::EncodeBatch(next);
  f.checksum = Crc32(f.payload);
  std::vector<std::string> replies;
  ReplicationFrame other = f;
  other.sender = "c2";
  s.OnFrame(EncodeFrame(other), 0, &replies);
  ReplicationFrame bad = f;
  bad.checksum ^= 1;
  s.OnFrame(EncodeFrame(bad), 0, &replies);
  ReplicationFrame gap = f;
  gap.batch = 3;
  gap.seq = 3;
  s.OnFrame(EncodeFrame(gap), 0, &replies);
  ReplicationFrame old = f;
  old.epoch = 2;
  s.OnFrame(EncodeFrame(old), 0, &replies);
  s.OnFrame("garbage", 0, &replies);
  CHECK(s.counters().refused_peer == 1);
  CHECK(s.counters().refused_checksum == 1);
  CHECK(s.counters().refused_order == 1);
  CHECK(s.counters().refused_epoch == 1);
  CHECK(s.counters().refused_corrupt == 1);
  CHECK(s.counters().applied == 1);
  CHECK(replica.memory().last_batch() == 1);
  CHECK(replica.memory().HistoryOfRun("r1")->size() == 1);
  // The bad checksum and the gap ask the leader to resync.
  REQUIRE(replies.size() == 2);
  for (const std::string& r : replies) CHECK(DecodeFrame(r)->type == FrameType::kResync);

  // The genuine frame still applies.
  s.OnFrame(EncodeFrame(f), 0, &replies);
  CHECK(replica.memory().last_batch() == 2);
}

}  // namespace
TEST_CASE("a standby told its leader's epoch refuses any other, however high", "[replication]") {
  Cluster c(LeaderOptions{"", {"s1"}, 0});
  MemoryReplicaStore replica;
  ReplicationStandbyCore s({"s1", "c1", 16, 3}, &replica);  // etcd backs epoch 3
  c.Hello(s, "s1");
  c.Commit(Step("r1", 0));
  c.Run(s, "s1");
  REQUIRE(replica.memory().last_batch() == 1);
  // A heartbeat forged in the leader's name with an epoch no etcd record
  // backs: refused, and the real stream goes on.
  ReplicationFrame forged;
  forged.type = FrameType::kHeartbeat;
  forged.epoch = uint64_t{1} << 63;
  forged.sender = "c1";
  std::vector<std::string> replies;
  s.OnFrame(EncodeFrame(forged), 0, &replies);
  CHECK(s.counters().refused_epoch == 1);
  CHECK(s.epoch() == 3);
  c.Commit(Step("r1", 1));
  c.Run(s, "s1");
  CHECK(replica.memory().last_batch() == 2);
}

}  // namespace apollo11::replication
