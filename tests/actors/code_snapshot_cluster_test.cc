// A python task's code is part of the pipeline's version (docs/dsl.md, "The
// code in a version"), through the real binaries: a coordinator, a worker,
// and `apollo11 pipelines add / trigger / rerun / diff`. The script appends
// its version word to a ledger, so what ran is seen after the file is gone.

#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/actors/cli_harness.h"
#include "tests/actors/cluster_harness.h"

namespace apollo11::testing {
namespace {

std::string Endpoint() { return "tcp://127.0.0.1:" + std::to_string(FreeTcpPort()); }

std::string Script(const std::string& word, const std::string& ledger) {
  return "import sys\nwith open(" + nlohmann::json(ledger).dump() + ", 'a') as f:\n    f.write('" +
         word + " ' + ' '.join(sys.argv[1:]) + '\\n')\n";
}

// The pipeline, with `comment` lines first and the script named as `script`.
std::string Pipeline(const std::string& comment, const std::string& script) {
  return comment + "version: \"1.0\"\nname: test.code\npipeline:\n" + comment +
         "  - id: job\n    type: python\n    script: " + script + "\n    args: [\"x\"]\n";
}

}  // namespace

TEST_CASE(
    "a python task runs the code registered, not the file: one version from four paths, the "
    "file deleted, a rerun after an edit runs the old code, and diff shows the change",
    "[cluster][code]") {
  ScratchDir dir;
  NodeProc coord = StartNode(
      dir, "coord", {"--role", "coordinator", "--bind", Endpoint(), "--api-bind", Endpoint()});
  NodeProc w1 = StartWorker(dir, coord, "w1", 2);
  Nodes guard{{&coord, &w1}};
  REQUIRE(WaitFor([&] { return WorkerCount(coord) == 1; }, 5000));
  const std::string ledger = dir.path() + "/ledger";
  dir.Write("jobs/job.py", Script("v1", ledger));
  dir.Write("reg.yaml", Pipeline("", "jobs/job.py"));
  // The same content elsewhere, with comments moving every line, from
  // another directory: still the same version.
  dir.Write("other/moved.yaml", Pipeline("# a comment\n\n", "../jobs/job.py"));
  const std::string parent = std::filesystem::path(dir.path()).parent_path().string();
  const std::string base = std::filesystem::path(dir.path()).filename().string();
  struct Spelling {
    std::string cwd, path;
  };
  const std::vector<Spelling> spellings = {{dir.path(), "reg.yaml"},
                                           {dir.path(), "./reg.yaml"},
                                           {"/", dir.path() + "/reg.yaml"},
                                           {parent, base + "/reg.yaml"},
                                           {dir.path() + "/other", "moved.yaml"}};
  for (size_t i = 0; i < spellings.size(); ++i) {
    CmdResult added = Cli(coord, {"pipelines", "add", spellings[i].path}, spellings[i].cwd);
    INFO(spellings[i].path << " in " << spellings[i].cwd << ": " << added.out << added.err);
    REQUIRE(added.exit_code == 0);
    CHECK(added.out.rfind("test.code@1", 0) == 0);
    CHECK((added.out.find("unchanged") != std::string::npos) == (i > 0));
  }

  // No worker can read the file any more: the run uses the registered code.
  std::filesystem::remove(dir.path() + "/jobs/job.py");
  CmdResult first = Cli(coord, {"trigger", "test.code", "--wait"});
  INFO(first.out << first.err << dir.Read("w1.err"));
  REQUIRE(first.exit_code == 0);
  const std::string run1 = first.out.substr(0, first.out.find('\n'));
  CHECK(NonEmptyLines(dir.Read("ledger")) == std::vector<std::string>{"v1 x"});

  // An edited script is a new version, and diff shows the line that changed.
  dir.Write("jobs/job.py", Script("v2", ledger));
  CmdResult second = Cli(coord, {"pipelines", "add", "reg.yaml"}, dir.path());
  INFO(second.out << second.err);
  CHECK(second.out.rfind("test.code@2", 0) == 0);
  CmdResult diff = Cli(coord, {"pipelines", "diff", "test.code", "1", "2"});
  INFO(diff.out << diff.err);
  CHECK(diff.exit_code == 0);
  CHECK(diff.out.find("- .tasks.job.code:3: \"    f.write('v1 '") != std::string::npos);
  CHECK(diff.out.find("+ .tasks.job.code:3: \"    f.write('v2 '") != std::string::npos);
  CHECK(NonEmptyLines(diff.out).size() == 4);  // the two headers and the two lines

  // A rerun of the first run runs the first run's code; a new run the new.
  CmdResult rerun = Cli(coord, {"rerun", run1, "--from", "job", "--wait"});
  INFO(rerun.out << rerun.err);
  CHECK(rerun.exit_code == 0);
  CmdResult latest = Cli(coord, {"trigger", "test.code", "--wait"});
  CHECK(latest.exit_code == 0);
  CHECK(NonEmptyLines(dir.Read("ledger")) == std::vector<std::string>{"v1 x", "v1 x", "v2 x"});
}

TEST_CASE("a python task given its code inline runs it, and script with code is refused",
          "[cluster][code]") {
  ScratchDir dir;
  const std::string ledger = dir.path() + "/ledger";
  const std::string file =
      dir.Write("p.yaml",
                "version: \"1.0\"\nname: test.inline\npipeline:\n  - id: job\n    type: python\n"
                "    code: |\n      import sys\n      open(" +
                    nlohmann::json(ledger).dump() +
                    ", 'a').write('inline ' + __file__.rsplit('/', 1)[-1] + '\\n')\n");
  CmdResult ran = Run({Apollo11(), "run", file, "--state-dir", dir.path() + "/state"});
  INFO(ran.out << ran.err);
  CHECK(ran.exit_code == 0);
  CHECK(NonEmptyLines(dir.Read("ledger")) == std::vector<std::string>{"inline task.py"});

  dir.Write("s.py", "print(1)\n");
  const std::string both =
      dir.Write("both.yaml",
                "version: \"1.0\"\nname: test.both\npipeline:\n  - id: job\n    type: python\n"
                "    script: s.py\n    code: \"print(2)\"\n");
  CmdResult refused = Run({Apollo11(), "validate", both});
  CHECK(refused.exit_code == 2);
  CHECK(refused.err.find("takes 'script' (a file, read now) or 'code'") != std::string::npos);
  const std::string neither =
      dir.Write("neither.yaml",
                "version: \"1.0\"\nname: test.neither\npipeline:\n  - {id: job, type: python}\n");
  CmdResult missing = Run({Apollo11(), "validate", neither});
  CHECK(missing.exit_code == 2);
  CHECK(missing.err.find("needs 'script' or 'code'") != std::string::npos);
}

}  // namespace apollo11::testing
