#pragma once
// Reads back a node's JSON log file (and its rotated predecessors) to find
// the lines about one execution, for `apollo11 trace`. Bounded: at most
// `max_bytes` are read, from the newest end, so a long-lived node's logs
// cost a caller a known amount.

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"

namespace apollo11 {

// Default bound on what one scan reads: the last 32 MiB of a node's logs.
constexpr uint64_t kLogScanBytes = 32ull << 20;

// Log file names of `path` oldest first: the rotated PATH_STEM.N.EXT files
// spdlog's rotating sink leaves (highest N first), then `path` itself; only
// those that exist.
std::vector<std::string> LogFilesOldestFirst(const std::string& path);

// The lines of `path` and its rotated files that contain `needle`, oldest
// first, reading no more than the newest `max_bytes` of them. A missing file
// is no error (no lines).
Result<std::vector<std::string>> ScanLogLines(const std::string& path, const std::string& needle,
                                              uint64_t max_bytes = kLogScanBytes);

}  // namespace apollo11
