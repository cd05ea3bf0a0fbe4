#pragma once
// Lines a command writes to stderr itself rather than through the logger:
// `apollo11 run`'s start line, notes and errors, a node's start-up errors.
// In text mode they are printed as given; once SetStderrJson(true) (what
// SetUpLogging does for --log-format json) each becomes one JSON object
// like a log record ({"ts","level","node","actor","event","msg"}), so every
// line of stderr is one JSON object, as a log shipper expects.

#include <spdlog/common.h>

namespace apollo11 {

// Chooses the format of StderrPrintf. Any thread; takes effect at once.
void SetStderrJson(bool json);
bool StderrIsJson();

// printf to stderr in text mode; in JSON mode one record at `level` with
// `event`, whose msg is the formatted text without its leading and trailing
// newlines. Written whatever the log level: this is the command's output.
void StderrPrintf(spdlog::level::level_enum level, const char* event, const char* format, ...)
    __attribute__((format(printf, 3, 4)));

}  // namespace apollo11
