#include "transport/tsan_annotations.h"

#include <catch2/catch.hpp>
#include <string>

#include "transport/sockets.h"

namespace apollo11::transport {
namespace {

std::string LastEndpoint(zmq::socket_t& socket) { return socket.get(zmq::sockopt::last_endpoint); }

TEST_CASE("both ends of a ROUTER-DEALER link name it alike", "[transport][tsan]") {
  zmq::context_t ctx;
  zmq::socket_t router(ctx, zmq::socket_type::router);
  REQUIRE(ConfigureRouter(router).ok());
  auto bound = Bind(router, "tcp://127.0.0.1:0");
  REQUIRE(bound.ok());
  const std::string port = bound->substr(bound->rfind(':') + 1);
  zmq::socket_t w1(ctx, zmq::socket_type::dealer), w2(ctx, zmq::socket_type::dealer);
  REQUIRE(ConfigureDealer(w1, "w1").ok());
  REQUIRE(ConfigureDealer(w2, "w2").ok());
  // The host spelled another way: the same listener.
  REQUIRE(Connect(w1, "tcp://localhost:" + port).ok());
  REQUIRE(Connect(w2, *bound).ok());

  const std::string at_router = LinkKey(LastEndpoint(router), "w1");
  CHECK(at_router == LinkKey(LastEndpoint(w1), w1.get(zmq::sockopt::routing_id)));
  CHECK(at_router != LinkKey(LastEndpoint(w2), w2.get(zmq::sockopt::routing_id)));
  CHECK(LinkKey(LastEndpoint(router), "w2") ==
        LinkKey(LastEndpoint(w2), w2.get(zmq::sockopt::routing_id)));
}

TEST_CASE("a peer without a routing id shares its ROUTER's endpoint key", "[transport][tsan]") {
  // libzmq names such a peer with five bytes, the first one zero.
  const std::string generated("\0\x80\x00\x00\x29", 5);
  CHECK(LinkKey("tcp://127.0.0.1:7011", generated) == LinkKey("tcp://0.0.0.0:7011", ""));
  CHECK(LinkKey("tcp://127.0.0.1:7011", "") != LinkKey("tcp://127.0.0.1:7012", ""));
}

TEST_CASE("each inproc pair is a link of its own", "[transport][tsan]") {
  zmq::context_t ctx;
  auto a = MakeInprocPair(ctx, "tsan-link-a");
  auto b = MakeInprocPair(ctx, "tsan-link-b");
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(LinkKey(LastEndpoint(a->first), "") == LinkKey(LastEndpoint(a->second), ""));
  CHECK(LinkKey(LastEndpoint(a->first), "") != LinkKey(LastEndpoint(b->first), ""));
}

}  // namespace
}  // namespace apollo11::transport
