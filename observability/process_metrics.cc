#include "observability/process_metrics.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <vector>

#include "common/small_file.h"

namespace apollo11::observability {
namespace {

constexpr size_t kProcFileCap = 64 * 1024;

double TicksPerSecond() {
  const long t = ::sysconf(_SC_CLK_TCK);
  return t > 0 ? static_cast<double>(t) : 100.0;
}

ProcStat ReadSelfStat() {
  ProcStat st;
  if (auto text = ReadSmallFile("/proc/self/stat", kProcFileCap)) ParseProcStat(*text, &st);
  return st;
}

// The boot time (seconds since the epoch) from /proc/stat's btime line; 0
// when it cannot be read.
double BootTimeSeconds() {
  auto text = ReadSmallFile("/proc/stat", kProcFileCap);
  if (!text) return 0;
  const size_t at = text->find("\nbtime ");
  if (at == std::string::npos) return 0;
  return std::strtod(text->c_str() + at + 7, nullptr);
}

double OpenFds() {
  std::error_code ec;
  double n = 0;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end;
       it.increment(ec)) {
    ++n;
  }
  // The iterator's own descriptor is one of them.
  return n > 0 ? n - 1 : 0;
}

double MaxFds() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return 0;
  return static_cast<double>(limit.rlim_cur);
}

}  // namespace

bool ParseProcStat(const std::string& text, ProcStat* out) {
  const size_t close = text.rfind(')');
  if (close == std::string::npos) return false;
  // Field 3 (state) is the first after ") "; fields are numbered from 1.
  std::istringstream rest(text.substr(close + 1));
  std::vector<std::string> fields;
  for (std::string f; rest >> f && fields.size() < 22;) fields.push_back(f);
  if (fields.size() < 22) return false;
  auto field = [&](int n) { return std::strtod(fields[n - 3].c_str(), nullptr); };
  const double ticks = TicksPerSecond();
  out->cpu_seconds = (field(14) + field(15)) / ticks;
  out->start_seconds = field(22) / ticks;
  out->virtual_bytes = field(23);
  out->resident_bytes = field(24) * static_cast<double>(::sysconf(_SC_PAGESIZE));
  return true;
}

void AddProcessMetrics(Registry& r) {
  r.AddComputedCounter("process_cpu_seconds_total",
                       "Total user and system CPU time spent in seconds.",
                       [] { return ReadSelfStat().cpu_seconds; });
  r.AddComputedGauge("process_resident_memory_bytes", "Resident memory size in bytes.",
                     [] { return ReadSelfStat().resident_bytes; });
  r.AddComputedGauge("process_virtual_memory_bytes", "Virtual memory size in bytes.",
                     [] { return ReadSelfStat().virtual_bytes; });
  r.AddComputedGauge("process_open_fds", "Number of open file descriptors.", OpenFds);
  r.AddComputedGauge("process_max_fds", "Maximum number of open file descriptors.", MaxFds);
  // Fixed for the process's life: computed once.
  const double start = BootTimeSeconds() + ReadSelfStat().start_seconds;
  r.AddComputedGauge("process_start_time_seconds",
                     "Start time of the process since unix epoch in seconds.",
                     [start] { return start; });
}

void AddBuildInfo(Registry& r, const std::string& version, const std::string& commit) {
  r.AddComputedGauge("apollo11_build_info",
                     "Always 1; the labels name the version and git commit of this binary.",
                     [] { return 1.0; }, {{"version", version}, {"commit", commit}});
}

}  // namespace apollo11::observability
