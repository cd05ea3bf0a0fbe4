#include "cli/run_follower.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "cli/exit_codes.h"
#include "cli/node.h"
#include "common/stderr_line.h"
#include "engine/task_state.h"
#include "storage/journal.h"

namespace apollo11::cli {
namespace {

std::atomic<int> g_interrupts{0};

extern "C" void OnInterrupt(int) { g_interrupts.fetch_add(1); }

const char* kStateOrder[] = {"PENDING", "READY",   "RUNNING", "RETRYING", "SUCCESS",
                             "FAILED",  "TIMEOUT", "SKIPPED", "CANCELED"};

std::string ProgressLine(const std::vector<uint32_t>& counts, double elapsed) {
  std::string line;
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%7.1fs ", elapsed);
  line += buf;
  for (const char* name : kStateOrder) {
    auto state = ParseTaskState(name);
    uint32_t n = counts.size() > static_cast<size_t>(*state) ? counts[static_cast<int>(*state)] : 0;
    if (n == 0) continue;
    std::snprintf(buf, sizeof(buf), " %s %u", name, n);
    line += buf;
  }
  return line;
}

// Counts of a run's tasks by state, read from the journal (resume mode has
// no RunProgress subscription: the run was submitted by another process).
// The records are read one at a time, not held (a large run's are tens of
// MB); a journal error leaves the counts of the records read before it.
std::vector<uint32_t> CountsFromJournal(storage::Journal& journal, const std::string& run_id) {
  std::vector<uint32_t> counts(kTaskStateCount, 0);
  Status read = journal.ForEachExecutionOfRun(run_id, [&](storage::ExecutionRecord& e) {
    ++counts[static_cast<int>(e.state)];
    return Status::Ok();
  });
  if (!read.ok()) spdlog::warn("progress counts of run {}: {}", run_id, read.ToString());
  return counts;
}

}  // namespace

RunFollower::RunFollower(Node& node, const Options& options)
    : node_(node),
      resume_(options.resume),
      quiet_(options.quiet),
      progress_(!options.quiet && !options.no_progress && ::isatty(STDERR_FILENO) &&
                !StderrIsJson()) {}

void RunFollower::CatchInterrupts() {
  std::signal(SIGINT, OnInterrupt);
  std::signal(SIGTERM, OnInterrupt);
}

FollowHooks RunFollower::Hooks(size_t task_count) {
  FollowHooks hooks;
  hooks.cancel_reason = "canceled by the user (interrupt)";
  // In-process: the node's actors are watched directly. A resumed run was
  // submitted by another process: nothing is pushed, its record is polled.
  hooks.quiet_poll = resume_ ? std::chrono::milliseconds(200) : std::chrono::milliseconds(0);
  hooks.accepted = [this, task_count](const std::string& run_id) {
    if (quiet_) return;
    StderrPrintf(spdlog::level::info, "run_submitted", "run %s started: %zu tasks (state in %s)\n",
                 run_id.c_str(), task_count, node_.config().state_dir.c_str());
  };
  hooks.progress = [this](const std::vector<uint32_t>& counts) { counts_ = counts; };
  hooks.tick = [this](const std::string& run_id) { return Tick(run_id); };
  return hooks;
}

void RunFollower::Finish(const std::string& run_id) {
  if (resume_) counts_ = CountsFromJournal(*node_.journal(), run_id);
  PrintLine(/*finished=*/true);
  if (progress_ && last_line_ != 0) std::fprintf(stderr, "\n");
}

FollowAction RunFollower::Tick(const std::string& run_id) {
  if (g_interrupts.load() > 1) {
    StderrPrintf(spdlog::level::warn, "interrupt",
                 "\napollo11 run: interrupted twice; exiting without waiting\n");
    std::_Exit(kExitAbandoned);
  }
  if (!failure_) failure_ = node_.ActorFailure();
  if (failure_) return FollowAction::kStop;
  if (run_id.empty()) return FollowAction::kContinue;
  if (resume_ && clock_.Now() - last_poll_ >= 200 * kMicrosPerMilli) {
    last_poll_ = clock_.Now();
    if (counts_.empty() || last_poll_ - last_line_ >= kMicrosPerSecond) {
      counts_ = CountsFromJournal(*node_.journal(), run_id);
    }
  }
  PrintLine(/*finished=*/false);
  if (g_interrupts.load() == 0) return FollowAction::kContinue;
  if (!cancel_announced_) {
    StderrPrintf(spdlog::level::warn, "interrupt",
                 "\napollo11 run: canceling run %s (Ctrl-C again to abandon)\n", run_id.c_str());
    cancel_announced_ = true;
  }
  return FollowAction::kCancel;
}

void RunFollower::PrintLine(bool finished) {
  const Micros now = clock_.Now();
  if (!progress_ || counts_.empty()) return;
  if (!finished && now - last_line_ < 100 * kMicrosPerMilli) return;
  std::string line = ProgressLine(counts_, static_cast<double>(now - started_) / kMicrosPerSecond);
  std::fprintf(stderr, "\r\033[K%s", line.c_str());
  last_line_ = now;
}

}  // namespace apollo11::cli
