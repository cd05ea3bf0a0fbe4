// The HTTP server of a real `apollo11-node` coordinator against hostile
// clients: many connections that send half a request and hold it, and a
// Range header with hundreds of overlapping ranges.

#include <httplib.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/actors/cluster_harness.h"
#include "tests/observability/raw_http.h"

using namespace apollo11::testing;  // NOLINT: test file

namespace {

int HttpPort(const NodeProc& node) {
  const std::string addr = node.listening["http"].get<std::string>();
  return std::stoi(addr.substr(addr.rfind(':') + 1));
}

}  // namespace

TEST_CASE("held half requests never keep a node's /healthz, /metrics or API from answering",
          "[cluster][http]") {
  ScratchDir dir;
  NodeProc coord = StartCoordinator(dir);
  Nodes guard{{&coord}};
  const int port = HttpPort(coord);
  // 8 from one address, 24 from 24 others: more than any thread pool.
  std::vector<int> slow;
  for (int i = 0; i < 8; ++i) slow.push_back(Connect(port, "127.0.0.2"));
  for (int i = 0; i < 24; ++i) {
    slow.push_back(Connect(port, ("127.0.2." + std::to_string(i + 1)).c_str()));
  }
  for (int fd : slow) SendText(fd, "GET /api/runs HTTP/1.1\r\nHost: x\r\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(200));

  httplib::Client http("127.0.0.1", port);
  http.set_read_timeout(10, 0);
  for (const char* path : {"/healthz", "/metrics", "/api/runs", "/api/workers"}) {
    INFO(path);
    const auto start = std::chrono::steady_clock::now();
    auto res = http.Get(path);
    const auto took = std::chrono::steady_clock::now() - start;
    REQUIRE(res);
    CHECK(res->status == 200);
    CHECK(took < std::chrono::milliseconds(1000));
  }
  // The held connections are dropped at the head deadline with 408: those
  // within their address's cap (4) after 5 s, the 4 past it in health-only
  // slots after 1 s (they never asked for /healthz). None was refused: an
  // address gets as many health-only slots as its cap.
  int refused = 0, timed_out = 0;
  for (int fd : slow) {
    const std::string answer = ReadAll(fd, 8000);
    ::close(fd);
    refused += answer.rfind("HTTP/1.1 503", 0) == 0;
    timed_out += answer.rfind("HTTP/1.1 408", 0) == 0;
  }
  CHECK(refused == 0);
  CHECK(timed_out == 32);
}

TEST_CASE("300 overlapping ranges get a node's /metrics once", "[cluster][http]") {
  ScratchDir dir;
  NodeProc coord = StartCoordinator(dir);
  Nodes guard{{&coord}};
  const int port = HttpPort(coord);
  httplib::Client http("127.0.0.1", port);
  auto plain = http.Get("/metrics");
  REQUIRE(plain);
  std::string ranges = "bytes=0-";
  for (int i = 0; i < 299; ++i) ranges += ",0-";
  for (const std::string path : {"/metrics", "/api/runs?limit=1000"}) {
    INFO(path);
    const int fd = Connect(port);
    SendText(fd, "GET " + path + " HTTP/1.1\r\nHost: x\r\nRange: " + ranges + "\r\n\r\n");
    const std::string answer = ReadAll(fd, 10000);
    ::close(fd);
    CHECK(answer.rfind("HTTP/1.1 200 OK\r\n", 0) == 0);
    CHECK(answer.size() < plain->body.size() + 8192);
  }
  CHECK(http.Get("/api/runs?limit=10000")->status == 400);
}
