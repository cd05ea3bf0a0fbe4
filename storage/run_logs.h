#pragma once
// The task log files of runs in a state dir, for retention. The executor
// writes LOG_DIR/<exec_id>.<attempt>.out and .err, exec_id = RUN_ID.TASK_ID
// ('/' replaced by '_'); `apollo11 run` uses STATE_DIR/logs and a node's
// workers STATE_DIR/worker-ID/logs. Workers on other machines keep their logs
// there: they are not reachable from here.

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace apollo11::storage {

// The log directories under `state_dir` that exist: logs/ and worker-*/logs/.
std::vector<std::string> RunLogDirs(const std::string& state_dir);

struct LogRemoval {
  uint64_t files = 0;
  uint64_t bytes = 0;
  std::vector<std::string> errors;  // files that could not be removed, with why
};

// Removes every log file of `run_ids` in `dirs` (with `dry_run`, only counts
// them). Matching is on the file name up to its first '.', so one directory
// listing serves any number of runs. Any thread; touches only those files.
LogRemoval RemoveRunLogs(const std::vector<std::string>& dirs, const std::set<std::string>& run_ids,
                         bool dry_run);

}  // namespace apollo11::storage
