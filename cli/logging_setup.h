#pragma once
// Where a process's log lines go: stderr in the chosen format, and, when a
// file is named, a size-capped rotating copy in JSON whatever the stderr
// format (`apollo11 trace` reads it back).

#include <string>

#include "common/status.h"

namespace apollo11::cli {

struct LogSettings {
  std::string level = "info";     // trace, debug, info, warn, error, off
  std::string format;             // "json", "text", or empty: text on a terminal, else json
  std::string file;               // the JSON copy, e.g. STATE_DIR/coordinator.log; empty: none
  size_t file_bytes = 16u << 20;  // per file, before rotating
  size_t file_count = 3;          // rotated files kept besides the current one
};

// Installs the default logger. Errors: a bad format or level, or a log file
// that cannot be opened. Call once, in main, before actors start.
Status SetUpLogging(const LogSettings& settings);

// Reopens the log file of `settings` (as given to SetUpLogging) under the
// default logger, so that a file renamed away (logrotate) is replaced by a
// new one at its path. Any thread; lines logged meanwhile go to the old or
// the new file. Errors: the file cannot be opened (the old one stays).
Status ReopenLogFile(const LogSettings& settings);

// "coordinator@HOST": the `node` of a coordinator's log lines.
std::string CoordinatorLogNode();

}  // namespace apollo11::cli
