// Timing scratch (not a test): a 100,000-task layered DAG driven to completion
// through DagRun the way the scheduler drives it: promote under a backlog
// budget, dispatch, report success. Prints events/s; asserts nothing.
//
//   ninja -C build-engine engine_perftest && build-engine/tests/engine/engine_perftest

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <string>

#include "engine/dag_run.h"

using apollo11::AttemptOutcome;
using apollo11::engine::DagRun;
using apollo11::engine::Effects;
using apollo11::engine::RunGraph;

namespace {

double RssMb() {
  std::ifstream statm("/proc/self/statm");
  long size = 0, resident = 0;
  statm >> size >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  const int layers = argc > 1 ? std::stoi(argv[1]) : 100;
  const int width = argc > 2 ? std::stoi(argv[2]) : 1000;
  const int fan_in = 3;
  const int max_backlog = 1000;

  apollo11::dsl::PipelineSpec spec;
  spec.name = "bench.layered";
  std::mt19937 rng(7);
  for (int l = 0; l < layers; ++l) {
    for (int w = 0; w < width; ++w) {
      apollo11::dsl::TaskSpec t;
      t.id = "t" + std::to_string(l) + "_" + std::to_string(w);
      if (l > 0) {
        for (int k = 0; k < fan_in; ++k) {
          apollo11::dsl::Dependency d;
          d.task = "t" + std::to_string(l - 1) + "_" + std::to_string(rng() % width);
          t.depends_on.push_back(d);
        }
      }
      spec.tasks.push_back(std::move(t));
    }
  }

  const double rss_spec = RssMb();
  auto t0 = std::chrono::steady_clock::now();
  auto compiled = RunGraph::Compile(std::move(spec));
  if (!compiled.ok()) {
    std::fprintf(stderr, "%s\n", compiled.status().ToString().c_str());
    return 1;
  }
  auto graph = std::make_shared<const RunGraph>(std::move(compiled).value());
  auto t1 = std::chrono::steady_clock::now();
  const double rss_graph = RssMb();

  DagRun run(graph);
  Effects fx;
  std::vector<int> in_flight, next;
  long events = 0, transitions = 0;
  run.Start(0, &fx);
  while (!run.Finished()) {
    run.PromoteEligible(max_backlog - static_cast<int>(in_flight.size()), &fx);
    for (int task : fx.dispatch) in_flight.push_back(task);
    transitions += static_cast<long>(fx.transitions.size());
    fx.clear();
    next.clear();
    for (int task : in_flight) {
      (void)run.OnDispatched(task, run.attempt(task), "w1", 0, &fx);
      (void)run.OnResult(task, run.attempt(task), AttemptOutcome::kSuccess, 0, true, "", 0, 0.5,
                         &fx);
      events += 2;
      transitions += static_cast<long>(fx.transitions.size());
      fx.clear();
    }
    in_flight.swap(next);
  }
  auto t2 = std::chrono::steady_clock::now();
  const double rss_run = RssMb();
  const double compile_s = std::chrono::duration<double>(t1 - t0).count();
  const double run_s = std::chrono::duration<double>(t2 - t1).count();
  std::printf(
      "tasks=%d edges=%d compile=%.3fs run=%.3fs events=%ld (%.0f events/s, %.0f "
      "task completions/s, %ld transitions) outcome=%s\n",
      graph->size(), graph->EdgeCount(), compile_s, run_s, events, events / run_s,
      graph->size() / run_s, transitions, apollo11::ToString(run.Outcome()));
  std::printf("RSS MB: spec built %.1f, graph compiled %.1f, run finished %.1f\n", rss_spec,
              rss_graph, rss_run);
  return 0;
}
