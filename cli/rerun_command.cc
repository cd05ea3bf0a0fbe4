// `apollo11 rerun RUN_ID [--failed | --from TASK [--downstream]] [--wait]`: a
// new run of a finished run's pipeline snapshot and params that reuses the
// SUCCESS and outputs of every task not selected (SchedulerCore::Rerun).
// With --coordinator (or $APOLLO11_COORDINATOR) the coordinator runs it;
// otherwise an embedded node on the state dir does, as `apollo11 run`, and
// the command always waits.

#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/client_flags.h"
#include "cli/command.h"
#include "cli/state_dir.h"
#include "common/json_dump.h"

namespace apollo11::cli {
namespace {

struct RerunFlags : ClientFlags {
  std::string run_id;
  bool failed = false;
  std::string from;
  bool downstream = false;
  bool wait = false;
  bool quiet = false;
};

// The request the flags describe; InvalidInput for a contradiction.
Result<actors::RerunRun> RequestOf(const RerunFlags& f) {
  if (f.failed && !f.from.empty()) {
    return Status::InvalidInput("give --failed or --from TASK, not both");
  }
  if (f.downstream && f.from.empty()) {
    return Status::InvalidInput("--downstream goes with --from TASK");
  }
  actors::RerunRun rerun;
  rerun.run_id = f.run_id;
  rerun.failed = f.from.empty();  // --failed is the default
  rerun.from_task = f.from;
  rerun.downstream = f.downstream;
  return rerun;
}

// The new run's summary, and its outcome as the exit code.
int ShowOutcome(RemoteCoordinator& remote, const std::string& run_id, bool json) {
  auto doc = remote.Query("status", run_id);
  if (!doc.ok()) return FailCommand("rerun", doc.status());
  if (json) {
    std::printf("%s\n", SafeJsonDump(*doc, 2).c_str());
  } else {
    PrintRunSummary(*doc, stdout);
  }
  const bool success = doc->value("state", std::string()) == "SUCCESS";
  return success ? kExitOk : kExitRunFailed;
}

int Rerun(const RerunFlags& f) {
  auto rerun = RequestOf(f);
  if (!rerun.ok()) return FailCommand("rerun", rerun.status());
  if (f.Endpoint().empty()) {
    return RunEmbeddedRerun(*rerun, ResolveStateDir(f.state_dir), f.json, f.quiet);
  }
  auto remote = f.Connect();
  if (!remote.ok()) return FailCommand("rerun", remote.status());
  if (!f.wait) {
    auto run_id = (*remote)->Rerun(*rerun);
    if (!run_id.ok()) return FailCommand("rerun", run_id.status());
    std::printf(
        "%s\n",
        f.json
            ? SafeJsonDump(nlohmann::json{{"run_id", *run_id}, {"rerun_of", rerun->run_id}}).c_str()
            : run_id->c_str());
    return kExitOk;
  }
  FollowHooks hooks;
  if (!f.json) {  // --json prints one document: the status, which has the id
    hooks.accepted = [](const std::string& run_id) {
      std::printf("%s\n", run_id.c_str());
      std::fflush(stdout);
    };
  }
  auto run_id = (*remote)->RerunAndFollow(*rerun, hooks);
  if (!run_id.ok()) return FailCommand("rerun", run_id.status());
  return ShowOutcome(**remote, *run_id, f.json);
}

}  // namespace

void AddRerunCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<RerunFlags>();
  CLI::App* cmd = app.add_subcommand(
      "rerun",
      "run a finished run again, reusing what succeeded (the same pipeline snapshot and "
      "params)");
  cmd->add_option("run_id", f->run_id, "the run to rerun")->required();
  cmd->add_flag("--failed", f->failed,
                "rerun what did not succeed and everything downstream of it (the default)");
  cmd->add_option("--from", f->from,
                  "rerun TASK (and what did not succeed); what depends on it is reused unless "
                  "--downstream");
  cmd->add_flag("--downstream", f->downstream, "with --from: rerun everything downstream of TASK");
  cmd->add_flag("--wait", f->wait,
                "wait until the new run ends; exit with its outcome (always without a "
                "coordinator)");
  cmd->add_flag("--quiet,-q", f->quiet, "embedded: print only the final summary and errors");
  AddClientFlags(cmd, f.get(), kStateDirFlag | kRemoteFlags | kJsonFlag);
  cmd->callback([f, exit_code] { *exit_code = Rerun(*f); });
}

}  // namespace apollo11::cli
