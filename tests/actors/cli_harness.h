#pragma once
// Test helpers that drive the real `apollo11` binary: a scratch directory per
// test, files written into it, commands run with their exit code and output.

#include <signal.h>
#include <sys/types.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace apollo11::testing {

struct CmdResult {
  int exit_code = -1;
  std::string out, err;
};

// A fresh directory under /tmp, removed when the object dies.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  const std::string& path() const { return path_; }
  std::string Write(const std::string& name, const std::string& content) const;
  std::string Read(const std::string& name) const;
  bool Exists(const std::string& name) const;

 private:
  std::string path_;
};

// Path of the apollo11 binary under test.
std::string Apollo11();

// Runs argv (argv[0] searched on PATH) to completion in `cwd`; a command still
// running after 300 s (APOLLO11_TEST_CMD_TIMEOUT_S) is killed: exit code 124,
// and a line saying so on the test's stderr and at the end of `err`.
CmdResult Run(const std::vector<std::string>& argv, const std::string& cwd = "");

// Starts argv in the background with stdout/stderr to files under `dir`.
pid_t Spawn(const std::vector<std::string>& argv, const std::string& dir);
// Same, with stdout/stderr in DIR/NAME.out and DIR/NAME.err.
pid_t SpawnNamed(const std::vector<std::string>& argv, const std::string& dir,
                 const std::string& name);
// Waits for `pid` up to `timeout_ms`; returns its exit code, or -1 on timeout
// (the process is then killed).
int WaitExit(pid_t pid, int timeout_ms);

// Polls `predicate` every 20 ms for up to `timeout_ms`.
bool WaitFor(const std::function<bool()>& predicate, int timeout_ms);

// True while a process with this pid exists.
bool Alive(pid_t pid);

// A layered DAG of `n` tasks in `depth` layers as Apollo-11 YAML.
std::string LayeredDag(int n, int depth, const std::string& type, unsigned seed);

nlohmann::json ParseJson(const std::string& text);

// The lines of `text` that are not empty, without their newlines.
std::vector<std::string> NonEmptyLines(const std::string& text);

}  // namespace apollo11::testing
