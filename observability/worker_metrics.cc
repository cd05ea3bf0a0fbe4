#include "observability/worker_metrics.h"

namespace apollo11::observability {

WorkerMetrics* WorkerMetrics::Inert() {
  static Registry* registry = new Registry();
  static WorkerMetrics* inert = new WorkerMetrics(*registry);
  return inert;
}

WorkerMetrics::WorkerMetrics(Registry& r)
    : running(r.AddGauge("apollo11_worker_running", "Executions this worker runs now.")),
      slots(r.AddGauge("apollo11_worker_slots", "Slots this worker offers (0 while it drains).")),
      queue_depth(r.AddGauge("apollo11_worker_queue_depth",
                             "Executions this worker queues beyond its slots at most, now "
                             "(--prefetch; by default it follows how long its tasks take).")),
      spawn_latency(r.AddHistogram("apollo11_worker_spawn_seconds",
                                   "Time from DISPATCH received to the task started (process "
                                   "spawned or transfer begun).",
                                   FastLatencyBuckets())),
      started(r.AddCounter("apollo11_worker_executions_started_total",
                           "Executions this worker launched.")),
      finished(r.AddCounter("apollo11_worker_executions_finished_total",
                            "Executions this worker finished, whatever the outcome.")),
      spawn_failures(r.AddCounter("apollo11_worker_spawn_failures_total",
                                  "Executions this worker could not start.")) {}

}  // namespace apollo11::observability
