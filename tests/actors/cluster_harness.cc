#include "tests/actors/cluster_harness.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>

namespace apollo11::testing {

std::string Node() { return Apollo11() + "-node"; }

NodeProc StartNode(const ScratchDir& dir, const std::string& name, std::vector<std::string> args,
                   const std::string& state, bool default_timing) {
  std::vector<std::string> argv = {
      Node(),        "start", "--state-dir", dir.path() + "/" + (state.empty() ? name : state),
      "--log-level", "info",  "--http-bind", "127.0.0.1:0"};
  if (!default_timing) argv.insert(argv.end(), {"--heartbeat", "100ms", "--liveness", "3"});
  argv.insert(argv.end(), args.begin(), args.end());
  NodeProc p;
  p.pid = SpawnNamed(argv, dir.path(), name);
  REQUIRE(p.pid > 0);
  bool up = WaitFor(
      [&] {
        std::string out = dir.Read(name + ".out");
        auto nl = out.find('\n');
        if (nl == std::string::npos) return false;
        p.listening = ParseJson(out.substr(0, nl));
        return p.listening.is_object();
      },
      10000);
  INFO(dir.Read(name + ".err"));
  REQUIRE(up);
  return p;
}

NodeProc StartCoordinator(const ScratchDir& dir, const std::string& bind,
                          const std::string& api_bind, const std::string& name,
                          const std::string& state) {
  return StartNode(dir, name, {"--role", "coordinator", "--bind", bind, "--api-bind", api_bind},
                   state);
}

NodeProc StartWorkerAt(const ScratchDir& dir, const std::string& endpoint, const std::string& id,
                       int slots, const std::string& name) {
  return StartNode(dir, name.empty() ? id : name,
                   {"--role", "worker", "--connect", endpoint, "--worker-id", id, "--slots",
                    std::to_string(slots)},
                   id);
}

NodeProc StartWorker(const ScratchDir& dir, const NodeProc& coord, const std::string& id, int slots,
                     const std::string& group, const std::string& name) {
  return StartNode(dir, name.empty() ? id : name,
                   {"--role", "worker", "--connect", coord.listening["workers"].get<std::string>(),
                    "--worker-id", id, "--slots", std::to_string(slots), "--group", group},
                   id);
}

CmdResult Cli(const NodeProc& coord, std::vector<std::string> args, const std::string& cwd) {
  std::vector<std::string> argv = {Apollo11()};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.push_back("--coordinator");
  argv.push_back(coord.listening["api"].get<std::string>());
  return Run(argv, cwd);
}

size_t WorkerCount(const NodeProc& coord) {
  CmdResult r = Cli(coord, {"workers", "--json"});
  auto doc = ParseJson(r.out);
  return doc.is_array() ? doc.size() : 0;
}

int FreeTcpPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

Nodes::~Nodes() {
  for (NodeProc* p : all) {
    if (p->pid > 0) {
      ::kill(p->pid, SIGKILL);
      WaitExit(p->pid, 5000);
    }
  }
}

}  // namespace apollo11::testing
