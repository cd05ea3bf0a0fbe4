// An HTTP server whose listening loop ends without a Stop says so
// (HttpServer::failure, which a node turns into its exit reason), and one
// stopped by its owner does not.

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>

#include "observability/http_server.h"

using namespace apollo11::observability;  // NOLINT: test file

namespace {

std::unique_ptr<HttpServer> Started(Registry* registry) {
  HttpServerOptions o;
  o.bind = "127.0.0.1:0";
  o.registry = registry;
  auto s = HttpServer::Start(std::move(o));
  REQUIRE(s.ok());
  return std::move(*s);
}

// The fd of this process's listening TCP socket on `port`, or -1.
int ListeningFd(int port) {
  DIR* dir = ::opendir("/proc/self/fd");
  int found = -1;
  while (dirent* e = dir != nullptr ? ::readdir(dir) : nullptr) {
    const int fd = std::atoi(e->d_name);
    sockaddr_in addr{};
    socklen_t len = sizeof(addr);
    int listening = 0;
    socklen_t optlen = sizeof(listening);
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0 ||
        addr.sin_family != AF_INET || ntohs(addr.sin_port) != port) {
      continue;
    }
    if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &optlen) == 0 && listening) {
      found = fd;
    }
  }
  if (dir != nullptr) ::closedir(dir);
  return found;
}

}  // namespace

TEST_CASE("an HTTP server whose listening loop ends on its own reports a failure", "[http]") {
  Registry registry;
  auto server = Started(&registry);
  CHECK_FALSE(server->failure().has_value());
  const std::string& bound = server->bound();
  const int fd = ListeningFd(std::stoi(bound.substr(bound.rfind(':') + 1)));
  REQUIRE(fd >= 0);
  // What a broken listening socket looks like to the loop: accept fails.
  ::shutdown(fd, SHUT_RDWR);
  std::optional<std::string> failure;
  for (int i = 0; i < 500 && !failure; ++i) {
    failure = server->failure();
    if (!failure) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  REQUIRE(failure.has_value());
  CHECK(failure->find("the HTTP server") == 0);
  server->Stop();
}

TEST_CASE("an HTTP server stopped by its owner reports no failure", "[http]") {
  Registry registry;
  auto server = Started(&registry);
  server->Stop();
  CHECK_FALSE(server->failure().has_value());
}
