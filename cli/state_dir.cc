#include "cli/state_dir.h"

#include <cstdlib>

#include "common/clock.h"

namespace apollo11::cli {

std::string ClientStateDir(const std::string& flag, const GetenvFn& getenv) {
  if (!flag.empty()) return flag;
  if (std::string dir = getenv("APOLLO11_STATE_DIR"); !dir.empty()) return dir;
  if (std::string xdg = getenv("XDG_STATE_HOME"); !xdg.empty()) return xdg + "/apollo11";
  if (std::string home = getenv("HOME"); !home.empty()) return home + "/.local/state/apollo11";
  return ".apollo11";
}

std::string NodeStateDir(const std::string& flag, const GetenvFn& getenv) {
  if (!flag.empty()) return flag;
  if (std::string dir = getenv("APOLLO11_STATE_DIR"); !dir.empty()) return dir;
  // systemd's StateDirectory=: a colon-separated list, ours first.
  if (std::string dirs = getenv("STATE_DIRECTORY"); !dirs.empty()) {
    return dirs.substr(0, dirs.find(':'));
  }
  if (!getenv("INVOCATION_ID").empty()) return "/var/lib/apollo11";
  return ClientStateDir(flag, getenv);
}

std::string ResolveStateDir(const std::string& flag) {
  return ClientStateDir(flag, [](const std::string& name) {
    const char* value = std::getenv(name.c_str());
    return std::string(value ? value : "");
  });
}

Result<std::unique_ptr<storage::Journal>> OpenJournalReadOnly(const std::string& flag) {
  storage::JournalOptions options;
  options.read_only = true;
  const std::string dir = ResolveStateDir(flag);
  auto journal = storage::Journal::Open(JournalDir(dir), options);
  if (!journal.ok() && journal.status().code() == StatusCode::kNotFound) {
    return Status::NotFound("no journal in state dir " + dir +
                            " (run a pipeline first, pass --state-dir, or --coordinator)");
  }
  return journal;
}

void PrintRunSummary(const nlohmann::json& summary, std::FILE* out) {
  auto str = [](const nlohmann::json& j, const char* key) {
    return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
  };
  std::fprintf(out, "run %s  %s  %s", str(summary, "run_id").c_str(),
               str(summary, "pipeline").c_str(), str(summary, "state").c_str());
  if (summary.contains("duration_ms")) {
    std::fprintf(out, " after %.3fs", summary["duration_ms"].get<double>() / 1000);
  }
  if (summary.contains("reason")) std::fprintf(out, "  (%s)", str(summary, "reason").c_str());
  if (summary.contains("rerun_of")) {
    std::fprintf(out, "  rerun of %s", str(summary, "rerun_of").c_str());
  }
  std::fprintf(out, "\n");
  // Every task when there are few; only those that did not succeed when many.
  const nlohmann::json& tasks = summary["tasks"];
  const bool all = tasks.size() <= 40;
  size_t shown = 0;
  for (const auto& [id, t] : tasks.items()) {
    if (!all && str(t, "state") == "SUCCESS") continue;
    if (shown == 0) {
      std::fprintf(out, "  %-24s %-9s %8s %5s  %-16s %s\n", "TASK", "STATE", "ATTEMPTS", "EXIT",
                   "WORKER", "ERROR");
    }
    if (++shown > 200) {
      std::fprintf(out, "  ... (use `apollo11 status %s --json` for all)\n",
                   str(summary, "run_id").c_str());
      break;
    }
    // RunSummaryJson gives an exit code only for an attempt that ended by
    // itself: a canceled (killed) task or one that never ran shows none.
    const std::string state = str(t, "state");
    const std::string exit_code = t.contains("exit_code") && t["exit_code"].is_number_integer()
                                      ? std::to_string(t["exit_code"].get<int>())
                                      : "-";
    std::fprintf(out, "  %-24s %-9s %8d %5s  %-16s %s\n", id.c_str(), state.c_str(),
                 t.value("attempts", 0), exit_code.c_str(), str(t, "worker").c_str(),
                 t.contains("reused_from") ? ("reused from " + str(t, "reused_from")).c_str()
                                           : str(t, "error").c_str());
    if (str(t, "slow") == "flagged") {
      std::fprintf(out,
                   "  %-24s SLOW: flagged slow (%s); waiting for `apollo11 confirm %s "
                   "--kill|--keep`\n",
                   "", str(t, "slow_reason").c_str(), str(t, "exec_id").c_str());
    } else if (str(t, "slow") == "kept") {
      std::fprintf(out, "  %-24s slow (%s), kept by the operator\n", "",
                   str(t, "slow_reason").c_str());
    }
  }
  if (summary.contains("tasks_omitted")) {
    std::fprintf(out,
                 "  %s more tasks are not listed: the status was cut to fit a client frame "
                 "(64 MiB)\n",
                 summary["tasks_omitted"].dump().c_str());
  }
}

}  // namespace apollo11::cli
