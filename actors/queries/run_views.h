#pragma once
// JSON views of journal records, shared by the CLI (reading a local state
// dir) and the coordinator (answering remote queries), so both print the
// same documents.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/run_reader.h"

namespace apollo11::actors {

// The `run --json` / `status --json` document.
nlohmann::json RunSummaryJson(const storage::RunRecord& run,
                              const std::vector<storage::ExecutionRecord>& execs);
// The same document as compact JSON text, its "tasks" last, built from the
// journal one execution at a time: a 100k-task run's status costs about its
// text (~20 MB) in memory, not its records and a JSON tree (~150 MB). At
// most `max_bytes` long: the tasks that do not fit (in id order, those after
// the first that does not) are left out and counted in "tasks_omitted", a
// key the document has only then (a 1M-task run's status is 180 MB, a client
// frame 64 MiB).
Result<std::string> RunSummaryText(const storage::RunRecord& run, storage::RunReader* journal,
                                   size_t max_bytes = SIZE_MAX);
// The same document as SafeJsonDump(doc, 2) prints it (`run --json`),
// handed to `write` in pieces as the journal yields the executions: a
// 1M-task run's summary is never whole in memory (its JSON tree took the
// embedded run's RSS from 0.85 to 1.98 GB). Relies on "tasks" sorting after
// every key of RunHeaderJson, as nlohmann's sorted objects print it.
Status WriteRunSummaryJson(const storage::RunRecord& run, storage::RunReader* journal,
                           const std::function<void(std::string_view)>& write);
// The parts of that document: the run without its tasks, and one task.
nlohmann::json RunHeaderJson(const storage::RunRecord& run);
nlohmann::json RunTaskJson(const storage::RunRecord& run, const storage::ExecutionRecord& e);
// SafeJsonDump(RunTaskJson(run, e)) written without the tree (which cost
// most of a 5,000-task `run --json`'s summary), for an execution with no
// output, item, slow flag or truncated logs and only printable ASCII text
// without quotes or backslashes; nullopt for any other, which the caller
// prints through the tree. `indent` < 0: compact; else the dump(2) text with
// every line after the first shifted right by `indent` spaces.
std::optional<std::string> PlainRunTaskJson(const storage::RunRecord& run,
                                            const storage::ExecutionRecord& e, int indent);
// One journal transition as `history --json` prints it.
nlohmann::json TransitionJson(const storage::TransitionRecord& r);
// One line of `runs --json`.
nlohmann::json RunLineJson(const storage::RunRecord& r);
// The current state of one execution (GET /api/executions/ID).
nlohmann::json ExecutionJson(const storage::ExecutionRecord& e);

}  // namespace apollo11::actors
