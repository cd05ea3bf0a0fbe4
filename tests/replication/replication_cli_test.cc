// Journal replication between real processes: a leader apollo11-node
// streaming to a static standby (--replication-follow), and frames forged by
// the test itself on the replication link.

#include <signal.h>

#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "replication/replication_frame.h"
#include "storage/batch_codec.h"
#include "storage/journal.h"
#include "tests/actors/cli_harness.h"
#include "tests/actors/cluster_harness.h"
#include "transport/security.h"

using namespace apollo11::testing;  // NOLINT: test file
namespace rep = apollo11::replication;

namespace {

// The journal position of a node's state dir, read as the CLI reads it.
struct Position {
  uint64_t batch = 0, seq = 0;
};
Position PositionOf(const std::string& state) {
  apollo11::storage::JournalOptions o;
  o.read_only = true;
  auto j = apollo11::storage::Journal::Open(state + "/journal", o);
  if (!j.ok()) return {};
  return {(*j)->last_batch(), (*j)->last_seq()};
}

NodeProc StartLeader(const ScratchDir& dir, const std::string& name = "leader",
                     std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"--role",
                                   "all",
                                   "--slots",
                                   "4",
                                   "--bind",
                                   "tcp://127.0.0.1:0",
                                   "--api-bind",
                                   "tcp://127.0.0.1:0",
                                   "--replication-bind",
                                   "tcp://127.0.0.1:0",
                                   "--replication-name",
                                   "c1",
                                   "--replication-peers",
                                   "s1",
                                   "--replication-timeout",
                                   "300ms"};
  // Tests of the link's CURVE pass keys; the others accept plain peers.
  if (std::find(extra.begin(), extra.end(), "--curve-key") == extra.end()) {
    args.push_back("--insecure");
  }
  args.insert(args.end(), extra.begin(), extra.end());
  return StartNode(dir, name, args, "leader");
}

NodeProc StartStandby(const ScratchDir& dir, const std::string& endpoint,
                      const std::string& name = "standby", std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"--role",
                                   "coordinator",
                                   "--replication-follow",
                                   endpoint,
                                   "--replication-name",
                                   "s1",
                                   "--replication-peers",
                                   "c1"};
  if (std::find(extra.begin(), extra.end(), "--curve-key") == extra.end()) {
    args.push_back("--insecure");
  }
  args.insert(args.end(), extra.begin(), extra.end());
  return StartNode(dir, name, args, "standby");
}

std::string Submit(const NodeProc& leader, const ScratchDir& dir, int tasks, unsigned seed) {
  const std::string file =
      dir.Write("p" + std::to_string(seed) + ".yaml", LayeredDag(tasks, tasks / 2, "noop", seed));
  CmdResult r = Cli(leader, {"submit", file, "--wait", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  auto summary = ParseJson(r.out.substr(r.out.find('{')));
  REQUIRE(summary["state"] == "SUCCESS");
  return summary["run_id"];
}

// `apollo11 CMD ARGS --json --state-dir STATE` parsed.
nlohmann::json Local(const std::string& state, std::vector<std::string> args) {
  std::vector<std::string> argv = {Apollo11()};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--json", "--state-dir", state});
  CmdResult r = Run(argv);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return ParseJson(r.out);
}

// Every run of the leader has the same `history --json` on the standby.
void CheckSameHistories(const ScratchDir& dir) {
  const std::string leader = dir.path() + "/leader", standby = dir.path() + "/standby";
  nlohmann::json runs = Local(leader, {"runs", "--limit", "1000"});
  REQUIRE(runs.is_array());
  REQUIRE(!runs.empty());
  CHECK(Local(standby, {"runs", "--limit", "1000"}).size() == runs.size());
  for (const auto& r : runs) {
    const std::string id = r["run_id"];
    INFO("run " << id);
    CHECK(Local(standby, {"history", id}) == Local(leader, {"history", id}));
  }
}

bool CaughtUp(const ScratchDir& dir) {
  Position l = PositionOf(dir.path() + "/leader"), s = PositionOf(dir.path() + "/standby");
  return l.batch > 0 && l.batch == s.batch && l.seq == s.seq;
}

double Metric(const NodeProc& node, const std::string& name) {
  CmdResult r =
      Run({"curl", "-s", "http://" + node.listening["http"].get<std::string>() + "/metrics"});
  for (size_t at = r.out.find("\n" + name + " "); at != std::string::npos;) {
    return std::stod(r.out.substr(at + name.size() + 2));
  }
  return -1;
}

// The ids of the runs in a node's journal, read as the CLI reads it.
std::set<std::string> RunIds(const std::string& state) {
  std::set<std::string> ids;
  for (const auto& r : Local(state, {"runs", "--limit", "1000"})) ids.insert(r["run_id"]);
  return ids;
}

}  // namespace

// The leader still knows the killed standby's name and sends it heartbeats:
// the restarted one must say hello anyway (it once waited for silence).
TEST_CASE("a standby stopped during 1,000 commits catches up with the same histories",
          "[cluster][replication]") {
  ScratchDir dir;
  NodeProc leader = StartLeader(dir);
  NodeProc standby = StartStandby(dir, leader.listening["replication"]);
  Nodes guard{{&leader, &standby}};
  Submit(leader, dir, 20, 1);
  REQUIRE(WaitFor([&] { return CaughtUp(dir); }, 10000));
  const uint64_t before = PositionOf(dir.path() + "/standby").batch;

  ::kill(standby.pid, SIGKILL);
  REQUIRE(WaitExit(standby.pid, 5000) >= 0);
  for (unsigned seed = 2; PositionOf(dir.path() + "/leader").batch < before + 1000; ++seed) {
    Submit(leader, dir, 60, seed);
  }
  CHECK(PositionOf(dir.path() + "/standby").batch == before);

  standby = StartStandby(dir, leader.listening["replication"], "standby2");
  REQUIRE(WaitFor([&] { return CaughtUp(dir); }, 60000));
  CHECK(dir.Read("standby2.err").find("journal copy") == std::string::npos);  // streamed
  CheckSameHistories(dir);
}

TEST_CASE("a fresh standby takes a journal copy, then the stream", "[cluster][replication]") {
  ScratchDir dir;
  NodeProc leader = StartLeader(dir);
  Nodes guard{{&leader}};
  Submit(leader, dir, 20, 1);
  // A restarted leader keeps no window: a new standby needs a copy.
  ::kill(leader.pid, SIGTERM);
  REQUIRE(WaitExit(leader.pid, 10000) == 0);
  leader = StartLeader(dir, "leader2");
  NodeProc standby = StartStandby(dir, leader.listening["replication"]);
  guard.all.push_back(&standby);
  REQUIRE(WaitFor([&] { return CaughtUp(dir); }, 10000));
  CHECK(dir.Read("leader2.err").find("a journal copy") != std::string::npos);
  Submit(leader, dir, 20, 2);  // then the stream
  REQUIRE(WaitFor([&] { return CaughtUp(dir); }, 10000));
  CheckSameHistories(dir);
}

// Retention is no commit, so nothing of it is shipped: before, a standby
// kept every run its leader removed (docs/ha.md, "Retention").
TEST_CASE("a standby removes the runs its leader's retention removed", "[cluster][replication]") {
  ScratchDir dir;
  const std::vector<std::string> retention = {"--retention", "3s", "--retention-interval", "200ms"};
  NodeProc leader = StartLeader(dir, "leader", retention);
  NodeProc standby = StartStandby(dir, leader.listening["replication"], "standby", retention);
  Nodes guard{{&leader, &standby}};
  const std::string first = Submit(leader, dir, 20, 1), second = Submit(leader, dir, 20, 2);
  REQUIRE(WaitFor([&] { return CaughtUp(dir); }, 10000));
  const std::string leader_state = dir.path() + "/leader", standby_state = dir.path() + "/standby";
  CHECK(RunIds(standby_state) == std::set<std::string>{first, second});

  REQUIRE(WaitFor([&] { return RunIds(leader_state).empty(); }, 15000));
  CHECK(WaitFor([&] { return RunIds(standby_state).empty(); }, 5000));
  CHECK(dir.Read("standby.err").find("retention: removed") != std::string::npos);
  for (const std::string& id : {first, second}) {
    CmdResult r = Run({Apollo11(), "history", id, "--state-dir", standby_state});
    CHECK(r.exit_code == 2);  // no run ID in the journal
  }
  // The stream goes on from the same position: the removal moved no batch.
  const std::string third = Submit(leader, dir, 20, 3);
  REQUIRE(WaitFor([&] { return CaughtUp(dir); }, 10000));
  CHECK(RunIds(standby_state).count(third) == 1);
}

TEST_CASE("forged replication frames are refused and counted, never applied",
          "[cluster][replication]") {
  ScratchDir dir;
  zmq::context_t ctx;
  // At the leader: a peer it does not admit, and garbage from an admitted one.
  NodeProc leader = StartLeader(dir);
  Nodes guard{{&leader}};
  const std::string endpoint = leader.listening["replication"];
  rep::ReplicationFrame hello;
  hello.type = rep::FrameType::kHello;
  hello.sender = "x9";
  hello.credit = 8;
  zmq::socket_t stranger(ctx, zmq::socket_type::dealer);
  stranger.set(zmq::sockopt::routing_id, "x9");
  stranger.set(zmq::sockopt::linger, 0);
  stranger.connect(endpoint);
  stranger.send(zmq::buffer(rep::EncodeFrame(hello)), zmq::send_flags::none);
  zmq::socket_t liar(ctx, zmq::socket_type::dealer);
  liar.set(zmq::sockopt::routing_id, "s1");
  liar.set(zmq::sockopt::linger, 0);
  liar.connect(endpoint);
  liar.send(zmq::str_buffer("not a frame"), zmq::send_flags::none);
  CHECK(WaitFor([&] { return Metric(leader, "apollo11_replication_refused_total") >= 2; }, 5000));

  // At a standby: a fake leader sends a bad checksum, a gap, another
  // sender's batch and an older epoch; none is applied.
  zmq::socket_t fake(ctx, zmq::socket_type::router);
  fake.set(zmq::sockopt::linger, 0);
  fake.bind("tcp://127.0.0.1:0");
  const std::string fake_endpoint = fake.get(zmq::sockopt::last_endpoint);
  NodeProc standby = StartStandby(dir, fake_endpoint);
  guard.all.push_back(&standby);
  zmq::message_t id, body;
  fake.set(zmq::sockopt::rcvtimeo, 5000);
  REQUIRE(fake.recv(id));
  REQUIRE(fake.recv(body));
  CHECK(id.to_string() == "s1");
  apollo11::storage::RunBatch batch;
  apollo11::storage::TransitionRecord t;
  t.run_id = "r1";
  t.task_id = "a";
  batch.Append(t);
  rep::ReplicationFrame good;
  good.type = rep::FrameType::kBatch;
  good.epoch = 5;
  good.sender = "c1";
  good.batch = 1;
  good.seq = 1;
  good.payload = apollo11::storage::codec::EncodeBatch(batch);
  good.checksum = rep::Crc32(good.payload);
  rep::ReplicationFrame bad = good, gap = good, other = good, old = good;
  bad.checksum ^= 1;
  gap.batch = 2;
  gap.seq = 2;
  other.sender = "c2";
  for (const auto* f : {&bad, &gap, &other}) {
    fake.send(zmq::buffer(id.to_string()), zmq::send_flags::sndmore);
    fake.send(zmq::buffer(rep::EncodeFrame(*f)), zmq::send_flags::none);
  }
  CHECK(WaitFor([&] { return Metric(standby, "apollo11_replication_refused_total") >= 3; }, 5000));
  CHECK(PositionOf(dir.path() + "/standby").batch == 0);
  // A genuine batch from epoch 5 applies; one from epoch 4 then is refused.
  fake.send(zmq::buffer(id.to_string()), zmq::send_flags::sndmore);
  fake.send(zmq::buffer(rep::EncodeFrame(good)), zmq::send_flags::none);
  REQUIRE(WaitFor([&] { return PositionOf(dir.path() + "/standby").batch == 1; }, 5000));
  old.epoch = 4;
  old.batch = 2;
  old.seq = 2;
  fake.send(zmq::buffer(id.to_string()), zmq::send_flags::sndmore);
  fake.send(zmq::buffer(rep::EncodeFrame(old)), zmq::send_flags::none);
  CHECK(WaitFor([&] { return Metric(standby, "apollo11_replication_refused_total") >= 4; }, 5000));
  CHECK(PositionOf(dir.path() + "/standby").batch == 1);
}

TEST_CASE("with CURVE the replication link admits only the coordinators' key pair",
          "[cluster][replication][security]") {
  ScratchDir dir;
  const std::string d = dir.path();
  for (const char* who : {"coord", "w1"}) {
    REQUIRE(Run({Apollo11(), "keygen", d + "/" + who}).exit_code == 0);
  }
  dir.Write("authorized", "# workers\n" + dir.Read("w1.pub"));
  const std::vector<std::string> keys = {"--curve-key", d + "/coord.key", "--authorized-keys",
                                         d + "/authorized"};
  NodeProc leader = StartLeader(dir, "leader", keys);
  Nodes guard{{&leader}};
  const std::string endpoint = leader.listening["replication"];
  // A worker's key pair (admitted on the worker port), and no keys at all,
  // each saying hello as the admitted standby name: neither hears back.
  auto w1 = apollo11::transport::LoadKeyPair(d + "/w1.key");
  auto coord_pub = apollo11::transport::LoadPublicKey(d + "/coord.pub");
  REQUIRE(w1.ok());
  REQUIRE(coord_pub.ok());
  rep::ReplicationFrame hello;
  hello.type = rep::FrameType::kHello;
  hello.sender = "s1";
  hello.credit = 8;
  zmq::context_t ctx;
  zmq::socket_t thief(ctx, zmq::socket_type::dealer), plain(ctx, zmq::socket_type::dealer);
  REQUIRE(apollo11::transport::ConfigureCurveClient(thief, *w1, *coord_pub).ok());
  for (zmq::socket_t* s : {&thief, &plain}) {
    s->set(zmq::sockopt::routing_id, "s1");
    s->set(zmq::sockopt::linger, 0);
    s->set(zmq::sockopt::rcvtimeo, 1500);
    s->connect(endpoint);
    s->send(zmq::buffer(rep::EncodeFrame(hello)), zmq::send_flags::dontwait);
  }
  // (The CLI is a client of a CURVE coordinator: the coordinator's own key
  // is admitted with the admin role.)
  const std::string file = dir.Write("p.yaml", LayeredDag(10, 5, "noop", 1));
  CmdResult submitted = Cli(leader, {"submit", file, "--wait", "--key", d + "/coord.key",
                                     "--server-key", d + "/coord.pub"});
  INFO(submitted.err);
  REQUIRE(submitted.exit_code == 0);
  zmq::message_t got;
  CHECK_FALSE(thief.recv(got));
  CHECK_FALSE(plain.recv(got));
  // The genuine standby, with the coordinators' pair, follows.
  NodeProc standby = StartStandby(dir, endpoint, "standby", keys);
  guard.all.push_back(&standby);
  REQUIRE(WaitFor([&] { return CaughtUp(dir); }, 10000));
  CheckSameHistories(dir);
  CHECK(dir.Read("leader.err").find("zap: refused CURVE client") != std::string::npos);
}

TEST_CASE(
    "an HA coordinator whose --replication-bind is taken refuses to start, before it campaigns",
    "[cluster][replication][ha]") {
  // Once elected it would bind the endpoint, fail and leave the cluster
  // leaderless while it holds the lease; at startup the operator can fix it.
  ScratchDir dir;
  zmq::context_t ctx;
  zmq::socket_t holder(ctx, zmq::socket_type::router);
  holder.set(zmq::sockopt::linger, 0);
  holder.bind("tcp://127.0.0.1:*");
  const std::string taken = holder.get(zmq::sockopt::last_endpoint);
  // No etcd is needed: the node must stop before it talks to one.
  pid_t pid = SpawnNamed({Node(),
                          "start",
                          "--role",
                          "coordinator",
                          "--state-dir",
                          dir.path() + "/c1",
                          "--bind",
                          "tcp://127.0.0.1:0",
                          "--api-bind",
                          "tcp://127.0.0.1:0",
                          "--ha-advertise",
                          "tcp://127.0.0.1:1,tcp://127.0.0.1:2," + taken,
                          "--http-bind",
                          "off",
                          "--ha-etcd",
                          "http://127.0.0.1:1",
                          "--ha-name",
                          "c1",
                          "--replication-bind",
                          taken,
                          "--insecure",
                          "--replication-name",
                          "c1"},
                         dir.path(), "c1");
  const int code = WaitExit(pid, 10000);
  const std::string err = dir.Read("c1.err");
  INFO(err);
  CHECK(code > 0);
  CHECK(err.find("--replication-bind " + taken + " cannot be bound") != std::string::npos);
}

TEST_CASE(
    "an HA coordinator without --replication-bind refuses to start unless "
    "--ha-without-replication (a flag or a config key) accepts what a failover loses",
    "[cluster][replication][ha]") {
  // Issue 36: HA without replication used to start with a warning, and a
  // run accepted by the leader was unknown to the standby that took over.
  ScratchDir dir;
  const std::vector<std::string> ha = {Node(),           "start",
                                       "--role",         "coordinator",
                                       "--state-dir",    dir.path() + "/c1",
                                       "--bind",         "tcp://127.0.0.1:0",
                                       "--api-bind",     "tcp://127.0.0.1:0",
                                       "--http-bind",    "off",
                                       "--ha-advertise", "tcp://127.0.0.1:1,tcp://127.0.0.1:2",
                                       "--ha-etcd",      "http://127.0.0.1:1",
                                       "--ha-name",      "c1"};
  CmdResult refused = Run(ha);
  INFO(refused.err);
  CHECK(refused.exit_code == 2);
  CHECK(refused.err.find("--ha-etcd without --replication-bind") != std::string::npos);
  CHECK(refused.err.find("would know only the runs in its own journal") != std::string::npos);
  CHECK(refused.err.find("--ha-without-replication") != std::string::npos);
  CHECK_FALSE(dir.Exists("c1/journal"));  // refused before anything was opened

  // The opt-out as a config key: the node starts, and says what it costs.
  const std::string config = dir.Write("node.yaml", "ha-without-replication: true\n");
  // (StartNode gives the state dir c1 and an HTTP port of its own.)
  std::vector<std::string> args;
  for (size_t i = 2; i < ha.size(); i += 2) {
    if (ha[i] == "--state-dir" || ha[i] == "--http-bind") continue;
    args.insert(args.end(), {ha[i], ha[i + 1]});
  }
  args.insert(args.end(), {"--config", config});
  NodeProc c1 = StartNode(dir, "c1", args);
  Nodes guard{{&c1}};
  REQUIRE(WaitFor(
      [&] {
        return dir.Read("c1.err").find("HA without replication (--ha-without-replication)") !=
               std::string::npos;
      },
      5000));
}
