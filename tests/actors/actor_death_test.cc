// A node whose actor dies goes down with the reason instead of staying up
// answering nothing: a real `apollo11-node` whose scheduler throws from its
// query handler ($APOLLO11_TEST_FAULT=scheduler-query, a test-only hook)
// exits non-zero and logs which actor died and why.

#include <stdlib.h>

#include <catch2/catch.hpp>
#include <string>

#include "tests/actors/cli_harness.h"
#include "tests/actors/cluster_harness.h"

using namespace apollo11::testing;  // NOLINT: test file

TEST_CASE("a coordinator whose scheduler throws in a query handler exits 3 with the reason",
          "[cluster][supervisor]") {
  ScratchDir dir;
  ::setenv("APOLLO11_TEST_FAULT", "scheduler-query", 1);
  NodeProc coord = StartCoordinator(dir);
  ::unsetenv("APOLLO11_TEST_FAULT");
  NodeProc w1 = StartWorker(dir, coord, "w1", 1);
  Nodes guard{{&coord, &w1}};
  // Any query reaches the handler; the CLI gets no answer.
  (void)Cli(coord, {"workers", "--timeout", "2"});
  const int code = WaitExit(coord.pid, 10000);
  coord.pid = -1;
  const std::string log = dir.Read("coord.err");
  INFO(log);
  CHECK(code == 3);
  CHECK(
      log.find("actor scheduler stopped: threw: test fault APOLLO11_TEST_FAULT=scheduler-query") !=
      std::string::npos);
  CHECK(log.find("an actor died: internal error: actor scheduler: threw: test fault "
                 "APOLLO11_TEST_FAULT=scheduler-query; stopping the node") != std::string::npos);
}
