// Read-only views of a state dir's journal: `history`, `runs`, `status`.
// They open the journal read-only and take no lock, so they work while a run
// is writing to the same state dir.

#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "cli/state_dir.h"
#include "common/duration.h"
#include "storage/journal.h"

namespace apollo11::cli {
namespace {

struct InspectFlags {
  std::string id;
  std::string state_dir;
  bool json = false;
  size_t limit = 20;
};

Result<std::unique_ptr<storage::Journal>> OpenReadOnly(const std::string& flag) {
  storage::JournalOptions options;
  options.read_only = true;
  const std::string dir = ResolveStateDir(flag);
  auto journal = storage::Journal::Open(JournalDir(dir), options);
  if (!journal.ok() && journal.status().code() == StatusCode::kNotFound) {
    return Status::NotFound("no journal in state dir " + dir +
                            " (run a pipeline first, or pass --state-dir)");
  }
  return journal;
}

int Fail(const char* cmd, const Status& s) {
  std::fprintf(stderr, "apollo11 %s: %s\n", cmd, s.message().c_str());
  return s.code() == StatusCode::kNotFound ? kExitInvalidInput : kExitInternal;
}

int History(const InspectFlags& f) {
  auto journal = OpenReadOnly(f.state_dir);
  if (!journal.ok()) return Fail("history", journal.status());
  // Execution ids are "<run_id>.<task_id>"; run ids have no dot.
  const bool is_exec = f.id.find('.') != std::string::npos;
  auto records = is_exec ? (*journal)->HistoryOfExecution(f.id) : (*journal)->HistoryOfRun(f.id);
  if (!records.ok()) return Fail("history", records.status());
  if (records->empty()) {
    return Fail("history", Status::NotFound(std::string("no ") + (is_exec ? "execution " : "run ") +
                                            f.id + " in the journal"));
  }
  if (f.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const storage::TransitionRecord& r : *records) {
      out.push_back({{"seq", r.seq},
                     {"ts", FormatTimestamp(r.ts)},
                     {"run_id", r.run_id},
                     {"task_id", r.task_id},
                     {"exec_id", r.exec_id},
                     {"attempt", r.attempt},
                     {"from", ToString(r.from)},
                     {"to", ToString(r.to)},
                     {"reason", r.reason},
                     {"actor", r.actor}});
    }
    std::printf("%s\n", out.dump(2).c_str());
    return kExitOk;
  }
  for (const storage::TransitionRecord& r : *records) {
    std::printf("%s  %-20s #%u  %-8s -> %-8s  %s  [%s]\n", FormatTimestamp(r.ts).c_str(),
                r.task_id.c_str(), r.attempt, ToString(r.from), ToString(r.to), r.reason.c_str(),
                r.actor.c_str());
  }
  return kExitOk;
}

int Runs(const InspectFlags& f) {
  auto journal = OpenReadOnly(f.state_dir);
  if (!journal.ok()) return Fail("runs", journal.status());
  auto runs = (*journal)->ListRuns(f.limit);
  if (!runs.ok()) return Fail("runs", runs.status());
  if (f.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const storage::RunRecord& r : *runs) {
      nlohmann::json j = {{"run_id", r.run_id},
                          {"pipeline", r.pipeline_name},
                          {"state", ToString(r.status)},
                          {"tasks", r.task_count},
                          {"created_at", FormatTimestamp(r.created_at)}};
      if (r.finished_at) j["duration_ms"] = (r.finished_at - r.started_at) / kMicrosPerMilli;
      out.push_back(std::move(j));
    }
    std::printf("%s\n", out.dump(2).c_str());
    return kExitOk;
  }
  std::printf("%-28s %-24s %-9s %6s %10s  %s\n", "RUN", "PIPELINE", "STATE", "TASKS", "DURATION",
              "CREATED");
  const Micros now = SystemClock().Now();
  for (const storage::RunRecord& r : *runs) {
    Micros end = r.finished_at ? r.finished_at : now;
    std::printf("%-28s %-24s %-9s %6u %9.3fs  %s\n", r.run_id.c_str(), r.pipeline_name.c_str(),
                ToString(r.status), r.task_count,
                static_cast<double>(end - r.started_at) / kMicrosPerSecond,
                FormatTimestamp(r.created_at).c_str());
  }
  return kExitOk;
}

int StatusCmd(const InspectFlags& f) {
  auto journal = OpenReadOnly(f.state_dir);
  if (!journal.ok()) return Fail("status", journal.status());
  auto run = (*journal)->GetRun(f.id);
  if (!run.ok()) return Fail("status", run.status());
  if (!run->has_value()) return Fail("status", Status::NotFound("no run " + f.id + " in the journal"));
  auto execs = (*journal)->ExecutionsOfRun(f.id);
  if (!execs.ok()) return Fail("status", execs.status());
  if (f.json) {
    std::printf("%s\n", RunSummaryJson(**run, *execs).dump(2).c_str());
  } else {
    PrintRunSummary(**run, *execs, stdout);
  }
  return kExitOk;
}

}  // namespace

void AddInspectCommands(CLI::App& app, int* exit_code) {
  auto history = std::make_shared<InspectFlags>();
  CLI::App* h = app.add_subcommand("history", "every journaled transition of a run or execution");
  h->add_option("id", history->id, "run id, or execution id (RUN_ID.TASK_ID)")->required();
  h->add_option("--state-dir", history->state_dir, "state dir (default $APOLLO11_STATE_DIR or ./.apollo11)");
  h->add_flag("--json", history->json, "print a JSON array");
  h->callback([history, exit_code] { *exit_code = History(*history); });

  auto runs = std::make_shared<InspectFlags>();
  CLI::App* r = app.add_subcommand("runs", "recent runs, newest first");
  r->add_option("--state-dir", runs->state_dir, "state dir (default $APOLLO11_STATE_DIR or ./.apollo11)");
  r->add_option("--limit", runs->limit, "how many runs")->check(CLI::PositiveNumber);
  r->add_flag("--json", runs->json, "print a JSON array");
  r->callback([runs, exit_code] { *exit_code = Runs(*runs); });

  auto status = std::make_shared<InspectFlags>();
  CLI::App* s = app.add_subcommand("status", "a run's state and its tasks");
  s->add_option("run_id", status->id, "run id")->required();
  s->add_option("--state-dir", status->state_dir, "state dir (default $APOLLO11_STATE_DIR or ./.apollo11)");
  s->add_flag("--json", status->json, "print the same JSON as `run --json`");
  s->callback([status, exit_code] { *exit_code = StatusCmd(*status); });
}

}  // namespace apollo11::cli
