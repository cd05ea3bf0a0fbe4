#pragma once
// `apollo11 runs`: the run history, newest first, from a local state dir or
// a coordinator, filtered by pipeline, state and time, a page at a time
// (QueryKind::kRunsPage) until --limit runs or, with --all, the whole
// history, printed as it comes (a table, or one JSON array).

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>

namespace apollo11::cli {

void AddRunsCommand(CLI::App& app, int* exit_code);

// Marks the unfinished runs of a local listing whose owning process is gone
// with "orphaned", their last owner and the command that continues them
// (inspect_commands.cc). `state_dir` is the --state-dir flag ("" = default).
void MarkOrphans(const std::string& state_dir, nlohmann::json* runs);

}  // namespace apollo11::cli
