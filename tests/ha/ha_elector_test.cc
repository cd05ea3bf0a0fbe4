#include "ha/ha_elector.h"

#include <catch2/catch.hpp>
#include <memory>
#include <random>
#include <set>
#include <vector>

#include "ha/in_sync.h"
#include "tests/ha/fake_etcd.h"

using namespace apollo11;
using namespace apollo11::ha;
using apollo11::ha::testing::FakeEtcd;

namespace {

// One coordinator's elector, board and journal epoch, stepped by the Sim.
struct Node {
  Node(FakeEtcd* etcd, const FakeClock* clock, const std::string& name, int64_t ttl = 2,
       std::string in_sync_key = "")
      : board(clock, Member{name, "tcp://" + name + ":1", "tcp://" + name + ":2", ""}),
        elector(etcd, clock, &board,
                ElectorOptions{"test/election", ttl, Millis(0), std::move(in_sync_key)},
                ElectorEvents{
                    [this](uint64_t e) {
                      if (e <= journal_epoch) {
                        return Status::InvalidInput("not above " + std::to_string(journal_epoch));
                      }
                      journal_epoch = e;
                      return Status::Ok();
                    },
                    [this](const std::string& why) { lost.push_back(why); }, nullptr, nullptr,
                    [this](const std::string& why) { foreign.push_back(why); }}) {}
  RoleBoard board;
  HaElector elector;
  uint64_t journal_epoch = 0;
  std::vector<std::string> lost;
  std::vector<std::string> foreign;  // foreign_key reports
  Micros next = 0;
  bool paused = false;
};

// Steps every unpaused node when due, moving the fake clock to the next due
// step, until `until` (steady).
struct Sim {
  FakeClock clock;
  FakeEtcd etcd{&clock};
  std::vector<std::unique_ptr<Node>> nodes;

  Node& Add(const std::string& name, std::string in_sync_key = "") {
    nodes.push_back(std::make_unique<Node>(&etcd, &clock, name, 2, std::move(in_sync_key)));
    nodes.back()->next = clock.Steady();
    return *nodes.back();
  }
  // Calls `check` after every step.
  template <typename Check>
  void RunUntil(Micros until, Check check) {
    for (;;) {
      Micros due = until;
      for (auto& n : nodes) {
        if (!n->paused) due = std::min(due, n->next);
      }
      if (due > clock.Steady()) clock.Advance(due - clock.Steady());
      if (due >= until) return;
      for (auto& n : nodes) {
        if (n->paused || n->next > clock.Steady()) continue;
        n->next = std::max(n->elector.Step(), clock.Steady() + 10 * kMicrosPerMilli);
        check();
      }
    }
  }
  void RunFor(Micros d) {
    RunUntil(clock.Steady() + d, [] {});
  }
  int ActingLeaders() const {
    int acting = 0;
    for (auto& n : nodes) acting += n->board.MayAct() ? 1 : 0;
    return acting;
  }
};

}  // namespace

TEST_CASE("a coordinator that campaigns alone leads in the key's create revision",
          "[ha][elector]") {
  Sim sim;
  Node& a = sim.Add("a");
  sim.RunFor(100 * kMicrosPerMilli);
  const RoleState s = a.board.Current();
  CHECK(s.role == Role::kLeader);
  CHECK(s.epoch > 0);
  CHECK(a.journal_epoch == s.epoch);
  CHECK(s.leader.name == "a");
  CHECK(a.board.MayAct());
}

TEST_CASE("two coordinators elect one leader and the standby knows its endpoints",
          "[ha][elector]") {
  Sim sim;
  Node& a = sim.Add("a");
  Node& b = sim.Add("b");
  sim.RunFor(5 * kMicrosPerSecond);
  CHECK(a.board.Current().role == Role::kLeader);
  const RoleState sb = b.board.Current();
  CHECK(sb.role == Role::kStandby);
  CHECK(sb.leader.name == "a");
  CHECK(sb.leader.worker_endpoint == "tcp://a:1");
  CHECK(sb.leader.client_endpoint == "tcp://a:2");
  CHECK(sb.epoch == a.board.Current().epoch);
  CHECK(sim.ActingLeaders() == 1);
}

TEST_CASE("a paused leader stops acting before the standby can win and steps down on waking",
          "[ha][elector]") {
  Sim sim;
  Node& a = sim.Add("a");
  Node& b = sim.Add("b");
  sim.RunFor(1 * kMicrosPerSecond);
  REQUIRE(a.board.Current().role == Role::kLeader);
  const uint64_t old_epoch = a.board.Current().epoch;
  a.paused = true;  // SIGSTOP: no step runs, but its clock moves on
  int overlap = 0;
  sim.RunUntil(sim.clock.Steady() + 6 * kMicrosPerSecond,
               [&] { overlap += sim.ActingLeaders() > 1 ? 1 : 0; });
  CHECK(overlap == 0);
  CHECK_FALSE(a.board.MayAct());  // by its own clock, without a step
  REQUIRE(b.board.Current().role == Role::kLeader);
  CHECK(b.board.Current().epoch > old_epoch);
  a.paused = false;  // SIGCONT
  a.next = sim.clock.Steady();
  sim.RunFor(3 * kMicrosPerSecond);
  CHECK(a.board.Current().role == Role::kStandby);
  CHECK(a.board.Current().leader.name == "b");
  REQUIRE_FALSE(a.lost.empty());
  CHECK_THAT(a.lost[0], Catch::Contains("not renewed in time"));
}

TEST_CASE(
    "a leader cut off from etcd steps down within its lease, then leads again when etcd is back",
    "[ha][elector]") {
  Sim sim;
  Node& a = sim.Add("a");
  sim.RunFor(500 * kMicrosPerMilli);
  REQUIRE(a.board.Current().role == Role::kLeader);
  const int64_t lease = a.elector.lease();
  const Micros cut = sim.clock.Steady();
  sim.etcd.down = true;
  sim.RunUntil(cut + 2 * kMicrosPerSecond, [&] {
    if (a.board.MayAct()) CHECK(sim.etcd.LeaseAlive(lease));  // never act on a dead lease
  });
  CHECK(a.board.Current().role == Role::kStandby);
  CHECK_FALSE(a.board.MayAct());
  CHECK(a.lost.size() == 1);
  const uint64_t old_epoch = a.journal_epoch;
  sim.etcd.down = false;
  sim.RunFor(3 * kMicrosPerSecond);
  CHECK(a.board.Current().role == Role::kLeader);
  CHECK(a.board.Current().epoch > old_epoch);
}

TEST_CASE("a revision not above the journal's epoch is refused and campaigned past",
          "[ha][elector]") {
  Sim sim;
  Node& a = sim.Add("a");
  a.journal_epoch = 40;  // earlier terms (or restarts) used epochs up to 40
  sim.RunFor(10 * kMicrosPerSecond);
  CHECK(a.board.Current().role == Role::kLeader);
  CHECK(a.board.Current().epoch > 40);
  CHECK(a.journal_epoch == a.board.Current().epoch);
}

TEST_CASE("a leader that resigns hands over and does not take it straight back", "[ha][elector]") {
  Sim sim;
  Node& a = sim.Add("a");
  Node& b = sim.Add("b");
  sim.RunFor(1 * kMicrosPerSecond);
  REQUIRE(a.board.Current().role == Role::kLeader);
  a.elector.RequestResign();
  int overlap = 0;
  sim.RunUntil(sim.clock.Steady() + 3 * kMicrosPerSecond,
               [&] { overlap += sim.ActingLeaders() > 1 ? 1 : 0; });
  CHECK(overlap == 0);
  CHECK(b.board.Current().role == Role::kLeader);
  CHECK(a.board.Current().role == Role::kStandby);
  CHECK(a.board.Current().leader.name == "b");
  CHECK(a.lost.empty());  // a resign is no lost lease
}

TEST_CASE("random pauses and etcd outages never give two acting leaders", "[ha][elector]") {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    Sim sim;
    sim.Add("a");
    sim.Add("b");
    sim.Add("c");
    std::mt19937 rng(seed);
    int overlap = 0, terms = 0;
    std::map<uint64_t, std::string> epoch_leader;
    for (int round = 0; round < 40; ++round) {
      for (auto& n : sim.nodes) {
        const bool was = n->paused;
        n->paused = rng() % 5 == 0;
        if (was && !n->paused) n->next = sim.clock.Steady();
      }
      sim.etcd.down = rng() % 6 == 0;
      sim.RunUntil(sim.clock.Steady() + (200 + rng() % 3000) * kMicrosPerMilli, [&] {
        overlap += sim.ActingLeaders() > 1 ? 1 : 0;
        for (auto& n : sim.nodes) {
          if (!n->board.MayAct()) continue;
          auto [it, fresh] =
              epoch_leader.emplace(n->board.Current().epoch, n->board.Current().self.name);
          terms += fresh ? 1 : 0;
          CHECK(it->second == n->board.Current().self.name);  // one leader per epoch
        }
      });
    }
    INFO("seed " << seed);
    CHECK(overlap == 0);
    CHECK(terms > 1);
  }
}

// The in-sync gate (ha/in_sync.h): what a leader released, only coordinators
// the record names may lead after it.
TEST_CASE("a winner records itself alone as in sync before it leads", "[ha][elector][in-sync]") {
  Sim sim;
  const std::string key = InSyncKey("test/election");
  Node& a = sim.Add("a", key);
  sim.RunFor(500 * kMicrosPerMilli);
  REQUIRE(a.board.Current().role == Role::kLeader);
  REQUIRE(sim.etcd.values.count(key) == 1);
  auto record = DecodeInSync(sim.etcd.values[key]);
  REQUIRE(record.ok());
  CHECK(record->epoch == a.board.Current().epoch);
  CHECK(record->leader == "a");
  CHECK(record->in_sync == std::set<std::string>{"a"});
  CHECK(a.elector.HeldKey().has_value());
  CHECK(a.elector.HeldKey()->rev == a.board.Current().epoch);
}

TEST_CASE("a standby the record does not name never leads, and leads once it is named",
          "[ha][elector][in-sync]") {
  Sim sim;
  const std::string key = InSyncKey("test/election");
  Node& a = sim.Add("a", key);
  sim.RunFor(500 * kMicrosPerMilli);
  REQUIRE(a.board.Current().role == Role::kLeader);
  Node& b = sim.Add("b", key);
  a.paused = true;  // the leader dies: its lease runs out
  sim.RunFor(8 * kMicrosPerSecond);
  CHECK(b.board.Current().role == Role::kStandby);
  CHECK_FALSE(b.elector.eligible());
  CHECK(sim.ActingLeaders() == 0);
  // The old leader's record names b (it caught up before the leader died).
  sim.etcd.values[key] = EncodeInSync({1, "a", {"a", "b"}});
  sim.RunFor(3 * kMicrosPerSecond);
  CHECK(b.board.Current().role == Role::kLeader);
  CHECK(b.elector.eligible());
  auto record = DecodeInSync(sim.etcd.values[key]);
  REQUIRE(record.ok());
  CHECK(record->in_sync == std::set<std::string>{"b"});  // a now lacks b's batches
}

TEST_CASE("the leader that wrote the record leads again after a restart while the other waits",
          "[ha][elector][in-sync]") {
  Sim sim;
  const std::string key = InSyncKey("test/election");
  Node& a = sim.Add("a", key);
  Node& b = sim.Add("b", key);
  sim.RunFor(1 * kMicrosPerSecond);
  REQUIRE(a.board.Current().role == Role::kLeader);
  a.elector.Shutdown();  // a stops (its key and lease go at once)
  a.paused = true;
  sim.RunFor(3 * kMicrosPerSecond);
  CHECK(b.board.Current().role == Role::kStandby);
  CHECK(sim.ActingLeaders() == 0);
  a.paused = false;  // a comes back and campaigns
  a.next = sim.clock.Steady();
  sim.RunFor(3 * kMicrosPerSecond);
  CHECK(a.board.Current().role == Role::kLeader);
  CHECK(b.board.Current().leader.name == "a");
}

TEST_CASE("a standby dropped from the record while it waited in line resigns the key it won",
          "[ha][elector][in-sync]") {
  Sim sim;
  const std::string key = InSyncKey("test/election");
  sim.etcd.values[key] = EncodeInSync({1, "x", {"b"}});
  Node& b = sim.Add("b", key);
  // b passes the gate (the first read), and the record drops it before the
  // check after winning (every later read sees the change).
  sim.etcd.get_hook = [&](std::string_view k) {
    if (k == key) sim.etcd.values[key] = EncodeInSync({2, "x", {"x"}});
  };
  sim.RunFor(200 * kMicrosPerMilli);
  CHECK(b.board.Current().role == Role::kStandby);
  CHECK(sim.ActingLeaders() == 0);
  CHECK_FALSE(b.elector.eligible());
  CHECK_FALSE(b.elector.HeldKey().has_value());
  auto leader = sim.etcd.Leader("test/election");
  REQUIRE(leader.ok());
  CHECK_FALSE(leader->has_value());  // the won key was resigned
}

TEST_CASE("an unreadable record keeps a standby from campaigning", "[ha][elector][in-sync]") {
  Sim sim;
  const std::string key = InSyncKey("test/election");
  sim.etcd.values[key] = "{not json";
  Node& b = sim.Add("b", key);
  sim.RunFor(2 * kMicrosPerSecond);
  CHECK(b.board.Current().role == Role::kStandby);
  CHECK_FALSE(b.elector.eligible());
  CHECK(DecodeInSync("{not json").status().code() == StatusCode::kCorrupt);
  CHECK(DecodeInSync(R"({"in_sync":["a",""]})").status().code() == StatusCode::kCorrupt);
  CHECK(DecodeInSync(R"({"epoch":-1,"in_sync":[]})").status().code() == StatusCode::kCorrupt);
  auto round = DecodeInSync(EncodeInSync({9, "a", {"a", "b"}}));
  REQUIRE(round.ok());
  CHECK(*round == InSyncRecord{9, "a", {"a", "b"}});
}

TEST_CASE("a deposed leader cannot overwrite the record its successor wrote",
          "[ha][elector][in-sync]") {
  Sim sim;
  const std::string key = InSyncKey("test/election");
  sim.etcd.values[key] = EncodeInSync({0, "", {"a", "b"}});
  Node& a = sim.Add("a", key);
  sim.RunFor(500 * kMicrosPerMilli);
  REQUIRE(a.board.Current().role == Role::kLeader);
  const EtcdLeaderKey old_key = *a.elector.HeldKey();
  Node& b = sim.Add("b", key);
  sim.etcd.values[key] = EncodeInSync({old_key.rev, "a", {"a", "b"}});  // b caught up
  a.paused = true;
  sim.RunFor(8 * kMicrosPerSecond);
  REQUIRE(b.board.Current().role == Role::kLeader);
  auto stale = sim.etcd.PutIfLeader(old_key, key, EncodeInSync({old_key.rev, "a", {"a"}}));
  REQUIRE(stale.ok());
  CHECK_FALSE(*stale);
  CHECK(DecodeInSync(sim.etcd.values[key])->leader == "b");
}

TEST_CASE("a key planted under the election without a lease is never followed and is removed",
          "[ha][elector][hostile]") {
  Sim sim;
  // First in line before anyone campaigns; lease 0 never expires.
  const uint64_t planted =
      sim.etcd.Plant("test/election", "planted",
                     EncodeMember(Member{"evil", "tcp://evil:1", "tcp://evil:2", "tcp://evil:3"}));
  Node& a = sim.Add("a");
  Node& b = sim.Add("b");
  sim.RunUntil(sim.clock.Steady() + 5 * kMicrosPerSecond, [&] {
    for (Node* n : {&a, &b}) {
      REQUIRE(n->board.Current().leader.name != "evil");
      REQUIRE(n->board.Current().epoch != planted);
    }
  });
  CHECK_FALSE(sim.etcd.Has("test/election/planted"));
  CHECK(sim.ActingLeaders() == 1);
  REQUIRE(a.foreign.size() + b.foreign.size() >= 1);
  const std::string& why = a.foreign.empty() ? b.foreign[0] : a.foreign[0];
  CHECK(why.find("test/election/planted") != std::string::npos);
  CHECK(why.find("has no lease") != std::string::npos);
  CHECK(why.find("removed it") != std::string::npos);
}

TEST_CASE("a leased key whose value is not a coordinator's record is ignored and removed",
          "[ha][elector][hostile]") {
  Sim sim;
  auto lease = sim.etcd.GrantLease(60);
  REQUIRE(lease.ok());
  // Campaigns with a value no coordinator writes, before the real ones.
  REQUIRE(sim.etcd.Campaign("test/election", lease->id, "not a record", Millis(0)).ok());
  Node& a = sim.Add("a");
  sim.RunFor(3 * kMicrosPerSecond);
  CHECK(a.board.role() == Role::kLeader);
  REQUIRE_FALSE(a.foreign.empty());
  CHECK(a.foreign[0].find("not a coordinator's record") != std::string::npos);
  CHECK(
      ForeignKeyReason(EtcdLeader{{"e", "k", 1, 7}, EncodeMember(a.board.Current().self)}).empty());
}
