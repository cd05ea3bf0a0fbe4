#pragma once
// An `apollo11-node` process for tests: started with 100 ms heartbeats, its
// "listening" line parsed, SIGKILLed when the object dies if still running.

#include <signal.h>

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/actors/cli_harness.h"

namespace apollo11::testing {

class NodeProcess {
 public:
  // Starts `apollo11-node start --heartbeat 100ms ARGS...` with its output in
  // DIR/NAME.out and DIR/NAME.err, and waits for its listening line.
  NodeProcess(const ScratchDir& dir, const std::string& name, std::vector<std::string> args)
      : dir_(dir), name_(name) {
    // HTTP on a free port: the default 8011 would collide between tests
    // running in parallel.
    std::vector<std::string> argv = {Apollo11() + "-node", "start", "--heartbeat", "100ms",
                                     "--log-level",        "info",  "--http-bind", "127.0.0.1:0"};
    argv.insert(argv.end(), args.begin(), args.end());
    pid_ = SpawnNamed(argv, dir.path(), name);
    REQUIRE(pid_ > 0);
    bool up = WaitFor(
        [&] {
          std::string out = dir.Read(name + ".out");
          auto nl = out.find('\n');
          if (nl == std::string::npos) return false;
          listening_ = ParseJson(out.substr(0, nl));
          return listening_.is_object();
        },
        10000);
    INFO(dir.Read(name + ".err"));
    REQUIRE(up);
  }
  ~NodeProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      WaitExit(pid_, 5000);
    }
  }
  NodeProcess(const NodeProcess&) = delete;
  NodeProcess& operator=(const NodeProcess&) = delete;

  // Runs `apollo11 ARGS... --coordinator API`.
  CmdResult Cli(std::vector<std::string> args) const {
    std::vector<std::string> argv = {Apollo11()};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back("--coordinator");
    argv.push_back(listening_["api"].get<std::string>());
    return Run(argv);
  }
  // SIGTERM, then the exit code (-1 if it did not exit in time).
  int Stop() {
    ::kill(pid_, SIGTERM);
    int code = WaitExit(pid_, 20000);
    pid_ = -1;
    return code;
  }
  std::string Log() const { return dir_.Read(name_ + ".err"); }

 private:
  const ScratchDir& dir_;
  std::string name_;
  pid_t pid_ = -1;
  nlohmann::json listening_;
};

}  // namespace apollo11::testing
