// The metrics registry and its Prometheus text: values, exposition parsed
// back by a strict parser, escaping, histograms, concurrent writers.

#include "observability/metrics_registry.h"

#include <unistd.h>

#include <array>
#include <catch2/catch.hpp>
#include <cmath>
#include <ctime>
#include <set>
#include <thread>
#include <vector>

#include "observability/coordinator_metrics.h"
#include "observability/process_metrics.h"
#include "observability/worker_metrics.h"
#include "tests/observability/prom_parser.h"

using apollo11::testing::ParsePrometheusText;
using apollo11::testing::PromScrape;
using namespace apollo11::observability;  // NOLINT: test file

TEST_CASE("counters, gauges and computed gauges are exposed with HELP and TYPE", "[metrics]") {
  Registry r;
  Counter& c = r.AddCounter("apollo11_things_total", "Things done.");
  Gauge& g = r.AddGauge("apollo11_depth", "Depth now.", {{"queue", "a"}});
  Gauge& g2 = r.AddGauge("apollo11_depth", "Depth now.", {{"queue", "b"}});
  r.AddComputedGauge("apollo11_ratio", "A ratio.", [&c] { return c.value() / 4.0; });
  c.Inc();
  c.Inc(2);
  g.Set(7);
  g.Add(-10);
  g2.Set(5);

  const std::string text = r.WriteText();
  PromScrape s = ParsePrometheusText(text);
  INFO(text);
  REQUIRE(s.error.empty());
  CHECK(s.types["apollo11_things_total"] == "counter");
  CHECK(s.types["apollo11_depth"] == "gauge");
  CHECK(s.help["apollo11_things_total"] == "Things done.");
  CHECK(s.Value("apollo11_things_total") == 3);
  CHECK(s.Value("apollo11_depth", {{"queue", "a"}}) == -3);
  CHECK(s.Value("apollo11_depth", {{"queue", "b"}}) == 5);
  CHECK(s.Value("apollo11_ratio") == 0.75);
  // Both series of a family under one HELP/TYPE.
  CHECK(text.find("# TYPE apollo11_depth gauge") == text.rfind("# TYPE apollo11_depth gauge"));
}

TEST_CASE("histograms are cumulative, end in +Inf and count what was observed", "[metrics]") {
  Registry r;
  Histogram& h = r.AddHistogram("apollo11_wait_seconds", "Waits.", {0.001, 0.01, 0.1});
  for (double v : {0.0005, 0.001, 0.005, 0.05, 0.05, 2.0}) h.Observe(v);
  PromScrape s = ParsePrometheusText(r.WriteText());
  REQUIRE(s.error.empty());
  CHECK(s.types["apollo11_wait_seconds"] == "histogram");
  CHECK(s.Value("apollo11_wait_seconds_bucket", {{"le", "0.001"}}) == 2);  // le is inclusive
  CHECK(s.Value("apollo11_wait_seconds_bucket", {{"le", "0.01"}}) == 3);
  CHECK(s.Value("apollo11_wait_seconds_bucket", {{"le", "0.1"}}) == 5);
  CHECK(s.Value("apollo11_wait_seconds_bucket", {{"le", "+Inf"}}) == 6);
  CHECK(s.Value("apollo11_wait_seconds_count") == 6);
  CHECK(s.Value("apollo11_wait_seconds_sum") == Approx(2.1065));
}

TEST_CASE("bucket bounds print in their shortest exact form", "[metrics]") {
  Registry r;
  r.AddHistogram("apollo11_x_seconds", "X.", FastLatencyBuckets());
  const std::string text = r.WriteText();
  CHECK(text.find("le=\"0.05\"") != std::string::npos);
  CHECK(text.find("le=\"5e-05\"") != std::string::npos);
  CHECK(text.find("0000000") == std::string::npos);
}

TEST_CASE("label values and help text are escaped", "[metrics]") {
  Registry r;
  r.AddGauge("apollo11_odd", "Help with a \\ backslash\nand a newline.",
             {{"path", "C:\\dir \"quoted\"\nnext"}})
      .Set(1);
  const std::string text = r.WriteText();
  CHECK(text.find("# HELP apollo11_odd Help with a \\\\ backslash\\nand a newline.\n") !=
        std::string::npos);
  PromScrape s = ParsePrometheusText(text);
  INFO(text);
  REQUIRE(s.error.empty());
  CHECK(s.Value("apollo11_odd", {{"path", "C:\\dir \"quoted\"\nnext"}}) == 1);
}

TEST_CASE("concurrent writers lose no update", "[metrics]") {
  Registry r;
  Counter& c = r.AddCounter("apollo11_n_total", "N.");
  Histogram& h = r.AddHistogram("apollo11_h_seconds", "H.", {0.5});
  Gauge& g = r.AddGauge("apollo11_g", "G.");
  constexpr int kThreads = 4, kEach = 100000;
  {
    std::vector<std::jthread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < kEach; ++i) {
          c.Inc();
          g.Add(t % 2 ? 1 : -1);
          h.Observe(i % 2 ? 0.25 : 1.0);
        }
      });
    }
    // A scrape in the middle of it all stays well-formed.
    PromScrape mid = ParsePrometheusText(r.WriteText());
    CHECK(mid.error.empty());
  }
  PromScrape s = ParsePrometheusText(r.WriteText());
  REQUIRE(s.error.empty());
  CHECK(s.Value("apollo11_n_total") == kThreads * kEach);
  CHECK(s.Value("apollo11_g") == 0);
  CHECK(s.Value("apollo11_h_seconds_count") == kThreads * kEach);
  CHECK(s.Value("apollo11_h_seconds_bucket", {{"le", "0.5"}}) == kThreads * kEach / 2);
  CHECK(s.Value("apollo11_h_seconds_sum") == Approx(kThreads * kEach * 0.625));
}

TEST_CASE("the coordinator and worker metric sets register together and follow the naming rules",
          "[metrics]") {
  Registry r;
  CoordinatorMetrics c(r);
  WorkerMetrics w(r);
  PipelineMetrics* p = c.Pipeline("test.p");
  c.RunSubmitted(3);
  c.Transition(apollo11::TaskState::kPending, apollo11::TaskState::kReady, p);
  c.Transition(apollo11::TaskState::kReady, apollo11::TaskState::kRunning, p);
  c.Transition(apollo11::TaskState::kRunning, apollo11::TaskState::kRetrying, p);
  c.RunFinished(apollo11::RunStatus::kFailed, p, 2 * apollo11::kMicrosPerSecond);
  c.Committed(true, 3, 1500);
  c.Committed(false, 2, 10);
  w.Launched(true, 250, 1);

  PromScrape s = ParsePrometheusText(r.WriteText());
  REQUIRE(s.error.empty());
  for (const auto& [family, type] : s.types) {
    INFO(family);
    CHECK(family.rfind("apollo11_", 0) == 0);
    const bool total = family.size() > 6 && family.compare(family.size() - 6, 6, "_total") == 0;
    CHECK(total == (type == "counter"));  // counters and only counters end in _total
    if (type == "histogram") CHECK(family.find("_seconds") != std::string::npos);
  }
  CHECK(s.Value("apollo11_executions", {{"state", "pending"}}) == 2);
  CHECK(s.Value("apollo11_executions", {{"state", "retrying"}}) == 1);
  CHECK(s.Value("apollo11_executions", {{"state", "ready"}}) == 0);
  CHECK(s.Value("apollo11_transitions_total", {{"to", "running"}}) == 1);
  CHECK(s.Value("apollo11_retry_ratio") == Approx(1.0 / 3));
  CHECK(s.Value("apollo11_runs_finished_total", {{"outcome", "failed"}}) == 1);
  CHECK(s.Value("apollo11_runs_active") == 0);
  CHECK(s.Value("apollo11_journal_commits_total") == 1);
  CHECK(s.Value("apollo11_journal_commit_failures_total") == 1);
  CHECK(s.Value("apollo11_journal_transitions_total") == 3);
  CHECK(s.Value("apollo11_journal_commit_seconds_sum") == Approx(0.0015));
  CHECK(s.Value("apollo11_worker_running") == 1);

  // A recovered run's executions join the gauge in their current states.
  std::array<size_t, apollo11::kTaskStateCount> recovered{};
  recovered[static_cast<int>(apollo11::TaskState::kRunning)] = 2;
  c.RunRecovered(recovered);
  c.Transition(apollo11::TaskState::kRunning, apollo11::TaskState::kSuccess, p);
  PromScrape r2 = ParsePrometheusText(r.WriteText());
  CHECK(r2.Value("apollo11_executions", {{"state", "running"}}) == 1);
  CHECK(r2.Value("apollo11_runs_active") == 1);
  CHECK(r2.Value("apollo11_executions_created_total") == 3);  // not created again
  CHECK(s.Value("apollo11_worker_spawn_seconds_count") == 1);
}

TEST_CASE("finished executions are counters by lower-case state, current ones a gauge",
          "[metrics]") {
  Registry r;
  CoordinatorMetrics c(r);
  PipelineMetrics* p = c.Pipeline("test.p");
  c.RunSubmitted(2);
  c.Transition(apollo11::TaskState::kPending, apollo11::TaskState::kReady, p);
  c.Transition(apollo11::TaskState::kReady, apollo11::TaskState::kRunning, p);
  c.Transition(apollo11::TaskState::kRunning, apollo11::TaskState::kSuccess, p);
  c.Transition(apollo11::TaskState::kPending, apollo11::TaskState::kCanceled, p);
  PromScrape s = ParsePrometheusText(r.WriteText());
  REQUIRE(s.error.empty());
  CHECK(s.types["apollo11_executions_finished_total"] == "counter");
  CHECK(s.Value("apollo11_executions_finished_total", {{"state", "success"}}) == 1);
  CHECK(s.Value("apollo11_executions_finished_total", {{"state", "canceled"}}) == 1);
  CHECK(s.Sum("apollo11_executions") == 0);
  // The gauge holds current states only: no series that could only grow.
  CHECK(std::isnan(s.Value("apollo11_executions", {{"state", "success"}})));
  for (const auto& sample : s.samples) {
    for (const auto& [k, v] : sample.labels) {
      if (k != "state" && k != "to" && k != "outcome") continue;
      INFO(sample.name << " " << k << "=" << v);
      CHECK(v.find_first_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ") == std::string::npos);
    }
  }
}

TEST_CASE("per-pipeline outcomes and durations are counted under the pipeline's name",
          "[metrics]") {
  Registry r;
  CoordinatorMetrics c(r);
  PipelineMetrics* a = c.Pipeline("billing.nightly");
  PipelineMetrics* b = c.Pipeline("report.daily");
  CHECK(c.Pipeline("billing.nightly") == a);
  c.RunSubmitted(1);
  c.RunSubmitted(1);
  c.Transition(apollo11::TaskState::kRunning, apollo11::TaskState::kFailed, a);
  c.Transition(apollo11::TaskState::kRunning, apollo11::TaskState::kSuccess, b);
  a->AttemptRan(3 * apollo11::kMicrosPerSecond);
  c.RunFinished(apollo11::RunStatus::kFailed, a, 90 * apollo11::kMicrosPerSecond);
  c.RunFinished(apollo11::RunStatus::kSuccess, b, 2 * apollo11::kMicrosPerSecond);
  PromScrape s = ParsePrometheusText(r.WriteText());
  REQUIRE(s.error.empty());
  using L = std::map<std::string, std::string>;
  CHECK(s.Value("apollo11_pipeline_runs_finished_total",
                L{{"pipeline", "billing.nightly"}, {"state", "failed"}}) == 1);
  CHECK(s.Value("apollo11_pipeline_runs_finished_total",
                L{{"pipeline", "billing.nightly"}, {"state", "success"}}) == 0);
  CHECK(s.Value("apollo11_pipeline_runs_finished_total",
                L{{"pipeline", "report.daily"}, {"state", "success"}}) == 1);
  CHECK(s.Value("apollo11_pipeline_executions_finished_total",
                L{{"pipeline", "billing.nightly"}, {"state", "failed"}}) == 1);
  CHECK(s.Value("apollo11_pipeline_executions_finished_total",
                L{{"pipeline", "report.daily"}, {"state", "success"}}) == 1);
  CHECK(s.types["apollo11_pipeline_run_duration_seconds"] == "histogram");
  CHECK(s.Value("apollo11_pipeline_run_duration_seconds_count",
                L{{"pipeline", "billing.nightly"}}) == 1);
  CHECK(s.Value("apollo11_pipeline_run_duration_seconds_sum", L{{"pipeline", "billing.nightly"}}) ==
        90);
  CHECK(s.Value("apollo11_pipeline_run_duration_seconds_bucket",
                L{{"pipeline", "billing.nightly"}, {"le", "60"}}) == 0);
  CHECK(s.Value("apollo11_pipeline_run_duration_seconds_bucket",
                L{{"pipeline", "billing.nightly"}, {"le", "300"}}) == 1);
  CHECK(s.Value("apollo11_pipeline_task_duration_seconds_sum",
                L{{"pipeline", "billing.nightly"}}) == 3);
  CHECK(s.Value("apollo11_pipeline_task_duration_seconds_count", L{{"pipeline", "report.daily"}}) ==
        0);
}

TEST_CASE("pipelines past the first 500 names share the label other", "[metrics]") {
  Registry r;
  PipelineMetricsTable table(r);
  std::vector<PipelineMetrics*> first;
  for (size_t i = 0; i < PipelineMetricsTable::kMaxPipelines; ++i) {
    first.push_back(table.For("p.n" + std::to_string(i)));
  }
  PipelineMetrics* late = table.For("p.late");
  CHECK(table.For("p.later") == late);
  CHECK(table.For("p.n0") == first[0]);  // the first ones keep their own
  late->RunFinished(apollo11::RunStatus::kSuccess, 0);
  PromScrape s = ParsePrometheusText(r.WriteText());
  REQUIRE(s.error.empty());
  std::set<std::string> names;
  for (const auto& sample : s.samples) {
    auto it = sample.labels.find("pipeline");
    if (it != sample.labels.end()) names.insert(it->second);
  }
  CHECK(names.size() == PipelineMetricsTable::kMaxPipelines + 1);
  CHECK(names.count("other") == 1);
  CHECK(names.count("p.late") == 0);
  CHECK(s.Value("apollo11_pipeline_runs_finished_total",
                {{"pipeline", "other"}, {"state", "success"}}) == 1);
}

TEST_CASE("process metrics and build info are exposed from /proc/self", "[metrics]") {
  Registry r;
  AddProcessMetrics(r);
  AddBuildInfo(r, "1.2.3", "abc123");
  PromScrape s = ParsePrometheusText(r.WriteText());
  REQUIRE(s.error.empty());
  CHECK(s.types["process_cpu_seconds_total"] == "counter");
  CHECK(s.Value("process_cpu_seconds_total") >= 0);
  CHECK(s.Value("process_resident_memory_bytes") > 1024 * 1024);
  CHECK(s.Value("process_virtual_memory_bytes") >= s.Value("process_resident_memory_bytes"));
  CHECK(s.Value("process_open_fds") >= 3);
  CHECK(s.Value("process_max_fds") >= s.Value("process_open_fds"));
  const double now = static_cast<double>(std::time(nullptr));
  CHECK(s.Value("process_start_time_seconds") > now - 3600);
  CHECK(s.Value("process_start_time_seconds") <= now + 1);
  CHECK(s.Value("apollo11_build_info", {{"version", "1.2.3"}, {"commit", "abc123"}}) == 1);
}

TEST_CASE("a /proc stat line whose command holds spaces and parentheses parses", "[metrics]") {
  // Fields 3.. after "(a) b)": state, ppid, ..., utime=14, stime=15, ..., starttime=22,
  // vsize=23, rss=24.
  std::string line = "42 (a) b) S";
  for (int field = 4; field <= 30; ++field) {
    line += ' ';
    line += field == 14   ? "300"
            : field == 15 ? "100"
            : field == 23 ? "4096000"
            : field == 24 ? "10"
                          : "0";
  }
  ProcStat st;
  REQUIRE(ParseProcStat(line, &st));
  CHECK(st.cpu_seconds == Approx(400.0 / static_cast<double>(::sysconf(_SC_CLK_TCK))));
  CHECK(st.virtual_bytes == 4096000);
  CHECK(st.resident_bytes == 10.0 * static_cast<double>(::sysconf(_SC_PAGESIZE)));
  CHECK_FALSE(ParseProcStat("42 (truncated", &st));
  CHECK_FALSE(ParseProcStat("42 (x) S 1 2", &st));
}
