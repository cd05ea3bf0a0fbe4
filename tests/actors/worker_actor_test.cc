// The worker actor over a real socket, against a stand-in coordinator (a
// ROUTER driven by the test): what travels back for a DISPATCH the worker
// must refuse.

#include "actors/worker_actor.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <zmq.hpp>

#include "common/clock.h"
#include "tests/actors/cli_harness.h"
#include "transport/codec.h"
#include "transport/messages.h"

using namespace apollo11;          // NOLINT: test file
using namespace apollo11::actors;  // NOLINT: test file
using std::chrono::milliseconds;

namespace {

// A coordinator's worker socket: receives the worker's frames and answers the
// worker that sent the last one.
class StandInCoordinator {
 public:
  explicit StandInCoordinator(zmq::context_t& ctx) : router_(ctx, zmq::socket_type::router) {
    router_.set(zmq::sockopt::linger, 0);
    router_.bind("tcp://127.0.0.1:0");
  }
  std::string endpoint() const { return router_.get(zmq::sockopt::last_endpoint); }

  // The next frame of `type` from a worker, passing over the others;
  // nullopt when none comes within `limit`.
  std::optional<transport::Envelope> Await(transport::MsgType type, milliseconds limit) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < until) {
      zmq::pollitem_t item{router_.handle(), 0, ZMQ_POLLIN, 0};
      zmq::poll(&item, 1, milliseconds(50));
      if ((item.revents & ZMQ_POLLIN) == 0) continue;
      zmq::message_t id, body;
      if (!router_.recv(id) || !router_.recv(body)) continue;
      identity_ = id.to_string();
      auto env = transport::DecodeEnvelope(body.data(), body.size());
      if (env.ok() && env->type == transport::ToWire(type)) return std::move(*env);
    }
    return std::nullopt;
  }

  void Send(transport::MsgType type, const auto& body) {
    const std::string frame = transport::EncodeToString(type, body);
    router_.send(zmq::buffer(identity_), zmq::send_flags::sndmore);
    router_.send(zmq::buffer(frame));
  }

 private:
  zmq::socket_t router_;
  std::string identity_;
};

}  // namespace

TEST_CASE("a DISPATCH of an unknown task type comes back over the socket as a FAILED result",
          "[worker][socket]") {
  testing::ScratchDir dir;
  zmq::context_t ctx;
  StandInCoordinator coordinator(ctx);
  SystemClock clock;
  WorkerConfig config;
  config.coordinator_endpoint = coordinator.endpoint();
  config.worker.worker_id = "w1";
  config.worker.slots = 1;
  config.executor.log_dir = dir.path() + "/logs";
  config.executor.containment = executor::ContainmentMode::kProcessTree;
  auto worker = WorkerActor::Start(ctx, &clock, config);
  REQUIRE(worker.ok());
  REQUIRE(coordinator.Await(transport::MsgType::kHello, milliseconds(5000)).has_value());

  transport::Dispatch d;
  d.exec_id = "r.future";
  d.attempt = 1;
  d.epoch = 1;
  d.task.type = 9;  // a newer coordinator's type
  d.task.command = "touch " + dir.path() + "/ran";
  coordinator.Send(transport::MsgType::kDispatch, d);
  auto env = coordinator.Await(transport::MsgType::kResult, milliseconds(5000));
  REQUIRE(env.has_value());
  auto result = transport::BodyAs<transport::ResultMsg>(*env);
  REQUIRE(result.ok());
  CHECK(result->exec_id == "r.future");
  CHECK(result->attempt == 1);
  CHECK(result->outcome == static_cast<uint8_t>(transport::Outcome::kRejected));  // FAILED
  CHECK_FALSE(result->retryable);
  CHECK(
      result->error ==
      "unknown task type 9 (this worker knows shell, python, http, db, noop): upgrade the worker");
  (*worker)->Stop();
  CHECK_FALSE((*worker)->failure().has_value());
  CHECK_FALSE(std::filesystem::exists(dir.path() + "/ran"));
}
