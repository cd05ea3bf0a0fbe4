#pragma once
// The standard process_* series every Prometheus client library exports
// (CPU seconds, resident and virtual memory, open and maximum file
// descriptors, start time), read from /proc/self at scrape time, and
// apollo11_build_info. Linux only: where /proc cannot be read a series
// reads 0.

#include <string>

#include "observability/metrics_registry.h"

namespace apollo11::observability {

// Registers the process_* series on `registry`. Call once per registry.
void AddProcessMetrics(Registry& registry);

// Registers apollo11_build_info{version,commit} 1. Call once per registry.
void AddBuildInfo(Registry& registry, const std::string& version, const std::string& commit);

// The fields of /proc/self/stat the process_* series need, in base units.
struct ProcStat {
  double cpu_seconds = 0;     // utime + stime
  double start_seconds = 0;   // since boot
  double virtual_bytes = 0;   // vsize
  double resident_bytes = 0;  // rss pages * page size
};

// Parses the text of a /proc/PID/stat file; nullopt-like: false when it is
// not one (the fields after the command name are counted from its last ')',
// which may itself contain spaces and parentheses).
bool ParseProcStat(const std::string& text, ProcStat* out);

}  // namespace apollo11::observability
