#pragma once
// Turns a task of a run into what the dispatcher queues: the placement facts
// (group, labels, priority, expected duration) and the DISPATCH payload the
// worker runs, with the task's environment (run, attempt, trace and
// idempotency key) and inputs (parameters, upstream outputs). A DISPATCH is
// sized by construction: upstream outputs share a bounded budget
// (common/wire_limits.h), and one that still would not pass the worker's
// decoder is sent as a refusal the worker reports as a failure at once.
// Pure: no clock, no I/O.

#include <cstddef>
#include <map>
#include <string>

#include "actors/internal_messages.h"
#include "actors/scheduler/scheduler_run.h"
#include "common/duration.h"
#include "common/status.h"

namespace apollo11::actors {

class DispatchBuilder {
 public:
  // kill_grace: SIGTERM -> SIGKILL on the worker; output_env_cap: the tail of
  // an upstream's output passed to a dependent, per upstream (less when the
  // dependent has so many upstreams that OutputShare is smaller).
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

  // The tail each of `upstreams` outputs may contribute to one DISPATCH:
  // per_upstream_cap, or less so that all together stay within
  // kMaxDispatchOutputsBytes.
  static size_t OutputShare(size_t per_upstream_cap, size_t upstreams);

  // Replaces d's payload by a refusal naming the limit when the worker's
  // decoder would not accept the DISPATCH (transport::CheckFits).
  static void RefuseIfUnsendable(transport::Dispatch* d);

  // Expands the `${...}` placeholders of p's templated fields
  // (dsl/templated_fields.h) from the run: its id, params, the task's (or
  // foreach instance's) id, idempotency key and item, and upstream outputs as
  // journaled. `task` is a slot (engine::DagRun::slots). InvalidInput naming
  // the field and placeholder when one cannot be filled (a missing output or
  // path, a line break in a header).
  static Status ExpandTemplates(const SchedulerRun& run, int task,
                                const std::string& idempotency_key, transport::TaskPayload* p);

 private:
  // Replaces d's payload by one the worker reports failed with `reason`,
  // not retryable, running nothing.
  static void Refuse(transport::Dispatch* d, std::string reason);

  // The APOLLO11_* variables of a task (a foreach instance's also
  // APOLLO11_ITEM and APOLLO11_ITEM_INDEX), and for one that runs a process
  // its inputs: the run's parameters, then its upstreams' outputs.
  void FillEnv(const SchedulerRun& run, int task, const transport::Dispatch& d,
               const std::string& idempotency_key, transport::TaskPayload* p) const;

  Millis kill_grace_;
  size_t output_env_cap_;
};

}  // namespace apollo11::actors
