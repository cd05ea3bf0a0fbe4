// The client commands (`runs` is runs_command.cc). Read-only views
// (`history`, `status`) answer
// from a local state dir's journal (opened read-only, no lock, so they work
// while a run writes), or from a running coordinator when --coordinator or
// $APOLLO11_COORDINATOR names one. `submit`, `cancel`, `workers`, `explain`
// and `confirm` need a coordinator. Both sources print the same bytes: a
// coordinator's answers and the local `history` and `runs` are JSON
// documents that text output is formatted from; a local `status` is printed
// as the journal yields its records (LocalStatus), never whole in memory.

#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>
#include <thread>

#include "actors/queries/run_views.h"
#include "cli/client_flags.h"
#include "cli/command.h"
#include "cli/remote.h"
#include "cli/runs_command.h"
#include "cli/state_dir.h"
#include "cli/usage_errors.h"
#include "common/duration.h"
#include "common/json_dump.h"
#include "dsl/diagnostic.h"
#include "dsl/param_values.h"
#include "dsl/parser.h"
#include "dsl/pipeline_json.h"
#include "storage/journal.h"
#include "storage/state_dir_lock.h"

namespace apollo11::cli {
namespace {

struct InspectFlags : ClientFlags {
  std::string id, arg, file;
  std::vector<std::string> library_dirs;  // submit: where imports may also resolve
  std::vector<std::string> params;        // submit: -p key=value (registry)
  bool wait = false;
  size_t limit = 20;
};

int Fail(const char* cmd, const Status& s) { return FailCommand(cmd, s); }

std::string Str(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : "";
}

// Who last held `f`'s state dir lock, when nobody holds it now (an
// `apollo11 run` killed -9, a node that is down); nullopt when a process
// holds it, or when there is no lock file or it cannot be read: only a sure
// answer marks a run orphaned.
std::optional<storage::StateDirOwner> GoneOwner(const std::string& state_dir) {
  auto owner = storage::StateDirLock::Owner(ResolveStateDir(state_dir));
  if (!owner.ok() || owner->holds) return std::nullopt;
  return *owner;
}

// What continues unfinished run `run_id` after `owner` is gone.
std::string ContinueWith(const storage::StateDirOwner& owner, const std::string& state_dir,
                         const std::string& run_id) {
  if (owner.command.find("apollo11-node") != std::string::npos) {
    return "start its node again on this state dir: it recovers the run";
  }
  return "apollo11 run --resume " + run_id + (state_dir.empty() ? "" : " --state-dir " + state_dir);
}

// How long `status --wait` on a local state dir lets an unfinished run stay
// without an owner before it stops waiting: longer than a node's restart
// takes to lock the dir again.
constexpr auto kOrphanGrace = std::chrono::seconds(2);

// Why `status --wait` stops waiting for run `id`, which nothing runs: the
// state dir's lock is free, last held by `owner`.
Status NobodyRuns(const InspectFlags& f, const std::string& id, RunStatus state,
                  const storage::StateDirOwner& owner) {
  return Status::Io(
      "run " + id + " is " + std::string(ToString(state)) +
      " but nothing is running it: no process holds the lock of " + ResolveStateDir(f.state_dir) +
      (owner.pid.empty() ? "" : " (last held by " + owner.pid + ", " + owner.command + ")") +
      "; continue it with: " + ContinueWith(owner, f.state_dir, id));
}

// Answers a query from the local journal, as the coordinator would.
Result<nlohmann::json> LocalQuery(const InspectFlags& f, const std::string& kind) {
  auto journal = OpenJournalReadOnly(f.state_dir);
  if (!journal.ok()) return journal.status();
  storage::Journal& j = **journal;
  // `status` streams from the journal instead (LocalStatus).
  if (kind == "run") {  // the record alone, for polling (see Inspect)
    auto run = j.GetRun(f.id);
    if (!run.ok()) return run.status();
    if (!run->has_value()) return Status::NotFound("no run " + f.id + " in the journal");
    return actors::RunLineJson(**run);
  }
  if (kind == "history") {
    const bool is_exec = f.id.find('.') != std::string::npos;
    auto records = is_exec ? j.HistoryOfExecution(f.id) : j.HistoryOfRun(f.id);
    if (!records.ok()) return records.status();
    if (records->empty()) {
      return Status::NotFound(std::string("no ") + (is_exec ? "execution " : "run ") + f.id +
                              " in the journal");
    }
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : *records) out.push_back(actors::TransitionJson(r));
    return out;
  }
  return Status::Internal("no local answer to '" + kind + "'");
}

// `link`, when given, keeps the connection from one call to the next
// (status --wait polls through it: a coordinator found dead or not leading
// is passed over once, not at every poll).
Result<nlohmann::json> Ask(const InspectFlags& f, const std::string& kind, bool need_remote,
                           std::unique_ptr<RemoteCoordinator>* link = nullptr) {
  const std::string endpoint = f.Endpoint();
  if (endpoint.empty()) {
    if (need_remote) {
      return Status::InvalidInput(
          "this command talks to a running coordinator: pass "
          "--coordinator ENDPOINT or set APOLLO11_COORDINATOR");
    }
    return LocalQuery(f, kind);
  }
  std::unique_ptr<RemoteCoordinator> own;
  if (link == nullptr) link = &own;
  if (!*link) {
    auto remote = f.Connect();
    if (!remote.ok()) return remote.status();
    *link = std::move(*remote);
  }
  return (*link)->Query(kind, f.id, f.arg, static_cast<uint32_t>(f.limit));
}

int Print(const nlohmann::json& doc, bool json, const std::string& kind) {
  if (json) {
    std::printf("%s\n", SafeJsonDump(doc, 2).c_str());
    return kExitOk;
  }
  if (kind == "status") {
    PrintRunSummary(doc, stdout);
  } else if (kind == "history") {
    for (const auto& r : doc) {
      // A note is an event during a state (a slow flag), not a transition.
      const bool note = r.value("note", false);
      std::printf("%s  %-20s #%d  %-8s %s %-8s  %s  [%s]\n", Str(r, "ts").c_str(),
                  Str(r, "task_id").c_str(), r.value("attempt", 0), Str(r, "from").c_str(),
                  note ? " *" : "->", note ? "(note)" : Str(r, "to").c_str(),
                  Str(r, "reason").c_str(), Str(r, "actor").c_str());
    }
  } else if (kind == "workers") {
    if (doc.empty()) {
      // An empty table reads like a failed query; say what it means.
      std::printf(
          "no worker is connected: READY tasks wait until one joins (is any apollo11-node "
          "--role=worker running, and does its --connect name this coordinator's worker "
          "endpoint?)\n");
      return kExitOk;
    }
    // LOST counts the losses (missed heartbeats, broken connection) of each
    // worker id since the coordinator started: more than one is a flapping
    // worker, and CONNECTED SINCE tells when it last came back.
    std::printf("%-20s %-10s %5s %7s %6s %7s  %-24s  %-24s %4s  %s\n", "WORKER", "GROUP", "SLOTS",
                "RUNNING", "QUEUED", "CREDITS", "LAST HEARTBEAT", "CONNECTED SINCE", "LOST",
                "LABELS");
    for (const auto& w : doc) {
      std::string labels;
      if (w.contains("labels") && w["labels"].is_array()) {
        for (const auto& l : w["labels"]) {
          if (!l.is_string()) continue;
          labels += (labels.empty() ? "" : ",") + l.get<std::string>();
        }
      }
      std::printf("%-20s %-10s %5d %7d %6d %7d  %-24s  %-24s %4d  %s\n", Str(w, "id").c_str(),
                  Str(w, "group").c_str(), w.value("slots", 0), w.value("running", 0),
                  w.value("queued", 0), w.value("credits", 0), Str(w, "last_heartbeat").c_str(),
                  Str(w, "connected_since").c_str(), w.value("losses", 0),
                  labels.empty() ? "-" : labels.c_str());
    }
  } else if (kind == "explain") {
    std::printf("%s.%s: %s\n", Str(doc, "run_id").c_str(), Str(doc, "task_id").c_str(),
                Str(doc, "explain").c_str());
  }
  return kExitOk;
}

// `status` of a run in a local journal, printed as the journal yields its
// records (the same bytes as Print of LocalQuery's document, which for a
// 1M-task run held the whole document in memory): --json through
// WriteRunSummaryJson, text through PrintRunSummaryFromJournal. With --wait,
// polls the run's record alone until it ends; the exit code is then the
// run's outcome. A run nothing runs (its `apollo11 run` killed, its node
// down: the state dir's lock free for kOrphanGrace) ends the wait: its status
// is printed and the command fails (exit 3), saying how to continue it.
int LocalStatus(const InspectFlags& f) {
  auto opened = OpenJournalReadOnly(f.state_dir);
  if (!opened.ok()) return Fail("status", opened.status());
  storage::Journal& journal = **opened;
  std::optional<storage::StateDirOwner> gone;  // the lock free since unowned_since
  std::chrono::steady_clock::time_point unowned_since{};
  for (;;) {
    auto run = journal.GetRun(f.id);
    if (!run.ok()) return Fail("status", run.status());
    if (!run->has_value()) {
      return Fail("status", Status::NotFound("no run " + f.id + " in the journal"));
    }
    const storage::RunRecord& record = **run;
    bool orphaned = false;
    if (f.wait && !IsFinal(record.status)) {
      const auto now = std::chrono::steady_clock::now();
      std::optional<storage::StateDirOwner> owner = GoneOwner(f.state_dir);
      if (owner && !gone) unowned_since = now;
      gone = std::move(owner);
      orphaned = gone && now - unowned_since >= kOrphanGrace;
      if (!orphaned) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        continue;
      }
    }
    Status shown;
    if (f.json) {
      shown = actors::WriteRunSummaryJson(record, &journal, [](std::string_view piece) {
        std::fwrite(piece.data(), 1, piece.size(), stdout);
      });
      if (shown.ok()) std::fputc('\n', stdout);
    } else {
      shown = PrintRunSummaryFromJournal(record, &journal, stdout);
    }
    if (!shown.ok()) return Fail("status", shown);
    if (orphaned) return Fail("status", NobodyRuns(f, f.id, record.status, *gone));
    if (!f.wait) return kExitOk;
    return record.status == RunStatus::kSuccess ? kExitOk : kExitRunFailed;
  }
}

int Inspect(const InspectFlags& f, const std::string& kind, bool need_remote) {
  if (kind == "status" && !need_remote && f.Endpoint().empty()) return LocalStatus(f);
  std::unique_ptr<RemoteCoordinator> link;
  auto doc = Ask(f, kind, need_remote, &link);
  if (!doc.ok()) return Fail(kind.c_str(), doc.status());
  if (kind == "status" && f.wait) {
    // Poll the run's record alone until the run ends (the whole status of a
    // large run is costly to build), then show the whole status once; the
    // exit code is the run's outcome.
    if (!IsFinal(*ParseRunStatus(Str(*doc, "state")))) {
      Result<nlohmann::json> line = *doc;
      while (!IsFinal(*ParseRunStatus(Str(*line, "state")))) {
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
        line = Ask(f, "run", need_remote, &link);
        if (!line.ok()) return Fail(kind.c_str(), line.status());
      }
      doc = Ask(f, kind, need_remote, &link);
      if (!doc.ok()) return Fail(kind.c_str(), doc.status());
    }
    Print(*doc, f.json, kind);
    return Str(*doc, "state") == "SUCCESS" ? kExitOk : kExitRunFailed;
  }
  return Print(*doc, f.json, kind);
}

int Submit(const InspectFlags& f) {
  dsl::ParseOptions options;
  options.library_dirs = f.library_dirs;
  dsl::ParseResult parsed = dsl::LoadPipelineFile(f.file, options);
  for (const dsl::Diagnostic& d : parsed.diagnostics) {
    std::fprintf(stderr, "%s\n", dsl::FormatDiagnostic(d).c_str());
  }
  if (!parsed.ok()) return kExitInvalidInput;
  std::map<std::string, std::string> given;
  for (const std::string& arg : f.params) {
    Status s = dsl::ParseParamArg(arg, &given);
    if (!s.ok()) return Fail("submit", s);
  }
  auto params = dsl::ResolveParams(parsed.pipeline->name, parsed.pipeline->params, given);
  if (!params.ok()) return Fail("submit", params.status());
  const std::string endpoint = f.Endpoint();
  if (endpoint.empty()) {
    return Fail("submit", Status::InvalidInput("pass --coordinator ENDPOINT or set "
                                               "APOLLO11_COORDINATOR (or use `apollo11 run`)"));
  }
  auto remote = f.Connect();
  if (!remote.ok()) return Fail("submit", remote.status());
  actors::SubmitRun submit;
  dsl::ForgetSource(&*parsed.pipeline);
  submit.pipeline_json = dsl::TakeCanonicalJson(std::move(*parsed.pipeline));
  submit.pipeline_hash = dsl::HashCanonicalJson(submit.pipeline_json);
  submit.params = std::move(*params);
  if (!f.wait) {
    auto run_id = (*remote)->Submit(std::move(submit));
    if (!run_id.ok()) return Fail("submit", run_id.status());
    std::printf("%s\n", f.json ? SafeJsonDump(nlohmann::json{{"run_id", *run_id}}).c_str()
                               : run_id->c_str());
    std::fflush(stdout);
    return kExitOk;
  }
  // Follow the run's pushed progress until it ends, then show its status
  // once; the exit code is the run's outcome.
  FollowHooks hooks;
  if (!f.json) {  // --json prints one document: the status, which has the id
    hooks.accepted = [](const std::string& run_id) {
      std::printf("%s\n", run_id.c_str());
      std::fflush(stdout);
    };
  }
  auto run_id = (*remote)->SubmitAndFollow(std::move(submit), hooks);
  if (!run_id.ok()) return Fail("submit", run_id.status());
  InspectFlags status = f;
  status.id = *run_id;
  return Inspect(status, "status", true);
}

int Cancel(const InspectFlags& f) {
  const std::string endpoint = f.Endpoint();
  if (endpoint.empty()) {
    return Fail("cancel", Status::InvalidInput("pass --coordinator ENDPOINT or set "
                                               "APOLLO11_COORDINATOR"));
  }
  auto remote = f.Connect();
  if (!remote.ok()) return Fail("cancel", remote.status());
  // A run that already ended is not canceled: say so, as the HTTP API does
  // (409), rather than "requested".
  auto run = (*remote)->Query("run", f.id);
  if (!run.ok()) return Fail("cancel", run.status());
  const auto state = ParseRunStatus(Str(*run, "state"));
  if (state && IsFinal(*state)) {
    return Fail("cancel",
                Status::Error(StatusCode::kConflict,
                              "run " + f.id + " already finished: " + Str(*run, "state")));
  }
  Status s = (*remote)->Cancel(f.id, "canceled by the user (apollo11 cancel)");
  if (!s.ok()) return Fail("cancel", s);
  if (f.json) {
    const nlohmann::json doc = {{"run_id", f.id}, {"cancel", "requested"}};
    std::printf("%s\n", SafeJsonDump(doc, 2).c_str());
  } else {
    std::printf("cancel of %s requested\n", f.id.c_str());
  }
  return kExitOk;
}

int Confirm(const InspectFlags& f, bool kill, bool keep) {
  if (kill == keep) {
    return Fail("confirm", Status::InvalidInput("pass exactly one of --kill or --keep"));
  }
  const std::string endpoint = f.Endpoint();
  if (endpoint.empty()) {
    return Fail("confirm", Status::InvalidInput("pass --coordinator ENDPOINT or set "
                                                "APOLLO11_COORDINATOR"));
  }
  auto remote = f.Connect();
  if (!remote.ok()) return Fail("confirm", remote.status());
  auto done = (*remote)->Confirm(f.id, kill);
  if (!done.ok()) return Fail("confirm", done.status());
  if (f.json) {
    const nlohmann::json doc = {
        {"exec_id", f.id}, {"decision", kill ? "kill" : "keep"}, {"result", *done}};
    std::printf("%s\n", SafeJsonDump(doc, 2).c_str());
  } else {
    std::printf("%s\n", done->c_str());
  }
  return kExitOk;
}

void CommonFlags(CLI::App* cmd, InspectFlags* f, bool local_ok) {
  AddClientFlags(cmd, f, (local_ok ? kStateDirFlag : 0u) | kRemoteFlags | kJsonFlag);
}

}  // namespace

void MarkOrphans(const std::string& state_dir, nlohmann::json* runs) {
  const std::optional<storage::StateDirOwner> owner = GoneOwner(state_dir);
  if (!owner) return;
  for (auto& r : *runs) {
    auto state = ParseRunStatus(Str(r, "state"));
    if (!state || IsFinal(*state)) continue;
    r["orphaned"] = true;
    r["owner"] = owner->pid + " (" + owner->command + ")";
    r["continue_with"] = ContinueWith(*owner, state_dir, Str(r, "run_id"));
  }
}

void AddInspectCommands(CLI::App& app, int* exit_code) {
  auto history = std::make_shared<InspectFlags>();
  CLI::App* h = app.add_subcommand("history", "every journaled transition of a run or execution");
  h->add_option("id", history->id, "run id, or execution id (RUN_ID.TASK_ID)")->required();
  CommonFlags(h, history.get(), true);
  h->callback([history, exit_code] { *exit_code = Inspect(*history, "history", false); });

  AddRunsCommand(app, exit_code);

  auto status = std::make_shared<InspectFlags>();
  CLI::App* s = app.add_subcommand("status", "a run's state and its tasks");
  s->add_option("run_id", status->id, "run id")->required();
  s->add_flag("--wait", status->wait, "wait until the run ends; exit with its outcome");
  CommonFlags(s, status.get(), true);
  s->callback([status, exit_code] { *exit_code = Inspect(*status, "status", false); });

  auto submit = std::make_shared<InspectFlags>();
  CLI::App* sub = app.add_subcommand("submit", "submit a pipeline run to a coordinator");
  sub->add_option("file", submit->file, "pipeline YAML file")->required();
  sub->add_flag("--wait", submit->wait, "wait until the run ends; exit with its outcome");
  sub->add_option("-p,--param", submit->params,
                  "a declared param: key=value (repeatable; undeclared or ill-typed are refused)")
      ->allow_extra_args(false);
  AddLibraryOption(sub, &submit->library_dirs);
  CommonFlags(sub, submit.get(), false);
  sub->callback([submit, exit_code] { *exit_code = Submit(*submit); });

  auto cancel = std::make_shared<InspectFlags>();
  CLI::App* c = app.add_subcommand("cancel", "cancel a run on a coordinator");
  c->add_option("run_id", cancel->id, "run id")->required();
  CommonFlags(c, cancel.get(), false);
  c->callback([cancel, exit_code] { *exit_code = Cancel(*cancel); });

  auto workers = std::make_shared<InspectFlags>();
  CLI::App* w = app.add_subcommand("workers", "workers connected to a coordinator");
  CommonFlags(w, workers.get(), false);
  w->callback([workers, exit_code] { *exit_code = Inspect(*workers, "workers", true); });

  auto explain = std::make_shared<InspectFlags>();
  CLI::App* e = app.add_subcommand("explain", "why a task is where it is");
  e->add_option("run_id", explain->id, "run id")->required();
  e->add_option("task_id", explain->arg, "task id")->required();
  CommonFlags(e, explain.get(), false);
  e->callback([explain, exit_code] { *exit_code = Inspect(*explain, "explain", true); });

  auto confirm = std::make_shared<InspectFlags>();
  auto decision = std::make_shared<std::pair<bool, bool>>();  // kill, keep
  CLI::App* cf = app.add_subcommand(
      "confirm", "answer a slow-task flag: kill the execution, or keep it running");
  cf->add_option("exec_id", confirm->id, "execution id (RUN_ID.TASK_ID)")->required();
  CLI::Option* kill = cf->add_flag(
      "--kill", decision->first, "kill it: the attempt fails and the task's retry policy applies");
  CLI::Option* keep = cf->add_flag("--keep", decision->second,
                                   "keep it running; it is not flagged again this attempt");
  kill->excludes(keep);
  CommonFlags(cf, confirm.get(), false);
  cf->callback([confirm, decision, exit_code] {
    *exit_code = Confirm(*confirm, decision->first, decision->second);
  });
}

}  // namespace apollo11::cli
