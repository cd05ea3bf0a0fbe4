// RemoteCoordinator when the coordinator's connection closes between a
// request and its answer (a coordinator that restarts, or restarts its
// actors on an HA role change, loses the requests it had not answered).
// The coordinator here is a real ROUTER on loopback TCP that reads a request,
// closes without answering, and binds the same port again.
//
// A query is sent again on a fresh connection and answered; a submission is
// reported at once as possibly taken and never sent twice; a cancel, which
// is idempotent, is sent again; a connection that closed while the client
// was idle fails nothing.

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>
#include <zmq.hpp>

#include "actors/client_protocol.h"
#include "actors/internal_messages.h"
#include "cli/remote.h"
#include "transport/codec.h"
#include "transport/sockets.h"

namespace apollo11 {
namespace {

using actors::ClientType;
using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

// A fake coordinator's client endpoint: one ROUTER that can be closed and
// bound again on the same port.
class FlakyCoordinator {
 public:
  FlakyCoordinator() {
    Open("tcp://127.0.0.1:0");
    auto bound = socket_->get(zmq::sockopt::last_endpoint);
    endpoint_ = bound;
  }
  const std::string& endpoint() const { return endpoint_; }

  // The next request within `wait` (type and sender), or nullopt.
  struct Request {
    uint16_t type = 0;
    std::string identity;
    transport::Envelope env;
  };
  std::optional<Request> Next(milliseconds wait) {
    zmq::pollitem_t items[] = {{socket_->handle(), 0, ZMQ_POLLIN, 0}};
    auto polled = transport::Poll(items, wait);
    if (!polled.ok() || *polled == 0) return std::nullopt;
    auto msg = transport::RecvFrom(*socket_, /*dontwait=*/true);
    if (!msg.ok()) return std::nullopt;
    Request r;
    r.identity = msg->identity;
    auto env = transport::DecodeEnvelope(static_cast<const char*>(msg->payload.data()),
                                         msg->payload.size(), actors::ClientLimits());
    REQUIRE(env.ok());
    r.type = env->type;
    r.env = std::move(*env);
    return r;
  }

  template <typename T>
  void Reply(const Request& to, ClientType type, const T& body) {
    std::string frame;
    transport::Encode(static_cast<uint16_t>(type), body, &frame);
    REQUIRE(transport::SendTo(*socket_, to.identity, frame).ok());
  }

  // Closes the socket (what it had not answered is lost) and binds the
  // same endpoint again, as a restarted coordinator does.
  void Restart() {
    socket_->close();
    const auto until = Clock::now() + std::chrono::seconds(5);
    for (;;) {
      try {
        Open(endpoint_);
        return;
      } catch (const zmq::error_t&) {
        REQUIRE(Clock::now() < until);  // the port comes free once closed
        std::this_thread::sleep_for(milliseconds(10));
      }
    }
  }

 private:
  void Open(const std::string& endpoint) {
    socket_ = std::make_unique<zmq::socket_t>(ctx_, zmq::socket_type::router);
    REQUIRE(transport::ConfigureRouter(*socket_).ok());
    socket_->bind(endpoint);
  }

  zmq::context_t ctx_;
  std::unique_ptr<zmq::socket_t> socket_;
  std::string endpoint_;
};

actors::QueryReply Answer(const std::string& json) {
  actors::QueryReply reply;
  reply.json = json;
  return reply;
}

actors::SubmitRun OneSubmission() {
  actors::SubmitRun submit;
  submit.pipeline_json = "{}";
  submit.pipeline_hash = "h";
  return submit;
}

// Runs `call` on its own thread while the test plays the coordinator.
template <typename R>
class Call {
 public:
  explicit Call(std::function<R()> call) : thread_([this, call] { result_ = call(); }) {}
  ~Call() {
    if (thread_.joinable()) thread_.join();  // a failed REQUIRE left it running
  }
  R Get() {
    thread_.join();
    return std::move(*result_);
  }

 private:
  std::optional<R> result_;
  std::thread thread_;
};

std::unique_ptr<cli::RemoteCoordinator> Client(const FlakyCoordinator& c) {
  auto remote = cli::RemoteCoordinator::Connect(c.endpoint(), "", "", std::chrono::seconds(10));
  REQUIRE(remote.ok());
  return std::move(*remote);
}

TEST_CASE("a query whose connection closes before its answer is asked again and answered",
          "[cli][remote]") {
  FlakyCoordinator coordinator;
  auto remote = Client(coordinator);
  const auto began = Clock::now();
  Call<Result<nlohmann::json>> query([&] { return remote->Query("status", "r1"); });
  auto first = coordinator.Next(milliseconds(5000));
  REQUIRE(first);
  CHECK(first->type == static_cast<uint16_t>(ClientType::kQuery));
  coordinator.Restart();
  auto again = coordinator.Next(milliseconds(5000));
  REQUIRE(again);
  CHECK(again->type == static_cast<uint16_t>(ClientType::kQuery));
  // A fresh connection: the old one's answer could never be taken for it.
  CHECK(again->identity != first->identity);
  coordinator.Reply(*again, ClientType::kQueryReply, Answer(R"({"state":"RUNNING"})"));
  auto answer = query.Get();
  REQUIRE(answer.ok());
  CHECK((*answer)["state"] == "RUNNING");
  // Well within the 10 s the client waits for an answer that never comes.
  CHECK(Clock::now() - began < std::chrono::seconds(5));
}

TEST_CASE("a submission whose connection closes before its answer is reported, not sent twice",
          "[cli][remote]") {
  FlakyCoordinator coordinator;
  auto remote = Client(coordinator);
  const auto began = Clock::now();
  Call<Result<std::string>> submit([&] { return remote->Submit(OneSubmission()); });
  auto first = coordinator.Next(milliseconds(5000));
  REQUIRE(first);
  CHECK(first->type == static_cast<uint16_t>(ClientType::kSubmitRun));
  coordinator.Restart();
  auto result = submit.Get();
  REQUIRE_FALSE(result.ok());
  INFO(result.status().message());
  CHECK(result.status().message().find("closed before it answered") != std::string::npos);
  CHECK(result.status().message().find("may or may not have been taken") != std::string::npos);
  CHECK(Clock::now() - began < std::chrono::seconds(5));
  CHECK_FALSE(coordinator.Next(milliseconds(500)));  // never sent again
}

TEST_CASE("a cancel whose connection closes before it is confirmed is sent again",
          "[cli][remote]") {
  FlakyCoordinator coordinator;
  auto remote = Client(coordinator);
  Call<Status> cancel([&] { return remote->Cancel("r1", "enough"); });
  auto first = coordinator.Next(milliseconds(5000));
  REQUIRE(first);
  CHECK(first->type == static_cast<uint16_t>(ClientType::kCancelRun));
  coordinator.Restart();  // the cancel and its status query are lost
  std::vector<uint16_t> after;
  for (int i = 0; i < 3; ++i) {
    auto next = coordinator.Next(milliseconds(5000));
    INFO("frames after the restart before this one: " << after.size());
    REQUIRE(next);
    after.push_back(next->type);
    if (next->type == static_cast<uint16_t>(ClientType::kQuery) &&
        std::count(after.begin(), after.end(), static_cast<uint16_t>(ClientType::kCancelRun))) {
      coordinator.Reply(*next, ClientType::kQueryReply, Answer(R"({"state":"CANCELED"})"));
      break;
    }
    if (next->type == static_cast<uint16_t>(ClientType::kQuery)) {
      coordinator.Reply(*next, ClientType::kQueryReply, Answer(R"({"state":"RUNNING"})"));
    }
  }
  CHECK(cancel.Get().ok());
  CHECK(std::count(after.begin(), after.end(), static_cast<uint16_t>(ClientType::kCancelRun)) == 1);
}

TEST_CASE("a connection that closed while the client was idle fails nothing", "[cli][remote]") {
  FlakyCoordinator coordinator;
  auto remote = Client(coordinator);
  Call<Result<nlohmann::json>> warm([&] { return remote->Query("status", "r1"); });
  auto q = coordinator.Next(milliseconds(5000));
  REQUIRE(q);
  coordinator.Reply(*q, ClientType::kQueryReply, Answer("{}"));
  REQUIRE(warm.Get().ok());
  coordinator.Restart();  // nothing in flight
  std::this_thread::sleep_for(milliseconds(300));
  Call<Result<std::string>> submit([&] { return remote->Submit(OneSubmission()); });
  auto s = coordinator.Next(milliseconds(5000));
  REQUIRE(s);
  CHECK(s->type == static_cast<uint16_t>(ClientType::kSubmitRun));
  actors::SubmitReply reply;
  reply.run_id = "r2";
  coordinator.Reply(*s, ClientType::kSubmitReply, reply);
  auto id = submit.Get();
  REQUIRE(id.ok());
  CHECK(*id == "r2");
}

}  // namespace
}  // namespace apollo11
