#include "observability/pipeline_metrics.h"

#include <cctype>

namespace apollo11::observability {
namespace {

std::string Lower(const char* s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::string StateLabel(TaskState s) { return Lower(ToString(s)); }
std::string StateLabel(RunStatus s) { return Lower(ToString(s)); }

std::vector<double> RunDurationBuckets() {
  return {1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 1800.0, 3600.0, 7200.0, 14400.0, 43200.0, 86400.0};
}

PipelineMetrics::PipelineMetrics(Registry& r, const std::string& pipeline)
    : run_duration_(r.AddHistogram("apollo11_pipeline_run_duration_seconds",
                                   "Duration of finished runs (start to final state), by "
                                   "pipeline.",
                                   RunDurationBuckets(), {{"pipeline", pipeline}})),
      task_duration_(r.AddHistogram("apollo11_pipeline_task_duration_seconds",
                                    "Run time of task attempts on a worker (process start to "
                                    "exit), by pipeline.",
                                    SlowLatencyBuckets(), {{"pipeline", pipeline}})) {
  for (int s = 0; s < kTaskStateCount; ++s) {
    const auto state = static_cast<TaskState>(s);
    if (!IsFinal(state)) continue;
    executions_[s] = &r.AddCounter("apollo11_pipeline_executions_finished_total",
                                   "Executions that reached a final state, by pipeline and state.",
                                   {{"pipeline", pipeline}, {"state", StateLabel(state)}});
  }
  for (RunStatus s : {RunStatus::kSuccess, RunStatus::kFailed, RunStatus::kCanceled}) {
    runs_[static_cast<int>(s)] =
        &r.AddCounter("apollo11_pipeline_runs_finished_total",
                      "Runs that reached a final state, by pipeline and state.",
                      {{"pipeline", pipeline}, {"state", StateLabel(s)}});
  }
}

PipelineMetrics* PipelineMetricsTable::For(const std::string& pipeline) {
  MutexLock lock(&mu_);
  auto it = by_name_.find(pipeline);
  if (it != by_name_.end()) return it->second.get();
  // The first kMaxPipelines names get their own series; later ones share
  // "other" (the series of a pipeline actually named "other" when it was
  // among the first).
  const std::string key = by_name_.size() < kMaxPipelines ? pipeline : std::string("other");
  auto& slot = by_name_[key];
  if (!slot) slot = std::make_unique<PipelineMetrics>(registry_, key);
  return slot.get();
}

}  // namespace apollo11::observability
