#pragma once
// Drives a compiled pipeline through the engine the way the scheduler does,
// so the DSL and pipeline-JSON fuzz targets reach the run logic with every
// graph that passes their checks, not only with the graphs our tests draw.

#include <memory>

#include "engine/run_graph.h"

namespace apollo11::fuzz {

// Runs `graph` on an imaginary worker: every READY task is dispatched and ends
// with an outcome chosen from a hash of its id and attempt (success, failure,
// timeout or "already done"); retry timers fire in due order. Aborts if the run
// stalls (not finished, yet nothing is READY, RUNNING or waiting to retry) or
// if the engine refuses an event the scheduler would send. Gives up silently
// after a bounded number of events (huge retry budgets are legal).
void DriveRunToEnd(std::shared_ptr<const engine::RunGraph> graph);

}  // namespace apollo11::fuzz
