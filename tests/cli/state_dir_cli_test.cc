// The commands that read a state dir's journal without a coordinator (status,
// history, runs, logs, trace) all say the same thing when there is none.

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/actors/cli_harness.h"

using apollo11::testing::Apollo11;
using apollo11::testing::CmdResult;
using apollo11::testing::Run;
using apollo11::testing::ScratchDir;

TEST_CASE("every local reader of an empty state dir says there is no journal there", "[cli]") {
  ScratchDir dir;
  const std::string empty = dir.path() + "/nothing-here";
  const std::string expected = "no journal in state dir " + empty +
                               " (run a pipeline first, pass --state-dir, or --coordinator)";
  const std::vector<std::vector<std::string>> commands = {
      {"status", "r1"}, {"history", "r1"}, {"runs"}, {"logs", "r1.task"}, {"trace", "r1.task"}};
  for (std::vector<std::string> argv : commands) {
    const std::string name = argv[0];
    argv.insert(argv.begin(), Apollo11());
    argv.push_back("--state-dir");
    argv.push_back(empty);
    CmdResult r = Run(argv);
    INFO(name << ": exit " << r.exit_code << ", stderr: " << r.err);
    CHECK(r.exit_code != 0);
    CHECK(r.err.find(expected) != std::string::npos);
    CHECK(r.out.empty());
  }
}
