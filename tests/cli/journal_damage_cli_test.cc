// A damaged journal data file (cut to half, emptied, or replaced by garbage)
// makes every command that opens it exit with a clear message and an exit
// code, never by a signal: LMDB maps the file, and a read past its end would
// be SIGBUS.

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <string>
#include <vector>

#include "tests/actors/cli_harness.h"
#include "tests/actors/cluster_harness.h"

using namespace apollo11::testing;  // NOLINT: test file

namespace {

// Runs a pipeline embedded in state dir `state` so its journal holds real
// pages; returns the run id.
std::string MakeJournal(const ScratchDir& dir, const std::string& state) {
  std::string yaml = "version: \"1.0\"\nname: test.damage\npipeline:\n";
  for (int i = 0; i < 40; ++i) {
    yaml += "  - id: t" + std::to_string(i) + "\n    type: shell\n    command: \"echo " +
            std::string(200, 'x') + "\"\n";
  }
  CmdResult run =
      Run({Apollo11(), "run", dir.Write("p.yaml", yaml), "--state-dir", state, "--json"});
  REQUIRE(run.exit_code == 0);
  return ParseJson(run.out)["run_id"];
}

off_t SizeOf(const std::string& path) {
  struct stat st;
  REQUIRE(stat(path.c_str(), &st) == 0);
  return st.st_size;
}

// Every command that opens the journal refuses it with `expected` in its
// message and a plain exit code (not 128 + a signal).
void CheckRefused(const ScratchDir& dir, const std::string& state, const std::string& run_id,
                  const std::string& expected) {
  const std::vector<std::vector<std::string>> commands = {
      {Apollo11(), "status", run_id, "--state-dir", state},
      {Apollo11(), "runs", "--state-dir", state},
      {Apollo11(), "history", run_id, "--state-dir", state},
      {Node(), "start", "--role", "coordinator", "--state-dir", state, "--bind",
       "tcp://127.0.0.1:0", "--api-bind", "tcp://127.0.0.1:0", "--http-bind", "127.0.0.1:0"},
  };
  for (const auto& argv : commands) {
    // Bounded: a node that accepted the file would run until killed.
    CmdResult r;
    const pid_t pid = SpawnNamed(argv, dir.path(), "cmd");
    r.exit_code = WaitExit(pid, 10000);
    r.err = dir.Read("cmd.err");
    INFO(argv[0] << " " << argv[1] << ": exit " << r.exit_code << ", stderr: " << r.err);
    CHECK(r.exit_code > 0);
    CHECK(r.exit_code < 128);
    CHECK(r.err.find(expected) != std::string::npos);
    CHECK(r.err.find("docs/operations.md") != std::string::npos);
  }
}

}  // namespace

TEST_CASE("a journal cut to half its size is refused with a clear message, not SIGBUS",
          "[cli][storage]") {
  ScratchDir dir;
  const std::string state = dir.path() + "/s";
  const std::string run_id = MakeJournal(dir, state);
  const std::string data = state + "/journal/data.mdb";
  const off_t size = SizeOf(data);
  REQUIRE(size >= 8 * 4096);
  REQUIRE(truncate(data.c_str(), size / 2) == 0);
  CheckRefused(dir, state, run_id, "the file was cut short");
}

TEST_CASE("an empty journal data file is refused, not silently recreated", "[cli][storage]") {
  ScratchDir dir;
  const std::string state = dir.path() + "/s";
  const std::string run_id = MakeJournal(dir, state);
  REQUIRE(truncate((state + "/journal/data.mdb").c_str(), 0) == 0);
  CheckRefused(dir, state, run_id, "is empty (0 bytes)");
}

TEST_CASE("a journal data file full of garbage is refused", "[cli][storage]") {
  ScratchDir dir;
  const std::string state = dir.path() + "/s";
  const std::string run_id = MakeJournal(dir, state);
  const std::string data = state + "/journal/data.mdb";
  const off_t size = SizeOf(data);
  {
    std::ofstream out(data, std::ios::binary | std::ios::trunc);
    for (off_t i = 0; i < size; ++i) out.put(static_cast<char>((i * 7919) & 0xff));
  }
  CheckRefused(dir, state, run_id, "is not an LMDB data file");
}

TEST_CASE("a worker outbox cut short is refused with a clear message, not SIGBUS",
          "[cli][storage]") {
  ScratchDir dir;
  const std::string endpoint = "tcp://127.0.0.1:" + std::to_string(FreeTcpPort());
  NodeProc worker = StartWorkerAt(dir, endpoint, "w1", 1);
  ::kill(worker.pid, SIGTERM);
  REQUIRE(WaitExit(worker.pid, 10000) == 0);
  const std::string data = dir.path() + "/w1/worker-w1/outbox/data.mdb";
  REQUIRE(SizeOf(data) > 4096);
  REQUIRE(truncate(data.c_str(), 4096) == 0);
  const pid_t again = SpawnNamed({Node(), "start", "--role", "worker", "--connect", endpoint,
                                  "--worker-id", "w1", "--state-dir", dir.path() + "/w1"},
                                 dir.path(), "again");
  const int code = WaitExit(again, 10000);
  const std::string err = dir.Read("again.err");
  INFO("exit " << code << ", stderr: " << err);
  CHECK(code > 0);
  CHECK(code < 128);
  CHECK(err.find("worker outbox data file") != std::string::npos);
  CHECK(err.find("the file was cut short") != std::string::npos);
}
