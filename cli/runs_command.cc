#include "cli/runs_command.h"

#include <cstdio>
#include <functional>
#include <limits>

#include "actors/queries/query_service.h"
#include "cli/client_flags.h"
#include "cli/command.h"
#include "cli/state_dir.h"
#include "cli/usage_errors.h"
#include "common/json_dump.h"
#include "common/timestamp_parse.h"
#include "storage/journal.h"

namespace apollo11::cli {
namespace {

struct RunsFlags : ClientFlags {
  std::string pipeline, since, until;
  std::vector<std::string> states;
  size_t limit = 20;
  bool all = false;
};

// One page of runs for a filter (the kRunsPage JSON) and a page size.
using PageFn = std::function<Result<nlohmann::json>(const std::string& filter, uint32_t limit)>;

std::string Text(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

Result<nlohmann::json> FilterOf(const RunsFlags& f) {
  nlohmann::json filter = nlohmann::json::object();
  const Micros now = SystemClock().Now();
  if (!f.pipeline.empty()) filter["pipeline"] = f.pipeline;
  for (std::string s : f.states) {
    for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    filter["states"].push_back(s);
  }
  if (!f.since.empty()) {
    auto since = ParseSince(f.since, now);
    if (!since.ok()) return Status::InvalidInput("--since: " + since.status().message());
    filter["since"] = *since;
  }
  if (!f.until.empty()) {
    auto until = ParseTimestamp(f.until);
    if (!until.ok()) return Status::InvalidInput("--until: " + until.status().message());
    filter["until"] = *until;
  }
  return filter;
}

// Prints runs as they come: a table, or one JSON array.
class RunsPrinter {
 public:
  explicit RunsPrinter(bool json) : json_(json) {}
  // Called once the first page came: a walk that fails before prints nothing.
  void Start() {
    if (started_) return;
    started_ = true;
    if (json_) {
      std::printf("[");
    } else {
      std::printf("%-28s %-24s %-9s %6s %10s  %s\n", "RUN", "PIPELINE", "STATE", "TASKS",
                  "DURATION", "CREATED");
    }
  }
  void Add(const nlohmann::json& r) {
    if (json_) {
      std::printf("%s\n  %s", first_ ? "" : ",", SafeJsonDump(r).c_str());
      first_ = false;
      return;
    }
    const bool orphaned = r.value("orphaned", false);
    if (orphaned) orphans_.push_back(r);
    const bool timed = r.contains("duration_ms") && r["duration_ms"].is_number_integer();
    const std::string dur =
        timed ? std::to_string(r["duration_ms"].get<int64_t>() / 1000.0) + "s" : "running";
    // registry: a run pinned to a registered version shows it as NAME@N.
    const std::string pipeline =
        Text(r, "pipeline") + (r.contains("pipeline_version")
                                   ? "@" + std::to_string(r.value("pipeline_version", 0))
                                   : "");
    const std::string rerun_of = Text(r, "rerun_of");
    std::printf("%-28s %-24s %-9s %6d %10s  %s%s\n", Text(r, "run_id").c_str(), pipeline.c_str(),
                (Text(r, "state") + (orphaned ? "*" : "")).c_str(), r.value("tasks", 0),
                orphaned ? "orphaned" : dur.c_str(), Text(r, "created_at").c_str(),
                rerun_of.empty() ? "" : ("  rerun of " + rerun_of).c_str());
  }
  void Finish() {
    Start();
    if (json_) {
      std::printf("%s]\n", first_ ? "" : "\n");
      return;
    }
    for (const auto& r : orphans_) {
      std::printf(
          "* %s is %s in the journal, but the process that ran it is gone (last owner: %s); "
          "to continue it: %s\n",
          Text(r, "run_id").c_str(), Text(r, "state").c_str(), Text(r, "owner").c_str(),
          Text(r, "continue_with").c_str());
    }
  }

 private:
  const bool json_;
  bool started_ = false;
  bool first_ = true;
  std::vector<nlohmann::json> orphans_;
};

// Walks the pages until --limit runs (or, with --all, the end), printing.
Status Walk(const RunsFlags& f, const PageFn& page) {
  auto filter = FilterOf(f);
  if (!filter.ok()) return filter.status();
  size_t left = f.all ? std::numeric_limits<size_t>::max() : f.limit;
  RunsPrinter out(f.json);
  while (left > 0) {
    const auto size = static_cast<uint32_t>(std::min<size_t>(left, actors::kMaxRunsPage));
    auto doc = page(SafeJsonDump(*filter), size);
    if (!doc.ok()) return doc.status();
    if (!doc->is_object() || !doc->contains("runs") || !(*doc)["runs"].is_array()) {
      return Status::Corrupt("a page of runs without a runs list");
    }
    out.Start();
    for (const auto& r : (*doc)["runs"]) {
      if (!r.is_object()) return Status::Corrupt("a page of runs holds a non-object");
      if (left == 0) break;
      out.Add(r);
      --left;
    }
    const auto& next = (*doc)["next_cursor"];
    if (doc->value("complete", true) || !next.is_string()) break;
    if (filter->contains("cursor") && (*filter)["cursor"] == next) {
      return Status::Corrupt("the coordinator gave the same cursor twice; the walk stops");
    }
    (*filter)["cursor"] = next;
  }
  out.Finish();
  return Status::Ok();
}

int Runs(const RunsFlags& f) {
  Status walked = Status::Ok();
  if (f.Endpoint().empty()) {
    auto journal = OpenJournalReadOnly(f.state_dir);
    if (!journal.ok()) return FailCommand("runs", journal.status());
    storage::Journal& j = **journal;
    walked = Walk(f, [&](const std::string& text, uint32_t limit) -> Result<nlohmann::json> {
      auto filter = actors::RunFilterFromJson(text, limit);
      if (!filter.ok()) return filter.status();
      auto found = j.ListRunsPage(*filter);
      if (!found.ok()) return found.status();
      nlohmann::json doc = actors::RunsPageJson(*found);
      MarkOrphans(f.state_dir, &doc["runs"]);
      return doc;
    });
  } else {
    auto link = f.Connect();
    if (!link.ok()) return FailCommand("runs", link.status());
    walked = Walk(f, [&](const std::string& text, uint32_t limit) {
      return (*link)->Query("runs_page", "", text, limit);
    });
  }
  return walked.ok() ? kExitOk : FailCommand("runs", walked);
}

}  // namespace

void AddRunsCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<RunsFlags>();
  CLI::App* r = app.add_subcommand("runs", "the run history, newest first, filtered");
  r->add_option("--pipeline", flags->pipeline, "only this pipeline's runs");
  r->add_option("--state", flags->states,
                "only runs in this state (repeatable: --state FAILED --state CANCELED)");
  r->add_option("--since", flags->since,
                "only runs created at or after this time (2026-12-01T08:00:00Z) or age (90m, 7d)");
  r->add_option("--until", flags->until, "only runs created before this time");
  r->add_option("--limit", flags->limit, "how many runs (default 20)")->check(AtLeast(1));
  r->add_flag("--all", flags->all, "every run that matches, however many (paged)");
  AddClientFlags(r, flags.get(), kStateDirFlag | kRemoteFlags | kJsonFlag);
  r->callback([flags, exit_code, r] {
    if (flags->all && r->count("--limit") > 0) {
      *exit_code = FailCommand("runs", Status::InvalidInput("give --all or --limit, not both"));
      return;
    }
    *exit_code = Runs(*flags);
  });
}

}  // namespace apollo11::cli
