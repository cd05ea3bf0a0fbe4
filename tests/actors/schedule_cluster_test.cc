// A real node fires a seconds-field schedule by itself (sched).

#include <catch2/catch.hpp>
#include <string>

#include "tests/actors/cli_harness.h"
#include "tests/actors/node_harness.h"

namespace apollo11::testing {
namespace {

constexpr const char* kEverySecond = R"(version: "1.0"
name: t.every_second
schedule: "* * * * * *"
overlap: allow
pipeline:
  - {id: a, type: noop}
)";

// The runs of t.every_second the node lists.
size_t RunsOf(const NodeProcess& node) {
  CmdResult runs = node.Cli({"runs", "--json"});
  auto listed = ParseJson(runs.out);
  size_t n = 0;
  if (!listed.is_array()) return 0;
  for (const auto& r : listed) {
    if (r.value("pipeline", "") == "t.every_second") ++n;
  }
  return n;
}

}  // namespace

TEST_CASE("a node fires a seconds-field schedule and keeps firing after a kill -9",
          "[schedule][cluster]") {
  ScratchDir dir;
  const std::string state = dir.path() + "/state";
  const std::vector<std::string> args = {"--role",      "all",
                                         "--state-dir", state,
                                         "--bind",      "tcp://127.0.0.1:0",
                                         "--api-bind",  "tcp://127.0.0.1:0",
                                         "--slots",     "2",
                                         "--worker-id", "w1"};
  size_t before = 0;
  {
    NodeProcess node(dir, "node", args);
    const std::string file = dir.Write("every_second.yaml", kEverySecond);
    CmdResult submitted = node.Cli({"submit", file});
    INFO(submitted.err);
    REQUIRE(submitted.exit_code == 0);
    INFO(node.Log());
    // The submission's own run plus at least three fired ones.
    REQUIRE(WaitFor([&] { return RunsOf(node) >= 4; }, 15000));
    CHECK(node.Log().find("schedule of t.every_second registered") != std::string::npos);
    before = RunsOf(node);
  }  // SIGKILL
  NodeProcess again(dir, "again", args);
  INFO(again.Log());
  REQUIRE(WaitFor([&] { return RunsOf(again) >= before + 2; }, 15000));
}

}  // namespace apollo11::testing
