#pragma once
// The metrics a worker publishes (its own /metrics). The worker actor's
// thread is the only writer; any thread may scrape.

#include "common/clock.h"
#include "observability/metrics_registry.h"

namespace apollo11::observability {

struct WorkerMetrics {
  explicit WorkerMetrics(Registry& registry);

  // The metrics of a worker that publishes none: a shared instance over a
  // registry nobody scrapes (relaxed atomics: any thread may write it).
  static WorkerMetrics* Inert();

  // A DISPATCH was launched (or failed to) in `took`; `running` now run.
  void Launched(bool ok, Micros took, size_t running_now) {
    if (!ok) {
      spawn_failures.Inc();
      return;
    }
    started.Inc();
    spawn_latency.Observe(static_cast<double>(took > 0 ? took : 0) / kMicrosPerSecond);
    running.Set(static_cast<int64_t>(running_now));
  }
  // `n` executions finished; `running_now` still run.
  void Finished(size_t n, size_t running_now) {
    finished.Inc(n);
    running.Set(static_cast<int64_t>(running_now));
  }

  Gauge& running;            // executions running now
  Gauge& slots;              // slots offered (0 while draining)
  Gauge& queue_depth;        // executions it queues beyond its slots at most, now
  Histogram& spawn_latency;  // DISPATCH received -> task process started, seconds
  Counter& started;          // executions launched
  Counter& finished;         // executions finished (any outcome)
  Counter& spawn_failures;   // executions the worker could not start
};

}  // namespace apollo11::observability
