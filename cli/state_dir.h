#pragma once
// Where state lives (journal/ (LMDB), logs/ (task output), LOCK).
//   The CLI (`apollo11 run`, and the commands that read a state dir):
//     --state-dir, else $APOLLO11_STATE_DIR, else $XDG_STATE_HOME/apollo11,
//     else $HOME/.local/state/apollo11 (./.apollo11 without a HOME).
//   A node (`apollo11-node start`): --state-dir, else $APOLLO11_STATE_DIR,
//     else systemd's $STATE_DIRECTORY (its first entry), else
//     /var/lib/apollo11 when run as a systemd service ($INVOCATION_ID set),
//     else as the CLI.

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "actors/queries/run_views.h"
#include "common/status.h"
#include "storage/journal.h"

namespace apollo11::cli {

#include <functional>

// The value of an environment variable, "" when unset.
using GetenvFn = std::function<std::string(const std::string&)>;

// The CLI's state dir for `flag` (see above), reading the environment
// through `getenv`.
std::string ClientStateDir(const std::string& flag, const GetenvFn& getenv);
// A node's state dir for `flag` (see above).
std::string NodeStateDir(const std::string& flag, const GetenvFn& getenv);
// ClientStateDir with the process environment.
std::string ResolveStateDir(const std::string& flag);
inline std::string JournalDir(const std::string& state_dir) { return state_dir + "/journal"; }
inline std::string LogDir(const std::string& state_dir) { return state_dir + "/logs"; }

// Creates the state dir `dir` when missing; InvalidInput naming it when it
// cannot be created or is not writable (a read-only file system, its
// permissions), before anything else is opened in it.
Status EnsureWritableStateDir(const std::string& dir);

// Opens the journal of the state dir `flag` resolves to (ResolveStateDir),
// read-only, for the commands that read it without a coordinator (status,
// history, runs, logs, trace). A state dir without a journal is NotFound:
// "no journal in state dir DIR (run a pipeline first, pass --state-dir, or
// --coordinator)"; other errors are the journal's own.
Result<std::unique_ptr<storage::Journal>> OpenJournalReadOnly(const std::string& flag);

using actors::RunSummaryJson;
// A human summary of a `RunSummaryJson` document: the run line, then a task
// table (all tasks when few, only the ones that did not succeed when many).
void PrintRunSummary(const nlohmann::json& summary, std::FILE* out);
// Prints what PrintRunSummary(RunSummaryJson(run, every record)) prints,
// reading `run`'s records from `journal` one at a time and keeping only the
// tasks the table shows: the whole document of a 100k-task run was 110 MB of
// heap, the peak of an embedded run. Prints nothing when the records cannot
// be read, and returns the journal's error.
Status PrintRunSummaryFromJournal(const storage::RunRecord& run, storage::Journal* journal,
                                  std::FILE* out);

}  // namespace apollo11::cli
