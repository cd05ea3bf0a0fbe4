// A task log that could not be written in full (the disk filled up; here a
// file size limit on the real `apollo11 run`, which makes writes fail with
// EFBIG) is recorded on the execution, and `apollo11 logs` says so.

#include <catch2/catch.hpp>
#include <string>

#include "tests/actors/cli_harness.h"

using namespace apollo11::testing;  // NOLINT: test file

TEST_CASE("a log write that failed is journaled and apollo11 logs reports it", "[cli][logs]") {
  ScratchDir dir;
  const std::string state = dir.path() + "/s";
  const std::string file = dir.Write("p.yaml", R"(version: "1.0"
name: test.fulldisk
pipeline:
  - id: big
    type: shell
    command: "head -c 3000000 /dev/zero | tr '\\0' x"
  - id: small
    type: shell
    command: "echo fine"
)");
  // 2 MB per file: the journal (~100 KB) fits, the 3 MB log does not.
  CmdResult run = Run({"prlimit", "--fsize=2000000:2000000", "--", Apollo11(), "run", file,
                       "--state-dir", state, "--json"});
  INFO(run.err);
  REQUIRE(run.exit_code == 0);  // the task's outcome does not depend on its log
  const std::string run_id = ParseJson(run.out)["run_id"];

  auto status = ParseJson(Run({Apollo11(), "status", run_id, "--state-dir", state, "--json"}).out);
  INFO(status.dump());
  CHECK(status["tasks"]["big"]["logs_truncated"] ==
        "stdout: file size limit reached (File too large) after 2000000 bytes");
  CHECK_FALSE(status["tasks"]["small"].contains("logs_truncated"));

  CmdResult logs = Run({Apollo11(), "logs", run_id + ".big", "--state-dir", state});
  CHECK(logs.exit_code == 4);
  CHECK(logs.out.size() == 2000000);
  CHECK(logs.err.find("warning: the log of " + run_id +
                      ".big attempt 1 is incomplete: file size limit reached") !=
        std::string::npos);
  // The other stream and the other task are whole: no warning.
  CmdResult err = Run({Apollo11(), "logs", run_id + ".big", "--stderr", "--state-dir", state});
  CHECK(err.exit_code == 0);
  CmdResult small = Run({Apollo11(), "logs", run_id + ".small", "--state-dir", state});
  CHECK(small.exit_code == 0);
  CHECK(small.out == "fine\n");
  CHECK(small.err.empty());
}
