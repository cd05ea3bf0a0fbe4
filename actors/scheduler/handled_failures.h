#pragma once
// What a run that ended SUCCESS with failed tasks says about them. Such a
// run exists only when a dependent's `on: failure`, `on: timeout` or
// `on: done` handled every task that failed or timed out (engine::DagRun::Outcome): the run's
// reason, its record's handled_failures, the run_failures_handled alert and
// apollo11_runs_failures_handled_total make that visible.

#include <string>

#include "engine/dag_run.h"

namespace apollo11::actors {

// "; 2 failures handled by on: branches (extract, load)" (a dependent's
// `on: failure`, `on: timeout` or `on: done` handles a failure):
// appended to the reason of a finished SUCCESS run whose `dag` has tasks
// that ended FAILED or TIMEOUT; the first few ids are named. "" when none.
std::string HandledFailuresNote(const engine::DagRun& dag);

}  // namespace apollo11::actors
