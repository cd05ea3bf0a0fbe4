// `apollo11`: the command-line client. Thin: parses flags, calls a command.
#include <csignal>
#include <cstdio>

#include "cli/command.h"
#include "cli/logging_setup.h"
#include "cli/usage_errors.h"
#include "cli/version.h"
#include "common/malloc_policy.h"

int main(int argc, char** argv) {
  apollo11::FixMallocThresholds();
  // Past a file size limit (RLIMIT_FSIZE) a write fails with EFBIG, which
  // the journal and the task logs report, instead of killing the process.
  // Tasks start with default dispositions (posix_spawnattr_setsigdefault).
  std::signal(SIGXFSZ, SIG_IGN);
  // Client commands log only warnings and errors, as text on stderr: never
  // spdlog's default logger, which writes "[warning]" lines to stdout. `run`
  // sets up its own.
  apollo11::cli::LogSettings log;
  log.level = "warn";
  log.format = "text";
  (void)apollo11::cli::SetUpLogging(log);
  CLI::App app{"apollo11: validate, run and inspect Apollo-11 pipelines", "apollo11"};
  // Every option's default is shown by --help.
  app.option_defaults()->always_capture_default();
  app.set_version_flag("--version", apollo11::VersionText("apollo11"));
  app.require_subcommand(1);
  int exit_code = apollo11::cli::kExitOk;
  apollo11::cli::AddValidateCommand(app, &exit_code);
  apollo11::cli::AddRunCommand(app, &exit_code);
  apollo11::cli::AddRerunCommand(app, &exit_code);
  apollo11::cli::AddInspectCommands(app, &exit_code);
  apollo11::cli::AddKeygenCommand(app, &exit_code);
  apollo11::cli::AddTokenCommand(app, &exit_code);
  apollo11::cli::AddLogsCommand(app, &exit_code);
  apollo11::cli::AddGcCommand(app, &exit_code);
  apollo11::cli::AddTraceCommand(app, &exit_code);
  apollo11::cli::AddAuditCommand(app, &exit_code);
  apollo11::cli::AddPipelinesCommand(app, &exit_code);  // registry
  apollo11::cli::AddTriggerCommands(app, &exit_code);   // registry
  apollo11::cli::AddClusterCommand(app, &exit_code);
  if (auto code = apollo11::cli::CheckSubcommand(app, argc, argv)) return *code;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    // Usage errors are invalid input; --help and --version exit 0.
    return code == 0 ? apollo11::cli::kExitOk : apollo11::cli::kExitInvalidInput;
  } catch (const std::exception& e) {
    // A command's callback met what it cannot read (an answer of the wrong
    // shape from a coordinator of another version, say): say so, never abort.
    std::fprintf(stderr, "apollo11: internal error: %s\n", e.what());
    return apollo11::cli::kExitInternal;
  }
  return exit_code;
}
