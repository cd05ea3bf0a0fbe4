// Authentication and identity against real nodes on loopback: who may
// report a result, who may call itself a worker, which key may do what. A
// rogue peer here is a raw DEALER speaking the worker protocol.

#include <httplib.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>
#include <zmq.hpp>

#include "tests/actors/cli_harness.h"
#include "tests/actors/cluster_harness.h"
#include "transport/codec.h"
#include "transport/messages.h"

using namespace apollo11::testing;  // NOLINT: test file
namespace transport = apollo11::transport;

namespace {

// A DEALER on the coordinator's worker port that speaks the worker protocol
// by hand.
class RoguePeer {
 public:
  RoguePeer(const std::string& endpoint, const std::string& identity)
      : socket_(ctx_, zmq::socket_type::dealer) {
    socket_.set(zmq::sockopt::linger, 0);
    socket_.set(zmq::sockopt::routing_id, identity);
    socket_.connect(endpoint);
  }
  template <class T>
  void Send(transport::MsgType type, const T& body) {
    std::string frame = transport::EncodeToString(type, body);
    socket_.send(zmq::buffer(frame), zmq::send_flags::none);
  }
  void Hello(uint32_t slots) {
    transport::Hello hello;
    hello.slots = slots;
    Send(transport::MsgType::kHello, hello);
  }
  // A forged SUCCESS for (exec_id, attempt).
  void ForgeResult(const std::string& exec_id, uint32_t attempt) {
    transport::ResultMsg r;
    r.exec_id = exec_id;
    r.attempt = attempt;
    r.outcome = static_cast<uint8_t>(transport::Outcome::kSuccess);
    r.output = "forged\n";
    Send(transport::MsgType::kResult, r);
    transport::Started s{exec_id, attempt, 1};
    Send(transport::MsgType::kStarted, s);
  }

 private:
  zmq::context_t ctx_;
  zmq::socket_t socket_;
};

// The node's /metrics text ("" when it does not answer).
std::string Metrics(const NodeProc& node) {
  const std::string addr = node.listening["http"].get<std::string>();
  httplib::Client http(addr.substr(0, addr.rfind(':')),
                       std::stoi(addr.substr(addr.rfind(':') + 1)));
  auto res = http.Get("/metrics");
  return res ? res->body : "";
}

std::string TaskState(const NodeProc& coord, const std::string& run_id, const std::string& task) {
  auto doc = ParseJson(Cli(coord, {"status", run_id, "--json"}).out);
  if (!doc.is_object() || !doc["tasks"].contains(task)) return "";
  return doc["tasks"][task].value("state", "");
}

// A pipeline whose task `a` runs for a while on the real worker and prints
// "real"; `b` writes what it received from `a` to DIR/b.out.
std::string SlowPipeline(const ScratchDir& dir) {
  return dir.Write("slow.yaml",
                   "version: \"1.0\"\nname: test.forge\npipeline:\n"
                   "  - id: a\n    type: shell\n    command: \"sleep 2; echo real\"\n"
                   "  - id: b\n    type: shell\n    depends_on: [a]\n"
                   "    command: \"printf '%s' \\\"$APOLLO11_OUTPUT_A\\\" > " +
                       dir.path() + "/b.out\"\n");
}

}  // namespace

TEST_CASE("a RESULT forged by a peer that is not the execution's worker changes nothing",
          "[cluster][security]") {
  ScratchDir dir;
  NodeProc coord = StartCoordinator(dir);
  NodeProc w1 = StartWorker(dir, coord, "w1", 1);
  Nodes guard{{&coord, &w1}};
  REQUIRE(WaitFor([&] { return WorkerCount(coord) == 1; }, 5000));
  CmdResult submitted = Cli(coord, {"submit", SlowPipeline(dir)});
  REQUIRE(submitted.exit_code == 0);
  const std::string run_id = submitted.out.substr(0, submitted.out.find('\n'));
  REQUIRE(!run_id.empty());
  REQUIRE(WaitFor([&] { return TaskState(coord, run_id, "a") == "RUNNING"; }, 5000));

  const std::string endpoint = coord.listening["workers"].get<std::string>();
  // A peer that never said HELLO, and one registered as a second worker.
  RoguePeer stranger(endpoint, "stranger");
  RoguePeer second(endpoint, "w2");
  second.Hello(1);
  REQUIRE(WaitFor([&] { return WorkerCount(coord) == 2; }, 5000));
  for (int i = 0; i < 3; ++i) {
    stranger.ForgeResult(run_id + ".a", 1);
    second.ForgeResult(run_id + ".a", 1);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(TaskState(coord, run_id, "a") == "RUNNING");
  CHECK_FALSE(dir.Exists("b.out"));  // nothing downstream started early

  auto done = ParseJson(Cli(coord, {"status", run_id, "--wait", "--json"}).out);
  CHECK(done.value("state", "") == "SUCCESS");
  CHECK(done["tasks"]["a"].value("worker", "") == "w1");
  CHECK(dir.Read("b.out") == "real\n");
  const std::string log = dir.Read("coord.err");
  CHECK(log.find("refused") != std::string::npos);
  // Counted by reason on /metrics.
  const std::string metrics = Metrics(coord);
  CHECK(metrics.find("apollo11_worker_frames_refused_total{reason=\"unregistered\"}") !=
        std::string::npos);
  CHECK(metrics.find("apollo11_worker_frames_refused_total{reason=\"not_holder\"}") !=
        std::string::npos);
}
