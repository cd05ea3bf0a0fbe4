#pragma once
// Where a node keeps its state: --state-dir, else $APOLLO11_STATE_DIR, else
// ./.apollo11. Inside: journal/ (LMDB), logs/ (task output), LOCK.

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "actors/run_views.h"
#include "common/status.h"
#include "storage/journal.h"

namespace apollo11::cli {

std::string ResolveStateDir(const std::string& flag);
inline std::string JournalDir(const std::string& state_dir) { return state_dir + "/journal"; }
inline std::string LogDir(const std::string& state_dir) { return state_dir + "/logs"; }

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

}  // namespace apollo11::cli
