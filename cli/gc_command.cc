// `apollo11 gc --older-than 30d [--state-dir D] [--dry-run] [--json]`:
// retention by hand. Removes the runs that finished before the cutoff with
// their history, execution records, index entries, unreferenced pipeline
// snapshots and task log files; never a run that is not finished.
//
// It writes the journal, so it takes the state dir's lock like any writer. A
// running node holds that lock: then gc refuses and says to use the node's
// own `--retention` (the node runs the same collection in its scheduler
// thread, the journal's only writer). `--dry-run` only reads, so it works
// while a node runs.

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>

#include "cli/client_flags.h"
#include "cli/command.h"
#include "cli/state_dir.h"
#include "common/clock.h"
#include "common/duration.h"
#include "storage/journal.h"
#include "storage/run_logs.h"
#include "storage/state_dir_lock.h"

namespace apollo11::cli {
namespace {

struct GcFlags : ClientFlags {
  std::string older_than;
  bool dry_run = false;
};

int Fail(const std::string& message, int code) {
  std::fprintf(stderr, "apollo11 gc: %s\n", message.c_str());
  return code;
}

std::string Bytes(uint64_t n) {
  char buf[32];
  if (n >= (1u << 20)) {
    std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(n) / (1 << 20));
  } else if (n >= 1024) {
    std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(n) / 1024);
  } else {
    std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(n));
  }
  return buf;
}

int Gc(const GcFlags& f) {
  auto age = ParseAge(f.older_than);
  if (!age.ok()) return Fail("--older-than: " + age.status().message(), kExitInvalidInput);
  const std::string state_dir = ResolveStateDir(f.state_dir);
  const Micros cutoff = SystemClock().Now() - age->count() * kMicrosPerMilli;

  std::error_code ec;
  if (!std::filesystem::exists(JournalDir(state_dir) + "/data.mdb", ec)) {
    // Checked first: locking would create the state dir.
    return Fail("no journal in state dir " + state_dir + " (pass --state-dir)", kExitInvalidInput);
  }
  std::unique_ptr<storage::StateDirLock> lock;
  if (!f.dry_run) {
    auto l = storage::StateDirLock::Acquire(state_dir);
    if (!l.ok()) {
      if (l.status().code() == StatusCode::kBusy) {
        return Fail(l.status().message() +
                        "\n  a running node owns this journal: give it --retention " +
                        f.older_than + " (or `retention: " + f.older_than +
                        "` in its --config) and it collects every hour itself; "
                        "`apollo11 gc --dry-run` works while it runs",
                    kExitInternal);
      }
      return Fail(l.status().message(), kExitInternal);
    }
    lock = std::move(*l);
  }
  storage::JournalOptions options;
  options.read_only = f.dry_run;
  auto journal = storage::Journal::Open(JournalDir(state_dir), options);
  if (!journal.ok()) {
    if (journal.status().code() == StatusCode::kNotFound) {
      return Fail("no journal in state dir " + state_dir + " (pass --state-dir)",
                  kExitInvalidInput);
    }
    return Fail(journal.status().message(), kExitInternal);
  }
  storage::Journal::GcOptions gc;
  gc.dry_run = f.dry_run;
  auto report = (*journal)->CollectGarbage(cutoff, gc);
  if (!report.ok()) return Fail(report.status().message(), kExitInternal);
  const std::set<std::string> ids(report->run_ids.begin(), report->run_ids.end());
  storage::LogRemoval logs = storage::RemoveRunLogs(storage::RunLogDirs(state_dir), ids, f.dry_run);
  for (const std::string& error : logs.errors) {
    std::fprintf(stderr, "apollo11 gc: could not remove %s\n", error.c_str());
  }

  if (f.json) {
    nlohmann::json doc = {{"dry_run", f.dry_run},
                          {"finished_before", FormatTimestamp(cutoff)},
                          {"runs", report->run_ids.size()},
                          {"run_ids", report->run_ids},
                          {"transitions", report->transitions},
                          {"executions", report->executions},
                          {"pipelines", report->pipelines},
                          {"log_files", logs.files},
                          {"log_bytes", logs.bytes},
                          {"transactions", report->transactions}};
    std::printf("%s\n", doc.dump(2).c_str());
  } else {
    std::printf(
        "%s %zu runs finished before %s: %llu transitions, %llu executions, %llu "
        "pipelines, %llu log files (%s)\n",
        f.dry_run ? "would remove" : "removed", report->run_ids.size(),
        FormatTimestamp(cutoff).c_str(), static_cast<unsigned long long>(report->transitions),
        static_cast<unsigned long long>(report->executions),
        static_cast<unsigned long long>(report->pipelines),
        static_cast<unsigned long long>(logs.files), Bytes(logs.bytes).c_str());
  }
  return logs.errors.empty() ? kExitOk : kExitInternal;
}

}  // namespace

void AddGcCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<GcFlags>();
  CLI::App* gc = app.add_subcommand(
      "gc", "remove finished runs older than an age, with their history and logs");
  gc->add_option("--older-than", f->older_than, "age, e.g. 30d, 36h (runs finished before now-AGE)")
      ->required();
  ClientFlagHelp help;
  help.state_dir =
      "state dir (default $APOLLO11_STATE_DIR, else $XDG_STATE_HOME/apollo11, else "
      "~/.local/state/apollo11)";
  AddClientFlags(gc, f.get(), kStateDirFlag, help);
  gc->add_flag("--dry-run", f->dry_run, "only count what would be removed");
  AddClientFlags(gc, f.get(), kJsonFlag, help);
  gc->callback([f, exit_code] { *exit_code = Gc(*f); });
}

}  // namespace apollo11::cli
