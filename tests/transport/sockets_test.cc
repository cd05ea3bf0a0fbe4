#include "transport/sockets.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <string>

#include "transport/codec.h"
#include "transport/messages.h"

namespace apollo11::transport {
namespace {

using std::chrono::milliseconds;

// Waits (bounded) for one message on a ROUTER.
Result<RoutedMessage> RecvWithin(zmq::socket_t& router, milliseconds timeout) {
  zmq::pollitem_t items[] = {{router.handle(), 0, ZMQ_POLLIN, 0}};
  auto n = Poll(items, timeout);
  if (!n.ok()) return n.status();
  if (*n == 0) return Status::Busy("timeout");
  return RecvFrom(router);
}

Result<zmq::message_t> RecvDealerWithin(zmq::socket_t& dealer, milliseconds timeout) {
  zmq::pollitem_t items[] = {{dealer.handle(), 0, ZMQ_POLLIN, 0}};
  auto n = Poll(items, timeout);
  if (!n.ok()) return n.status();
  if (*n == 0) return Status::Busy("timeout");
  return Recv(dealer);
}

void ExchangeOver(const std::string& bind_endpoint) {
  zmq::context_t ctx;
  zmq::socket_t router(ctx, zmq::socket_type::router);
  REQUIRE(ConfigureRouter(router).ok());
  auto endpoint = Bind(router, bind_endpoint);
  REQUIRE(endpoint.ok());
  zmq::socket_t dealer(ctx, zmq::socket_type::dealer);
  REQUIRE(ConfigureDealer(dealer, "worker-1").ok());
  REQUIRE(Connect(dealer, *endpoint).ok());

  // With IMMEDIATE, a send before the connection is up fails with Busy; the
  // DEALER becomes writable (POLLOUT) once it is connected.
  zmq::pollitem_t writable[] = {{dealer.handle(), 0, ZMQ_POLLOUT, 0}};
  auto n = Poll(writable, milliseconds(5000));
  REQUIRE(n.ok());
  REQUIRE(*n == 1);
  std::string hello = EncodeToString(MsgType::kHello, Hello{"etl", 4, {}, {}, "w1"});
  REQUIRE(Send(dealer, hello).ok());
  auto got = RecvWithin(router, milliseconds(2000));
  REQUIRE(got.ok());
  CHECK(got->identity == "worker-1");
  auto env = DecodeEnvelope(got->payload.data(), got->payload.size());
  REQUIRE(env.ok());
  CHECK(env->type == ToWire(MsgType::kHello));
  CHECK(BodyAs<Hello>(*env)->slots == 4);

  std::string dispatch = EncodeToString(MsgType::kDispatch, Dispatch{"r.t", 1, {}, "", 1});
  REQUIRE(SendTo(router, "worker-1", dispatch).ok());
  auto reply = RecvDealerWithin(dealer, milliseconds(2000));
  REQUIRE(reply.ok());
  auto denv = DecodeEnvelope(reply->data(), reply->size());
  REQUIRE(denv.ok());
  CHECK(BodyAs<Dispatch>(*denv)->exec_id == "r.t");
}

}  // namespace

TEST_CASE("ROUTER and DEALER exchange messages over inproc", "[sockets]") {
  ExchangeOver("inproc://sockets-test-exchange");
}

TEST_CASE("ROUTER and DEALER exchange messages over tcp on an ephemeral port", "[sockets]") {
  ExchangeOver("tcp://127.0.0.1:0");
}

TEST_CASE("Bind reports the port picked for port 0", "[sockets]") {
  zmq::context_t ctx;
  zmq::socket_t router(ctx, zmq::socket_type::router);
  REQUIRE(ConfigureRouter(router).ok());
  auto endpoint = Bind(router, "tcp://127.0.0.1:0");
  REQUIRE(endpoint.ok());
  CHECK_THAT(*endpoint, Catch::StartsWith("tcp://127.0.0.1:"));
  CHECK_FALSE(Catch::EndsWith(":0").match(*endpoint));
  zmq::socket_t other(ctx, zmq::socket_type::router);
  auto again = Bind(other, *endpoint);
  REQUIRE_FALSE(again.ok());
  CHECK(again.status().code() == StatusCode::kIo);
}

TEST_CASE("a send to an unknown identity is NotFound, not a silent drop", "[sockets]") {
  zmq::context_t ctx;
  zmq::socket_t router(ctx, zmq::socket_type::router);
  REQUIRE(ConfigureRouter(router).ok());
  REQUIRE(Bind(router, "inproc://sockets-test-unknown").ok());
  Status s = SendTo(router, "nobody", "payload");
  CHECK(s.code() == StatusCode::kNotFound);
  CHECK_THAT(s.message(), Catch::Contains("peer gone"));
  // Blocking mode reports it too instead of waiting.
  CHECK(SendTo(router, "nobody", "payload", /*dontwait=*/false).code() == StatusCode::kNotFound);
}

TEST_CASE("a DEALER with no connected peer reports Busy instead of queueing", "[sockets]") {
  zmq::context_t ctx;
  zmq::socket_t dealer(ctx, zmq::socket_type::dealer);
  REQUIRE(ConfigureDealer(dealer, "lonely").ok());
  REQUIRE(Connect(dealer, "tcp://127.0.0.1:1").ok());  // nothing listens there
  CHECK(Send(dealer, "x").code() == StatusCode::kBusy);
}

TEST_CASE("a receive with nothing waiting is Busy", "[sockets]") {
  zmq::context_t ctx;
  auto pair = MakeInprocPair(ctx, "sockets-test-empty");
  REQUIRE(pair.ok());
  CHECK(Recv(pair->first).status().code() == StatusCode::kBusy);
  REQUIRE(Send(pair->second, "hi").ok());
  auto msg = Recv(pair->first, /*dontwait=*/false);
  REQUIRE(msg.ok());
  CHECK(msg->to_string() == "hi");
}

TEST_CASE("MakeInprocPair refuses a name already bound", "[sockets]") {
  zmq::context_t ctx;
  auto first = MakeInprocPair(ctx, "sockets-test-dup");
  REQUIRE(first.ok());
  auto second = MakeInprocPair(ctx, "sockets-test-dup");
  REQUIRE_FALSE(second.ok());
  CHECK(second.status().code() == StatusCode::kIo);
}

TEST_CASE("a multipart message from a peer is dropped as invalid", "[sockets]") {
  zmq::context_t ctx;
  zmq::socket_t router(ctx, zmq::socket_type::router);
  REQUIRE(ConfigureRouter(router).ok());
  REQUIRE(Bind(router, "inproc://sockets-test-multipart").ok());
  zmq::socket_t dealer(ctx, zmq::socket_type::dealer);
  REQUIRE(ConfigureDealer(dealer, "multi").ok());
  REQUIRE(Connect(dealer, "inproc://sockets-test-multipart").ok());
  dealer.send(zmq::str_buffer("a"), zmq::send_flags::sndmore);
  dealer.send(zmq::str_buffer("b"), zmq::send_flags::none);
  REQUIRE(Send(dealer, "single").ok());
  auto first = RecvWithin(router, milliseconds(2000));
  REQUIRE_FALSE(first.ok());
  CHECK(first.status().code() == StatusCode::kInvalidInput);
  auto second = RecvWithin(router, milliseconds(2000));
  REQUIRE(second.ok());
  CHECK(second->payload.to_string() == "single");
}

TEST_CASE("a frame over MAXMSGSIZE is dropped and the router keeps serving others", "[sockets]") {
  zmq::context_t ctx;
  zmq::socket_t router(ctx, zmq::socket_type::router);
  SocketOptions small;
  small.max_msg_size = 1024;
  REQUIRE(ConfigureRouter(router, small).ok());
  auto endpoint = Bind(router, "tcp://127.0.0.1:0");
  REQUIRE(endpoint.ok());

  SocketOptions lax;
  lax.immediate = false;  // queue until connected, so no retry loop is needed
  zmq::socket_t big(ctx, zmq::socket_type::dealer);
  REQUIRE(ConfigureDealer(big, "big", lax).ok());
  REQUIRE(Connect(big, *endpoint).ok());
  zmq::socket_t good(ctx, zmq::socket_type::dealer);
  REQUIRE(ConfigureDealer(good, "good", lax).ok());
  REQUIRE(Connect(good, *endpoint).ok());

  REQUIRE(Send(big, std::string(4096, 'x'), /*dontwait=*/false).ok());
  // Give "big" the first turn: its frame reaches the router before "good"
  // sends, by waiting until good's own 1st small message arrives.
  for (int i = 0; i < 3; ++i) {
    REQUIRE(Send(good, "small-" + std::to_string(i), /*dontwait=*/false).ok());
    auto got = RecvWithin(router, milliseconds(3000));
    REQUIRE(got.ok());
    CHECK(got->identity == "good");
    CHECK(got->payload.size() < 1024);
  }
  // Nothing oversized ever arrives.
  auto extra = RecvWithin(router, milliseconds(100));
  if (extra.ok()) CHECK(extra->payload.size() <= 1024);
}

TEST_CASE("Poll with a timeout returns 0 when nothing is ready", "[sockets]") {
  zmq::context_t ctx;
  auto pair = MakeInprocPair(ctx, "sockets-test-poll");
  REQUIRE(pair.ok());
  zmq::pollitem_t items[] = {{pair->first.handle(), 0, ZMQ_POLLIN, 0}};
  auto start = std::chrono::steady_clock::now();
  auto n = Poll(items, milliseconds(20));
  REQUIRE(n.ok());
  CHECK(*n == 0);
  CHECK(std::chrono::steady_clock::now() - start >= milliseconds(15));
}

TEST_CASE("closing a context with unsent messages does not hang (linger 0)", "[sockets]") {
  auto start = std::chrono::steady_clock::now();
  {
    zmq::context_t ctx;
    zmq::socket_t dealer(ctx, zmq::socket_type::dealer);
    SocketOptions lax;
    lax.immediate = false;  // let messages queue for a peer that never comes
    REQUIRE(ConfigureDealer(dealer, "d", lax).ok());
    REQUIRE(Connect(dealer, "tcp://127.0.0.1:1").ok());
    for (int i = 0; i < 100; ++i) REQUIRE(Send(dealer, "pending").ok());
  }
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
}

TEST_CASE("operations on a terminated context report it", "[sockets]") {
  zmq::context_t ctx;
  auto pair = MakeInprocPair(ctx, "sockets-test-term");
  REQUIRE(pair.ok());
  ctx.shutdown();
  zmq::pollitem_t items[] = {{pair->first.handle(), 0, ZMQ_POLLIN, 0}};
  auto n = Poll(items, milliseconds(-1));
  REQUIRE_FALSE(n.ok());
  CHECK(IsContextTerminated(n.status()));
  CHECK(IsContextTerminated(Recv(pair->first, false).status()));
}

}  // namespace apollo11::transport

TEST_CASE("an inproc actor link never drops a non-blocking send while its peer lives",
          "[sockets]") {
  // Regression: with libzmq's default high-water mark (1000) a burst of
  // non-blocking sends between actors was silently dropped, stranding READY
  // tasks that the dispatcher never heard of.
  zmq::context_t ctx;
  auto pair = apollo11::transport::MakeInprocPair(ctx, "hwm-regression");
  REQUIRE(pair.ok());
  const int kBurst = 5000;
  for (int i = 0; i < kBurst; ++i) {
    REQUIRE(apollo11::transport::Send(pair->first, std::to_string(i), /*dontwait=*/true).ok());
  }
  for (int i = 0; i < kBurst; ++i) {
    auto msg = apollo11::transport::Recv(pair->second, /*dontwait=*/true);
    REQUIRE(msg.ok());
    CHECK(msg->to_string() == std::to_string(i));
  }
}
