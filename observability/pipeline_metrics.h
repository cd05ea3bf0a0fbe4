#pragma once
// The series of one pipeline: runs and executions finished by final state,
// run and task durations. PipelineMetricsTable hands out one set per
// pipeline name, registered on first use; to bound the label cardinality
// only the first kMaxPipelines names get their own, every later one shares
// pipeline="other".

#include <array>
#include <cstddef>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/clock.h"
#include "common/mutex.h"
#include "engine/task_state.h"
#include "observability/metrics_registry.h"

namespace apollo11::observability {

// Lower-case Prometheus label value of a state: "success", "retrying".
std::string StateLabel(TaskState s);
std::string StateLabel(RunStatus s);

// Bucket bounds for whole runs, from 1 s to 1 day.
std::vector<double> RunDurationBuckets();

class PipelineMetrics {
 public:
  PipelineMetrics(Registry& registry, const std::string& pipeline);

  // An execution of this pipeline reached final state `s`.
  void ExecutionFinished(TaskState s) {
    if (Counter* c = executions_[static_cast<int>(s)]) c->Inc();
  }
  // A run of this pipeline reached final status `s` after `took`.
  void RunFinished(RunStatus s, Micros took) {
    if (Counter* c = runs_[static_cast<int>(s)]) c->Inc();
    run_duration_.Observe(static_cast<double>(took > 0 ? took : 0) / kMicrosPerSecond);
  }
  // One attempt ran on a worker for `took` (its reported start to finish).
  void AttemptRan(Micros took) {
    task_duration_.Observe(static_cast<double>(took > 0 ? took : 0) / kMicrosPerSecond);
  }

 private:
  std::array<Counter*, kTaskStateCount> executions_{};  // final states only
  std::array<Counter*, 5> runs_{};                      // final statuses only
  Histogram& run_duration_;
  Histogram& task_duration_;
};

class PipelineMetricsTable {
 public:
  static constexpr size_t kMaxPipelines = 500;

  explicit PipelineMetricsTable(Registry& registry) : registry_(registry) {}

  // The series of `pipeline` (of "other" past kMaxPipelines names). The
  // pointer lives as long as the table. Any thread; takes a lock, so call it
  // once per run, not per transition.
  PipelineMetrics* For(const std::string& pipeline);

 private:
  Registry& registry_;
  Mutex mu_;
  std::unordered_map<std::string, std::unique_ptr<PipelineMetrics>> by_name_ GUARDED_BY(mu_);
};

}  // namespace apollo11::observability
