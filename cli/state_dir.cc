#include "cli/state_dir.h"

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdlib>

#include "common/clock.h"
#include "common/duration.h"

namespace apollo11::cli {

std::string ResolveStateDir(const std::string& flag) {
  if (!flag.empty()) return flag;
  if (const char* env = std::getenv("APOLLO11_STATE_DIR"); env && *env) return env;
  return ".apollo11";
}

void SetUpLogging(const std::string& level) {
  auto logger = spdlog::stderr_color_mt("apollo11");
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ [%t] %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(level));
}

void PrintRunSummary(const storage::RunRecord& run,
                     const std::vector<storage::ExecutionRecord>& execs, std::FILE* out) {
  const Micros end = run.finished_at ? run.finished_at : SystemClock().Now();
  std::fprintf(out, "run %s  %s  %s after %.3fs", run.run_id.c_str(), run.pipeline_name.c_str(),
               ToString(run.status), static_cast<double>(end - run.started_at) / kMicrosPerSecond);
  if (!run.reason.empty()) std::fprintf(out, "  (%s)", run.reason.c_str());
  std::fprintf(out, "\n");
  const bool all = execs.size() <= 40;
  size_t shown = 0;
  for (const storage::ExecutionRecord& e : execs) {
    if (!all && e.state == TaskState::kSuccess) continue;
    if (shown == 0) {
      std::fprintf(out, "  %-24s %-9s %8s %5s  %s\n", "TASK", "STATE", "ATTEMPTS", "EXIT",
                   "DETAIL");
    }
    if (++shown > 200) {
      std::fprintf(out, "  ... (use `apollo11 status %s --json` for all)\n", run.run_id.c_str());
      break;
    }
    std::string detail = e.error;
    if (e.state == TaskState::kSuccess && e.finished_at && e.started_at) {
      detail = FormatDuration(Millis((e.finished_at - e.started_at) / kMicrosPerMilli));
    }
    std::fprintf(out, "  %-24s %-9s %8u %5d  %s\n", e.task_id.c_str(), ToString(e.state), e.attempt,
                 e.exit_code, detail.c_str());
  }
}

}  // namespace apollo11::cli
