#pragma once
// Why a task of an active run is where it is, in a sentence or two: the
// dependencies it waits on, no worker in its group or with its labels, the
// backlog at its cap, the retry time, a slow flag. Pure: reads the run's
// state and the facts passed in.

#include <cstddef>
#include <optional>
#include <string>

#include "actors/internal_messages.h"
#include "actors/scheduler/scheduler_run.h"

namespace apollo11::actors {

// The scheduler's backlog as Explain reports it.
struct BacklogFacts {
  bool paused = false;
  size_t in_flight = 0;  // READY + RUNNING across runs
  size_t max_backlog = 0;
  double resume_fraction = 0.8;
  // Retry-storm cap: retries with a running timer, the cap (0 = none), and
  // the task's place in the queue of retries waiting for a slot, if queued.
  size_t retrying = 0;
  size_t max_retrying = 0;
  std::optional<size_t> retry_queue_position;
};

// `task` must be a task index of `run`; `workers` is the dispatcher's view.
std::string ExplainTask(const SchedulerRun& run, int task, const BacklogFacts& backlog,
                        const WorkersSnapshot& workers);

}  // namespace apollo11::actors
