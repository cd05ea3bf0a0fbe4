#pragma once
// JSON views of journal records, shared by the CLI (reading a local state
// dir) and the coordinator (answering remote queries), so both print the
// same documents.

#include <nlohmann/json.hpp>
#include <vector>

#include "storage/journal.h"

namespace apollo11::actors {

// The `run --json` / `status --json` document.
nlohmann::json RunSummaryJson(const storage::RunRecord& run,
                              const std::vector<storage::ExecutionRecord>& execs);
// One journal transition as `history --json` prints it.
nlohmann::json TransitionJson(const storage::TransitionRecord& r);
// One line of `runs --json`.
nlohmann::json RunLineJson(const storage::RunRecord& r);
// The current state of one execution (GET /api/executions/ID).
nlohmann::json ExecutionJson(const storage::ExecutionRecord& e);

}  // namespace apollo11::actors
