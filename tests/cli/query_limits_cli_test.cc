// What a coordinator sends back for an oversized query: a short refusal, not
// the query echoed (it used to cost the coordinator ~6x the frame in copies).

#include <catch2/catch.hpp>
#include <string>

#include "tests/actors/cluster_harness.h"

using namespace apollo11::testing;  // NOLINT: test file

TEST_CASE("an oversized query id is refused in a few words, not echoed", "[cli][query]") {
  ScratchDir dir;
  NodeProc coord = StartCoordinator(dir);
  Nodes guard{{&coord}};
  const std::string id(100000, 'x');
  for (const char* cmd : {"status", "history"}) {
    INFO(cmd);
    CmdResult r = Cli(coord, {cmd, id});
    CHECK(r.exit_code == 2);
    CHECK(r.err.size() < 300);
    CHECK(r.err.find("is longer than 4096 bytes") != std::string::npos);
  }
  // An ordinary unknown id is still named in full.
  CmdResult missing = Cli(coord, {"status", "r-missing"});
  CHECK(missing.err.find("no run r-missing") != std::string::npos);
}
