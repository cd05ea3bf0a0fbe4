#pragma once
// Turns a task of a run into what the dispatcher queues: the placement facts
// (group, labels, priority, expected duration) and the DISPATCH payload the
// worker runs, with the task's environment (run, attempt, trace and
// idempotency key, parameters, upstream outputs). Pure: no clock, no I/O.

#include <cstddef>
#include <map>
#include <string>

#include "actors/internal_messages.h"
#include "actors/scheduler_run.h"
#include "common/duration.h"

namespace apollo11::actors {

class DispatchBuilder {
 public:
  // kill_grace: SIGTERM -> SIGKILL on the worker; output_env_cap: the tail of
  // an upstream's output passed to a dependent, per upstream.
  DispatchBuilder(Millis kill_grace, size_t output_env_cap)
      : kill_grace_(kill_grace), output_env_cap_(output_env_cap) {}

  // The queue entry of `task`'s current attempt, READY at `ready_at` (wall).
  QueuedExec Build(const SchedulerRun& run, int task, Micros ready_at) const;

  // Expands ${run_id}, ${task_id} and ${params.NAME} in an idempotency key
  // template (the parser has already rejected unknown placeholders); an
  // empty template gives "<run>.<task>".
  static std::string ExpandKey(const std::string& tmpl, const std::string& run_id,
                               const std::string& task_id,
                               const std::map<std::string, std::string>& params);

 private:
  // The APOLLO11_* variables and upstream outputs of a task that runs a process.
  void FillEnv(const SchedulerRun& run, const dsl::TaskSpec& spec, const transport::Dispatch& d,
               const std::string& idempotency_key, transport::TaskPayload* p) const;

  Millis kill_grace_;
  size_t output_env_cap_;
};

}  // namespace apollo11::actors
