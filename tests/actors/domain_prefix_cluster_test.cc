// Domain prefixes are enforced by a coordinator by default (brief 6), with
// an explicit opt-out, through the real binaries.

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/actors/cli_harness.h"
#include "tests/actors/node_harness.h"

namespace apollo11::testing {
namespace {

std::vector<std::string> NodeArgs(const std::string& state, std::vector<std::string> extra) {
  std::vector<std::string> args = {
      "--role",           "all", "--state-dir", state, "--bind", "tcp://127.0.0.1:0", "--api-bind",
      "tcp://127.0.0.1:0"};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

}  // namespace

TEST_CASE(
    "a coordinator refuses a pipeline name without a domain prefix by default, and lets it in "
    "with --allow-unprefixed-names",
    "[cluster][registry][prefix]") {
  ScratchDir dir;
  // No name: it is the file's stem, "plain", which has no prefix.
  const std::string plain =
      dir.Write("plain.yaml", "version: \"1.0\"\npipeline:\n  - {id: a, type: noop}\n");
  {
    NodeProcess node(dir, "strict", NodeArgs(dir.path() + "/strict", {}));
    CmdResult submitted = node.Cli({"submit", plain});
    INFO(submitted.out << submitted.err);
    CHECK(submitted.exit_code == 2);
    CHECK(submitted.err.find("pipeline name 'plain' has no domain prefix") != std::string::npos);
    CHECK(submitted.err.find("--allow-unprefixed-names") != std::string::npos);
    CmdResult added = node.Cli({"pipelines", "add", plain});
    INFO(added.out << added.err);
    CHECK(added.exit_code != 0);
    CHECK(added.err.find("no domain prefix (DOMAIN.NAME, e.g. order.plain)") != std::string::npos);
  }
  NodeProcess open(dir, "open", NodeArgs(dir.path() + "/open", {"--allow-unprefixed-names"}));
  CmdResult ran = open.Cli({"submit", plain, "--wait"});
  INFO(ran.out << ran.err);
  CHECK(ran.exit_code == 0);
  CHECK(open.Cli({"pipelines", "add", plain}).exit_code == 0);
}

}  // namespace apollo11::testing
