#include "cli/state_dir.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "common/clock.h"

namespace apollo11::cli {

Status EnsureWritableStateDir(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) {
    return Status::InvalidInput("state dir " + dir + " cannot be created: " + ec.message() +
                                " (give --state-dir a writable directory)");
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) {
    return Status::InvalidInput("state dir " + dir + " is not writable: " + std::strerror(errno) +
                                " (the journal and logs live there; give --state-dir a writable "
                                "directory)");
  }
  return Status::Ok();
}

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

namespace {

// PrintRunSummary's table: every task of a run of at most this many, else
// only those that did not succeed, at most kMaxListed of them.
constexpr size_t kListEveryTaskUpTo = 40;
constexpr size_t kMaxListed = 200;

}  // namespace

Status PrintRunSummaryFromJournal(const storage::RunRecord& run, storage::Journal* journal,
                                  std::FILE* out) {
  nlohmann::json every = nlohmann::json::object();  // while seen <= kListEveryTaskUpTo
  // One more than the table lists, so that it says some were left out.
  nlohmann::json unsuccessful = nlohmann::json::object();
  size_t seen = 0;
  // The journal yields a run's records in exec id (RUN.TASK) order, which is
  // task id order, as RunSummaryJson's map iterates them.
  const size_t id_at = run.run_id.size() + 1;
  APOLLO11_RETURN_IF_ERROR(
      journal->ForEachExecutionOfRun(run.run_id, [&](storage::ExecutionRecord& e) {
        ++seen;
        const bool listed_if_many =
            e.state != TaskState::kSuccess && unsuccessful.size() <= kMaxListed;
        if (seen > kListEveryTaskUpTo && !listed_if_many) return Status::Ok();
        nlohmann::json task = actors::RunTaskJson(run, e);
        const std::string id = e.exec_id.substr(id_at);
        if (seen <= kListEveryTaskUpTo) every[id] = task;
        if (listed_if_many) unsuccessful[id] = std::move(task);
        return Status::Ok();
      }));
  nlohmann::json doc = actors::RunHeaderJson(run);
  // With more than kListEveryTaskUpTo tasks, the document holds only the
  // unsuccessful ones: PrintRunSummary shows all of them when they are few,
  // and skips no task when they are many, so it prints the same table.
  doc["tasks"] = seen <= kListEveryTaskUpTo ? std::move(every) : std::move(unsuccessful);
  PrintRunSummary(doc, out);
  return Status::Ok();
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
  const bool all = tasks.size() <= kListEveryTaskUpTo;
  size_t shown = 0;
  for (const auto& [id, t] : tasks.items()) {
    if (!all && str(t, "state") == "SUCCESS") continue;
    if (shown == 0) {
      std::fprintf(out, "  %-24s %-9s %8s %5s  %-16s %s\n", "TASK", "STATE", "ATTEMPTS", "EXIT",
                   "WORKER", "ERROR");
    }
    if (++shown > kMaxListed) {
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
                 t.contains("reused_from")   ? ("reused from " + str(t, "reused_from")).c_str()
                 : t.value("handled", false) ? ("handled: " + str(t, "error")).c_str()
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
