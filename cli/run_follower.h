#pragma once
// RunFollower: the live side of `apollo11 run` (cli/run_command.cc) while
// its run goes on: progress lines on stderr, Ctrl-C (first: cancel, second:
// exit at once), and a watch on the node's actors. The progress line is
// redrawn in place, only on a terminal in text format and without
// --no-progress or --quiet: otherwise stderr holds log records (in JSON, one
// object per line), not a stream of progress.
//
// Threads: the command's thread uses it (its hooks run inside
// RemoteCoordinator's follow, on that thread); the signal handler that
// CatchInterrupts installs only counts.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli/remote.h"
#include "common/clock.h"
#include "common/status.h"

namespace apollo11::cli {

class Node;

class RunFollower {
 public:
  struct Options {
    bool resume = false;  // the run was submitted by another process (--resume)
    bool quiet = false;   // --quiet: no start line, no progress
    bool no_progress = false;
  };
  // `node` runs the run's actors and outlives the follower.
  RunFollower(Node& node, const Options& options);

  // From now on SIGINT and SIGTERM are counted for the follow, never
  // default-handled: the first cancels the run, the second exits at once
  // (kExitAbandoned).
  static void CatchInterrupts();

  // The hooks to follow the run with (`task_count`: for the start line).
  FollowHooks Hooks(size_t task_count);

  // The last progress line, once the run ended (from the journal when resumed).
  void Finish(const std::string& run_id);

  // Why the follow was stopped early, if an actor died.
  const std::optional<Status>& failure() const { return failure_; }

 private:
  FollowAction Tick(const std::string& run_id);
  void PrintLine(bool finished);

  Node& node_;
  const bool resume_;
  const bool quiet_;
  const bool progress_;  // progress lines: a terminal, and neither --quiet nor --no-progress
  SystemClock clock_;
  const Micros started_ = clock_.Now();
  Micros last_poll_ = 0, last_line_ = 0;
  std::vector<uint32_t> counts_;
  bool cancel_announced_ = false;
  std::optional<Status> failure_;
};

}  // namespace apollo11::cli
