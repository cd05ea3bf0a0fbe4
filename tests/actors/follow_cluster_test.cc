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
        if (env->type == static_cast<uint16_t>(actors::ClientType::kSubmitRun)) {
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
  CHECK(dir.Read("w1.err").find("coordinator_not_leader") != std::string::npos);

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
