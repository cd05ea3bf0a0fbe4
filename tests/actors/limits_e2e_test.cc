// Pipelines at the size limits, through the real binaries: a task with
// 10,000 dependencies (its DISPATCH once broke the worker's frame limit and
// was dropped), a join over 70 outputs of 40 KB and a 200 KB parameter (once
// "Argument list too long" because every input went into the environment).

#include <catch2/catch.hpp>
#include <chrono>
#include <sstream>

#include "tests/actors/cli_harness.h"
#include "tests/actors/cluster_harness.h"

using namespace apollo11::testing;  // NOLINT: test file

namespace {

// `fan_in` upstreams (the first `shells` print their id, the rest are noop)
// and a join that checks it sees every upstream's output file, then prints
// how many it saw.
std::string WideJoin(int fan_in, int shells) {
  std::ostringstream y;
  y << "version: \"1.0\"\nname: test.wide_join\npipeline:\n";
  for (int i = 0; i < fan_in; ++i) {
    if (i < shells) {
      y << "  - {id: u" << i << ", type: shell, command: \"echo up" << i << "\"}\n";
    } else {
      y << "  - {id: u" << i << ", type: noop}\n";
    }
  }
  y << "  - id: join\n    type: shell\n    command: >-\n"
    << "      test \"$(cat \"$APOLLO11_INPUTS_DIR/outputs/u0\")\" = up0 &&\n"
    << "      echo \"saw $(ls \"$APOLLO11_INPUTS_DIR/outputs\" | wc -l)\"\n"
    << "    depends_on: [";
  for (int i = 0; i < fan_in; ++i) y << (i ? ", u" : "u") << i;
  y << "]\n";
  return y.str();
}

nlohmann::json SummaryOf(const CmdResult& r) {
  const size_t brace = r.out.find('{');
  return brace == std::string::npos ? nlohmann::json() : ParseJson(r.out.substr(brace));
}

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

}  // namespace

TEST_CASE("a task with 10000 dependencies runs to SUCCESS under apollo11 run", "[limits][e2e]") {
  ScratchDir dir;
  const std::string file = dir.Write("wide.yaml", WideJoin(10'000, 20));
  const auto t0 = std::chrono::steady_clock::now();
  CmdResult r =
      Run({Apollo11(), "run", file, "--state-dir", dir.path() + "/state", "--json"}, dir.path());
  INFO(r.err);
  const double took = Seconds(t0);
  CHECK(took < 180);  // ~55 s on a busy 2-core machine, most of it 10,000 noop tasks
  auto summary = SummaryOf(r);
  REQUIRE(summary.is_object());
  CHECK(summary["tasks"]["join"]["state"] == "SUCCESS");
  CHECK(summary["state"] == "SUCCESS");
  CHECK(r.exit_code == 0);
  CmdResult out = Run({Apollo11(), "logs", std::string(summary["run_id"]) + ".join", "--state-dir",
                       dir.path() + "/state"},
                      dir.path());
  CHECK(out.out.find("saw 10000") != std::string::npos);
}

TEST_CASE("a task with 10000 dependencies runs on a coordinator and a worker",
          "[limits][cluster]") {
  ScratchDir dir;
  NodeProc coord = StartCoordinator(dir);
  NodeProc w1 = StartWorker(dir, coord, "w1", 2);
  Nodes guard{{&coord, &w1}};
  REQUIRE(WaitFor([&] { return WorkerCount(coord) == 1; }, 5000));
  const std::string file = dir.Write("wide.yaml", WideJoin(10'000, 20));
  const auto t0 = std::chrono::steady_clock::now();
  // The coordinator answers once the run's 10,001 records are journaled:
  // seconds under ASan on a loaded 2-core box, past the CLI's default 10 s.
  CmdResult r = Cli(coord, {"submit", file, "--wait", "--json", "--timeout", "120"});
  INFO(r.err);
  CHECK(Seconds(t0) < 180);
  auto summary = SummaryOf(r);
  REQUIRE(summary.is_object());
  INFO(summary["tasks"]["join"].dump());
  CHECK(summary["tasks"]["join"]["state"] == "SUCCESS");
  CHECK(summary["state"] == "SUCCESS");
}

TEST_CASE("a join over 70 upstreams of 40 KB each reads every output whole", "[limits][e2e]") {
  ScratchDir dir;
  std::ostringstream y;
  y << "version: \"1.0\"\nname: test.big_join\npipeline:\n";
  for (int i = 0; i < 70; ++i) {
    // 40,000 bytes: 4,000 lines of "xxxxxxxxx\n".
    y << "  - {id: u" << i << ", type: shell, command: \"yes xxxxxxxxx | head -n 4000\"}\n";
  }
  y << "  - id: join\n    type: shell\n    command: >-\n"
    << "      test \"$(cat \"$APOLLO11_INPUTS_DIR\"/outputs/* | wc -c)\" -eq 2800000 &&\n"
    << "      test -z \"${APOLLO11_OUTPUT_U0+set}\" && echo \"$APOLLO11_INPUTS_DIR\"\n"
    << "    depends_on: [";
  for (int i = 0; i < 70; ++i) y << (i ? ", u" : "u") << i;
  y << "]\n";
  const std::string file = dir.Write("join.yaml", y.str());
  CmdResult r =
      Run({Apollo11(), "run", file, "--state-dir", dir.path() + "/state", "--json"}, dir.path());
  INFO(r.err);
  auto summary = SummaryOf(r);
  REQUIRE(summary.is_object());
  INFO(summary["tasks"]["join"].dump());
  CHECK(summary["tasks"]["join"]["state"] == "SUCCESS");
  CHECK(r.exit_code == 0);
  // The execution's inputs directory is gone once it has ended.
  CmdResult out = Run({Apollo11(), "logs", std::string(summary["run_id"]) + ".join", "--state-dir",
                       dir.path() + "/state"},
                      dir.path());
  const std::string inputs_dir = out.out.substr(0, out.out.find('\n'));
  CHECK(inputs_dir.find("/apollo11-inputs-") != std::string::npos);
  CHECK(Run({"test", "-e", inputs_dir}).exit_code == 1);
}

TEST_CASE("a 200 KB parameter reaches the task through its file", "[limits][e2e]") {
  ScratchDir dir;
  const std::string big(200'000, 'p');
  const std::string file = dir.Write("param.yaml", R"(version: "1.0"
name: test.big_param
params:
  small: "hello"
  big: ")" + big + R"yaml("
pipeline:
  - id: use
    type: shell
    command: >-
      test "$(wc -c < "$APOLLO11_INPUTS_DIR/params/big")" -eq 200000 &&
      test -z "${APOLLO11_PARAM_BIG+set}" &&
      test "$APOLLO11_PARAM_SMALL" = hello &&
      test "$(cat "$APOLLO11_INPUTS_DIR/params/small")" = hello && echo used
)yaml");
  CmdResult r =
      Run({Apollo11(), "run", file, "--state-dir", dir.path() + "/state", "--json"}, dir.path());
  INFO(r.err);
  auto summary = SummaryOf(r);
  REQUIRE(summary.is_object());
  INFO(summary["tasks"]["use"].dump());
  CHECK(summary["tasks"]["use"]["state"] == "SUCCESS");
  CHECK(r.exit_code == 0);
}
