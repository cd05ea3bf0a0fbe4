// Workers and the CLI following the leader among several coordinators (HA,
// issue 14), as separate processes, without etcd: one coordinator started
// normally and a stand-in standby in this process that answers every worker
// HELLO and every client request with "not the leader; the leader is X";
// then a coordinator killed -9 whose journal another coordinator process
// takes over (what a standby with the replicated journal does on failover).

#include <signal.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <thread>
#include <zmq.hpp>

#include "actors/client_protocol.h"
#include "actors/internal_messages.h"
#include "ha/not_leader.h"
#include "tests/actors/cli_harness.h"
#include "tests/actors/cluster_harness.h"
#include "transport/codec.h"
#include "transport/coordinator_endpoints.h"
#include "transport/messages.h"
#include "transport/protocol_mismatch.h"

using namespace apollo11::testing;  // NOLINT: test file
namespace actors = apollo11::actors;
namespace transport = apollo11::transport;
namespace ha = apollo11::ha;

namespace {

constexpr uint8_t kNotLeader = static_cast<uint8_t>(apollo11::StatusCode::kNotLeader);

// A coordinator that is not the leader, as a worker and a client see it: it
// refuses each worker frame with REFUSED and each client request with an
// error reply, both naming the leader's endpoints. Counts what it refused.
class StandInStandby {
 public:
  StandInStandby(std::string leader_workers, std::string leader_api)
      : workers_(ctx_, zmq::socket_type::router), clients_(ctx_, zmq::socket_type::router) {
    for (zmq::socket_t* s : {&workers_, &clients_}) {
      s->set(zmq::sockopt::linger, 0);
      s->bind("tcp://127.0.0.1:0");
    }
    thread_ = std::jthread([this, w = std::move(leader_workers), a = std::move(leader_api)](
                               std::stop_token stop) { Serve(stop, w, a); });
  }
  std::string workers() const { return workers_.get(zmq::sockopt::last_endpoint); }
  std::string api() const { return clients_.get(zmq::sockopt::last_endpoint); }
  int refused_workers() const { return refused_workers_; }
  int refused_clients() const { return refused_clients_; }

 private:
  void Serve(std::stop_token stop, const std::string& leader_workers,
             const std::string& leader_api) {
    zmq::pollitem_t items[] = {{workers_.handle(), 0, ZMQ_POLLIN, 0},
                               {clients_.handle(), 0, ZMQ_POLLIN, 0}};
    while (!stop.stop_requested()) {
      zmq::poll(items, 2, std::chrono::milliseconds(50));
      zmq::message_t id, body;
      if ((items[0].revents & ZMQ_POLLIN) && workers_.recv(id) && workers_.recv(body)) {
        std::string frame = transport::EncodeToString(
            transport::MsgType::kRefused, transport::Refused{ha::NotLeaderReply(leader_workers)});
        workers_.send(id, zmq::send_flags::sndmore);
        workers_.send(zmq::buffer(frame));
        ++refused_workers_;
      }
      if ((items[1].revents & ZMQ_POLLIN) && clients_.recv(id) && clients_.recv(body)) {
        auto env = transport::DecodeEnvelope(body.data(), body.size(), actors::ClientLimits());
        if (!env.ok()) continue;
        std::string frame;
        const std::string error = ha::NotLeaderReply(leader_api);
        if (env->type == static_cast<uint16_t>(actors::ClientType::kSubmitRun) ||
            env->type == static_cast<uint16_t>(actors::ClientType::kRerunRun)) {
          actors::SubmitReply reply{kNotLeader, error, ""};
          transport::Encode(static_cast<uint16_t>(actors::ClientType::kSubmitReply), reply, &frame);
        } else {
          actors::QueryReply reply;
          reply.code = kNotLeader;
          reply.error = error;
          transport::Encode(static_cast<uint16_t>(actors::ClientType::kQueryReply), reply, &frame);
        }
        clients_.send(id, zmq::send_flags::sndmore);
        clients_.send(zmq::buffer(frame));
        ++refused_clients_;
      }
    }
  }

  zmq::context_t ctx_;
  zmq::socket_t workers_, clients_;
  std::atomic<int> refused_workers_{0}, refused_clients_{0};
  std::jthread thread_;  // last: stopped and joined before the sockets close
};

// A coordinator as a client sees it that answers every query with `json`
// (whatever it asks), on its own thread.
class StandInAnswers {
 public:
  explicit StandInAnswers(std::string json) : clients_(ctx_, zmq::socket_type::router) {
    clients_.set(zmq::sockopt::linger, 0);
    clients_.bind("tcp://127.0.0.1:0");
    thread_ = std::jthread([this, j = std::move(json)](std::stop_token stop) { Serve(stop, j); });
  }
  std::string api() const { return clients_.get(zmq::sockopt::last_endpoint); }
  int answered() const { return answered_; }

 private:
  void Serve(std::stop_token stop, const std::string& json) {
    zmq::pollitem_t items[] = {{clients_.handle(), 0, ZMQ_POLLIN, 0}};
    while (!stop.stop_requested()) {
      zmq::poll(items, 1, std::chrono::milliseconds(50));
      zmq::message_t id, body;
      if (!(items[0].revents & ZMQ_POLLIN) || !clients_.recv(id) || !clients_.recv(body)) {
        continue;
      }
      actors::QueryReply reply;
      reply.json = json;
      std::string frame;
      transport::Encode(static_cast<uint16_t>(actors::ClientType::kQueryReply), reply, &frame);
      clients_.send(id, zmq::send_flags::sndmore);
      clients_.send(zmq::buffer(frame));
      ++answered_;
    }
  }

  zmq::context_t ctx_;
  zmq::socket_t clients_;
  std::atomic<int> answered_{0};
  std::jthread thread_;  // last: stopped and joined before the socket closes
};

using SteadyClock = std::chrono::steady_clock;

int64_t MillisSince(SteadyClock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - t).count();
}

// A stand-in for "the coordinators" in Cli(): a list as --coordinator.
NodeProc Set(const std::string& api_list) {
  NodeProc set;
  set.listening["api"] = api_list;
  return set;
}

int LedgerLines(const ScratchDir& dir, const std::string& needle) {
  const std::string ledger = dir.Read("ledger");
  int n = 0;
  for (size_t at = ledger.find(needle); at != std::string::npos; at = ledger.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

}  // namespace

TEST_CASE("a worker and the CLI given a standby first follow it to the leader it names",
          "[cluster][follow]") {
  ScratchDir dir;
  NodeProc leader = StartCoordinator(dir);
  StandInStandby standby(leader.listening["workers"].get<std::string>(),
                         leader.listening["api"].get<std::string>());
  NodeProc w1 = StartWorkerAt(
      dir, standby.workers() + "," + leader.listening["workers"].get<std::string>(), "w1", 2);
  Nodes guard{{&leader, &w1}};
  REQUIRE(WaitFor([&] { return WorkerCount(leader) == 1; }, 5000));
  CHECK(standby.refused_workers() >= 1);
  // Told by the standby's refusal, or by the leader's answer to its WATCH
  // (sent with its first HELLO), whichever came first.
  const std::string log = dir.Read("w1.err");
  CHECK((log.find("coordinator_not_leader") != std::string::npos ||
         log.find("leads a newer term") != std::string::npos));

  const std::string file = dir.Write("dag.yaml", LayeredDag(20, 4, "noop", 2));
  const NodeProc both = Set(standby.api() + "," + leader.listening["api"].get<std::string>());
  CmdResult r = Cli(both, {"submit", file, "--wait", "--json"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  CHECK(ParseJson(r.out.substr(r.out.find('{')))["state"] == "SUCCESS");
  CHECK(standby.refused_clients() >= 1);
  CHECK(Cli(both, {"runs", "--json"}).exit_code == 0);
}

TEST_CASE("malformed coordinator lists are refused before anything starts", "[cluster][follow]") {
  ScratchDir dir;
  CmdResult node = Run({Node(), "start", "--role", "worker", "--state-dir", dir.path() + "/w",
                        "--connect", "tcp://127.0.0.1:1,,tcp://127.0.0.1:2"});
  CHECK(node.exit_code == 2);
  CHECK(node.err.find("--connect") != std::string::npos);
  CmdResult cli = Run({Apollo11(), "runs", "--coordinator", "tcp://127.0.0.1:1,127.0.0.1:2"});
  CHECK(cli.exit_code == 2);
  CHECK(cli.err.find("did you mean 'tcp://127.0.0.1:2'") != std::string::npos);
}

TEST_CASE(
    "a worker whose leader is killed -9 follows the coordinator that takes over its "
    "journal, and the run ends with nothing run twice",
    "[cluster][follow]") {
  ScratchDir dir;
  const std::string a_bind = "tcp://127.0.0.1:" + std::to_string(FreeTcpPort());
  const std::string b_bind = "tcp://127.0.0.1:" + std::to_string(FreeTcpPort());
  const std::string a_api = "tcp://127.0.0.1:" + std::to_string(FreeTcpPort());
  const std::string b_api = "tcp://127.0.0.1:" + std::to_string(FreeTcpPort());
  NodeProc a = StartCoordinator(dir, a_bind, a_api, "coordA", "coord");
  NodeProc w1 = StartWorkerAt(dir, a_bind + "," + b_bind, "w1", 2);
  NodeProc b;
  Nodes guard{{&a, &w1, &b}};
  REQUIRE(WaitFor([&] { return WorkerCount(a) == 1; }, 5000));
  const std::string ledger = dir.path() + "/ledger";
  const std::string file = dir.Write("ledger.yaml", R"(version: "1.0"
name: test.follow
pipeline:
  - id: slow
    type: shell
    command: "sleep 1; echo $APOLLO11_TASK_ID.$APOLLO11_ATTEMPT >> )" +
                                                        ledger + R"("
  - id: after
    type: shell
    depends_on: [slow]
    command: "echo $APOLLO11_TASK_ID.$APOLLO11_ATTEMPT >> )" +
                                                        ledger + R"("
)");
  CmdResult sub = Cli(a, {"submit", file});
  REQUIRE(sub.exit_code == 0);
  const std::string run_id = sub.out.substr(0, sub.out.find('\n'));
  REQUIRE(WaitFor(
      [&] {
        auto s = ParseJson(Cli(a, {"status", run_id, "--json"}).out);
        return s.is_object() && s["tasks"]["slow"]["state"] == "RUNNING";
      },
      5000));
  ::kill(a.pid, SIGKILL);
  WaitExit(a.pid, 5000);
  a.pid = -1;
  // The task ends while no coordinator is up: its result waits in the worker.
  REQUIRE(WaitFor([&] { return LedgerLines(dir, "slow.1") == 1; }, 5000));
  b = StartCoordinator(dir, b_bind, b_api, "coordB", "coord");
  // The CLI, given both, passes over the dead one.
  const NodeProc both = Set(a_api + "," + b_api);
  CmdResult done = Cli(both, {"status", run_id, "--wait", "--json"});
  INFO(done.err);
  INFO(dir.Read("w1.err"));
  REQUIRE(done.exit_code == 0);
  auto status = ParseJson(done.out);
  CHECK(status["state"] == "SUCCESS");
  CHECK(status["tasks"]["slow"]["attempts"] == 1);
  CHECK(LedgerLines(dir, "slow.") == 1);
  CHECK(LedgerLines(dir, "after.1") == 1);
  CHECK(dir.Read("w1.err").find("coordinator_silent") != std::string::npos);
}

TEST_CASE("submit and rerun given a single standby endpoint are followed to the leader it names",
          "[cluster][follow]") {
  // Issue 36: a lone standby endpoint was refused (exit 3) instead of followed.
  ScratchDir dir;
  NodeProc leader = StartCoordinator(dir);
  NodeProc w1 = StartWorker(dir, leader, "w1", 2);
  Nodes guard{{&leader, &w1}};
  StandInStandby standby(leader.listening["workers"].get<std::string>(),
                         leader.listening["api"].get<std::string>());
  const NodeProc only_standby = Set(standby.api());
  const std::string file = dir.Write("dag.yaml", LayeredDag(6, 3, "noop", 5));
  CmdResult sub = Cli(only_standby, {"submit", file, "--wait"});
  INFO(sub.err);
  REQUIRE(sub.exit_code == 0);
  const std::string run_id = sub.out.substr(0, sub.out.find('\n'));
  const int refused = standby.refused_clients();
  CHECK(refused >= 1);  // the submission (and --wait's first status) went there first
  // The leader has it.
  CHECK(ParseJson(Cli(leader, {"status", run_id, "--json"}).out)["state"] == "SUCCESS");
  CmdResult rerun = Cli(only_standby, {"rerun", run_id, "--from", "t0"});
  INFO(rerun.err);
  REQUIRE(rerun.exit_code == 0);
  const std::string rerun_id = rerun.out.substr(0, rerun.out.find('\n'));
  CHECK(rerun_id != run_id);
  CHECK(standby.refused_clients() == refused + 1);
  CHECK(Cli(leader, {"status", rerun_id, "--json"}).exit_code == 0);  // known to the leader
}

TEST_CASE("a dead coordinator first in the list costs the CLI no second", "[cluster][follow]") {
  ScratchDir dir;
  NodeProc leader = StartCoordinator(dir);
  Nodes guard{{&leader}};
  const std::string dead = "tcp://127.0.0.1:" + std::to_string(FreeTcpPort());
  const NodeProc both = Set(dead + "," + leader.listening["api"].get<std::string>());
  REQUIRE(Cli(leader, {"runs"}).exit_code == 0);  // warm: the binary's pages are cached
  auto began = SteadyClock::now();
  REQUIRE(Cli(leader, {"runs", "--json"}).exit_code == 0);
  const int64_t alone = MillisSince(began);
  began = SteadyClock::now();
  CmdResult runs = Cli(both, {"runs", "--json"});
  const int64_t took = MillisSince(began);
  INFO(runs.err);
  INFO("the leader alone: " << alone << " ms; after a dead one: " << took << " ms");
  REQUIRE(runs.exit_code == 0);
  // Nothing listens there: passed over at the first refused connection,
  // not after a one-second connection window (issue 36).
  CHECK(took < alone + 500);
}

TEST_CASE(
    "a coordinator that stops answering mid-request (SIGSTOP) costs status --wait about a "
    "second before it asks the next one",
    "[cluster][follow]") {
  ScratchDir dir;
  NodeProc a = StartCoordinator(dir);
  NodeProc w1 = StartWorker(dir, a, "w1", 1);
  Nodes guard{{&a, &w1}};
  const std::string file = dir.Write("slow.yaml", R"(version: "1.0"
name: test.paused
pipeline:
  - id: slow
    type: shell
    command: "sleep 30"
)");
  CmdResult sub = Cli(a, {"submit", file});
  REQUIRE(sub.exit_code == 0);
  const std::string run_id = sub.out.substr(0, sub.out.find('\n'));
  REQUIRE(WaitFor(
      [&] {
        return ParseJson(Cli(a, {"status", run_id, "--json"}).out)["state"] == "RUNNING";
      },
      5000));
  // The other coordinator of the list, as a standby with the replicated
  // journal would answer once the run ended there.
  StandInAnswers b(R"({"run_id":")" + run_id + R"(","state":"SUCCESS","tasks":{}})");
  const std::string list = a.listening["api"].get<std::string>() + "," + b.api();
  const pid_t cli =
      Spawn({Apollo11(), "status", run_id, "--wait", "--json", "--coordinator", list}, dir.path());
  // It polls A (the run is RUNNING there) until A stops answering.
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  REQUIRE(Alive(cli));
  CHECK(b.answered() == 0);
  ::kill(a.pid, SIGSTOP);
  const auto stopped = SteadyClock::now();
  const int code = WaitExit(cli, 15000);
  const int64_t took = MillisSince(stopped);
  ::kill(a.pid, SIGCONT);
  CHECK(code == 0);
  CHECK(b.answered() >= 1);
  // libzmq's PINGs close the silent connection within about a second;
  // before, the CLI waited out its whole 10 s timeout.
  CHECK(took < 2500);
}

TEST_CASE(
    "a worker of another protocol version is refused in its own version, naming both, and a "
    "worker so refused logs it once and keeps saying HELLO",
    "[cluster][follow][protocol]") {
  // Issue 36: such a worker logged every frame as malformed, then asked
  // whether a coordinator was running there; it never learned why.
  ScratchDir dir;
  NodeProc coord = StartCoordinator(dir);
  Nodes guard{{&coord}};
  const uint32_t older = transport::kProtocolVersion - 1;
  zmq::context_t ctx;
  zmq::socket_t old_worker(ctx, zmq::socket_type::dealer);
  old_worker.set(zmq::sockopt::linger, 0);
  old_worker.set(zmq::sockopt::routing_id, "w-old");
  old_worker.set(zmq::sockopt::rcvtimeo, 5000);
  old_worker.connect(coord.listening["workers"].get<std::string>());
  transport::Hello hello;
  hello.slots = 1;
  std::string frame;
  transport::EncodeAs(older, transport::ToWire(transport::MsgType::kHello), hello, &frame);
  old_worker.send(zmq::buffer(frame), zmq::send_flags::none);
  zmq::message_t answer;
  REQUIRE(old_worker.recv(answer));
  transport::Envelope env;
  (void)transport::DecodeEnvelopeInto(answer.data(), answer.size(), &env);
  CHECK(env.version == older);
  REQUIRE(env.type == transport::ToWire(transport::MsgType::kRefused));
  auto refused = transport::BodyAs<transport::Refused>(env);
  REQUIRE(refused.ok());
  INFO(refused->reason);
  CHECK(refused->reason.find("worker protocol " + std::to_string(transport::kProtocolVersion) +
                             ", the worker " + std::to_string(older)) != std::string::npos);
  CHECK(refused->reason.find("upgrades the workers first") != std::string::npos);

  // A newer coordinator, as this build's worker meets it: it refuses each
  // frame in the worker's version and sends heartbeats in its own.
  const uint32_t newer = transport::kProtocolVersion + 1;
  const std::string reason = "protocol version mismatch: this coordinator speaks worker protocol " +
                             std::to_string(newer) + ", the worker " +
                             std::to_string(transport::kProtocolVersion) +
                             ": start the worker on the coordinator's release";
  zmq::socket_t newer_coord(ctx, zmq::socket_type::router);
  newer_coord.set(zmq::sockopt::linger, 0);
  newer_coord.bind("tcp://127.0.0.1:0");
  const std::string at = newer_coord.get(zmq::sockopt::last_endpoint);
  NodeProc w1 = StartWorkerAt(dir, at, "w1", 1);
  guard.all.push_back(&w1);
  std::string heartbeat;
  transport::EncodeAs(newer, transport::ToWire(transport::MsgType::kHeartbeat),
                      transport::Heartbeat{}, &heartbeat);
  const std::string refusal = transport::EncodeRefusedAs(transport::kProtocolVersion, reason);
  int hellos = 0;
  zmq::pollitem_t items[] = {{newer_coord.handle(), 0, ZMQ_POLLIN, 0}};
  for (auto until = SteadyClock::now() + std::chrono::seconds(2); SteadyClock::now() < until;) {
    zmq::poll(items, 1, std::chrono::milliseconds(50));
    zmq::message_t id, body;
    if (!(items[0].revents & ZMQ_POLLIN) || !newer_coord.recv(id) || !newer_coord.recv(body)) {
      continue;
    }
    auto got = transport::DecodeEnvelope(body.data(), body.size());
    if (got.ok() && got->type == transport::ToWire(transport::MsgType::kHello)) ++hellos;
    for (const std::string* out : {&refusal, static_cast<const std::string*>(&heartbeat)}) {
      newer_coord.send(zmq::buffer(id.data(), id.size()), zmq::send_flags::sndmore);
      newer_coord.send(zmq::buffer(*out));
    }
  }
  const std::string log = dir.Read("w1.err");
  INFO(log);
  CHECK(Alive(w1.pid));  // not a reason to stop
  CHECK(hellos >= 5);    // HELLO every heartbeat (100 ms), quietly
  auto count = [&log](const std::string& what) {
    int n = 0;
    for (size_t i = log.find(what); i != std::string::npos; i = log.find(what, i + 1)) ++n;
    return n;
  };
  CHECK(count("speaks another protocol version") == 1);
  CHECK(count("worker protocol " + std::to_string(newer)) >= 1);  // the reason, in that line
  CHECK(count("malformed") == 0);
  CHECK(count("is a coordinator running there") == 0);
}
