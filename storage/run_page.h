#pragma once
// A page of the run history, newest first, filtered, with a cursor that
// walks the whole history (RunReader::ListRunsPage).
//
// Runs are ordered by (created_at, run id), newest first, as the journal's
// time index keeps them. A cursor names the last run a page held; the next
// page starts just below it, so a walk sees every run created before it
// began exactly once, in order, however many runs are created meanwhile
// (those are newer: they sort above every cursor). A run created while the
// wall clock stood behind a walk's position is the exception: it sorts
// where its created_at puts it.
//
// A page ends when it holds `limit` runs (its `next` is then set, even if
// no older run matches: the page after says complete), when the history
// (or `since`) is exhausted (complete), or after `max_scan` runs were read
// without filling it (not complete: `next` continues the scan), which
// bounds the work a sparse filter costs one request.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "storage/records.h"

namespace apollo11::storage {

struct RunFilter {
  std::string pipeline;           // "" = any pipeline
  std::string pipeline_prefix;    // the pipeline name starts with it ("etl."); "" = any
  std::vector<RunStatus> states;  // empty = any state
  Micros since = 0;               // created_at >= since; 0 = no lower bound
  Micros until = 0;               // created_at < until; 0 = no upper bound
  std::string cursor;             // a RunPage::next; "" = from the newest
  size_t limit = 50;
  size_t max_scan = 100000;
};

struct RunPage {
  std::vector<RunRecord> runs;
  std::string next;      // the cursor of the page after; "" when complete
  bool complete = true;  // no older run matches
  size_t scanned = 0;    // runs read to make the page
};

// The cursor of a position just below `run`: 16 hex digits of created_at,
// then the run id.
std::string RunCursor(Micros created_at, std::string_view run_id);
// The (created_at, run id) a cursor names; InvalidInput for anything that
// no RunCursor made.
Result<std::pair<Micros, std::string>> ParseRunCursor(std::string_view cursor);
// Whether `run` passes the filter's pipeline, prefix, states and time bounds.
bool MatchesRunFilter(const RunFilter& filter, const RunRecord& run);
// The page of `newest_first` (every run, ordered as above) the filter asks
// for: what a store without a time index answers.
Result<RunPage> PageOfRuns(const std::vector<RunRecord>& newest_first, const RunFilter& filter);

}  // namespace apollo11::storage
