// A flag of one role given to a node of another would do nothing: start
// refuses it, from the command line, the environment or the config file.

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

#include "tests/actors/cli_harness.h"
#include "tests/actors/node_harness.h"

namespace apollo11::testing {

TEST_CASE("a node refuses a flag of another role from every source, and role all takes both",
          "[cli][node][flags]") {
  ScratchDir dir;
  const std::string node = Apollo11() + "-node";
  CmdResult worker = Run({node, "start", "--role", "worker", "--connect", "tcp://127.0.0.1:1",
                          "--state-dir", dir.path() + "/w", "--max-requeues", "3"});
  CHECK(worker.exit_code == 2);
  CHECK(worker.err.find("--max-requeues is a coordinator setting") != std::string::npos);
  CHECK(worker.err.find("this node's role is worker: it would do nothing here") !=
        std::string::npos);

  const std::string config = dir.Write("node.yaml", "slots: 4\n");
  CmdResult coordinator = Run({node, "start", "--role", "coordinator", "--config", config,
                               "--state-dir", dir.path() + "/c", "--http-bind", "off"});
  CHECK(coordinator.exit_code == 2);
  CHECK(coordinator.err.find("--slots is a worker setting") != std::string::npos);
  CHECK(coordinator.err.find("the config file's key 'slots'") != std::string::npos);

  ::setenv("APOLLO11_PREFETCH", "2", 1);
  CmdResult from_env = Run({node, "start", "--role", "coordinator", "--state-dir",
                            dir.path() + "/e", "--http-bind", "off"});
  ::unsetenv("APOLLO11_PREFETCH");
  CHECK(from_env.exit_code == 2);
  CHECK(from_env.err.find("APOLLO11_PREFETCH") != std::string::npos);

  // Role all has both roles' flags: it starts with them.
  NodeProcess both(
      dir, "all",
      {"--role", "all", "--config", config, "--max-requeues", "3", "--state-dir", dir.path() + "/a",
       "--bind", "tcp://127.0.0.1:0", "--api-bind", "tcp://127.0.0.1:0"});
  CHECK(both.Stop() == 0);
}

}  // namespace apollo11::testing
