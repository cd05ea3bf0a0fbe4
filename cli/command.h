#pragma once
// Each `apollo11` subcommand lives in its own file and registers itself on the
// top-level CLI::App with a function of this shape. The callback stores the
// process exit code in `*exit_code` (cli/exit_codes.h).

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/exit_codes.h"
#include "common/status.h"

namespace apollo11::cli {

// Prints "apollo11 CMD: why" on stderr and returns the exit code for it:
// what the user asked for is wrong, absent or in conflict with an earlier
// request (2), or anything else (3).
inline int FailCommand(const char* cmd, const Status& s) {
  std::fprintf(stderr, "apollo11 %s: %s\n", cmd, s.message().c_str());
  switch (s.code()) {
    case StatusCode::kNotFound:
    case StatusCode::kInvalidInput:
    case StatusCode::kConflict:
    case StatusCode::kUnsupported:
      return kExitInvalidInput;
    case StatusCode::kPermissionDenied:
      return kExitDenied;
    default:
      return kExitInternal;
  }
}

void AddValidateCommand(CLI::App& app, int* exit_code);
// Adds `--library DIR` (repeatable) to a command that reads a pipeline file:
// a directory its imports may resolve in besides the pipeline's own tree.
void AddLibraryOption(CLI::App* cmd, std::vector<std::string>* dirs);

}  // namespace apollo11::cli

namespace apollo11::actors {
struct RerunRun;
}  // namespace apollo11::actors

namespace apollo11::cli {

void AddRunCommand(CLI::App& app, int* exit_code);
// rerun: a new run of a finished run's snapshot that reuses what succeeded.
void AddRerunCommand(CLI::App& app, int* exit_code);
// `apollo11 rerun` without a coordinator: an embedded node on `state_dir`
// (as `apollo11 run`) starts the rerun and follows it to its end. Returns
// the exit code (the run's outcome, or why it was refused).
int RunEmbeddedRerun(const actors::RerunRun& rerun, const std::string& state_dir, bool json,
                     bool quiet);
// history, runs, status: read-only views of a state dir's journal.
void AddInspectCommands(CLI::App& app, int* exit_code);
// gc: retention by hand (removes finished runs older than --older-than).
void AddGcCommand(CLI::App& app, int* exit_code);
// keygen: writes a CURVE key pair (transport/security.h) to PREFIX.key/.pub.
void AddKeygenCommand(CLI::App& app, int* exit_code);
// token create: an API token for the HTTP port (observability/api_tokens.h).
void AddTokenCommand(CLI::App& app, int* exit_code);
// logs: an execution's captured output, local or through a coordinator.
void AddLogsCommand(CLI::App& app, int* exit_code);
// trace: one timeline of an execution from the journal and the nodes' logs.
void AddTraceCommand(CLI::App& app, int* exit_code);
// audit: the audit trail, through a coordinator or from the local journal.
void AddAuditCommand(CLI::App& app, int* exit_code);
// registry: pipelines [list|add|show|versions|diff|rm].
void AddPipelinesCommand(CLI::App& app, int* exit_code);
// registry: trigger, pause, unpause.
void AddTriggerCommands(CLI::App& app, int* exit_code);
// election: cluster (HA role, leader, epoch) and `cluster resign`.
void AddClusterCommand(CLI::App& app, int* exit_code);

}  // namespace apollo11::cli
