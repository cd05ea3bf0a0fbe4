#include "actors/dispatch_builder.h"

#include <catch2/catch.hpp>

#include "common/ids.h"

using namespace apollo11;          // NOLINT: test file
using namespace apollo11::actors;  // NOLINT: test file

namespace {

// A run of "up" -> "down", both shell tasks, with a parameter.
SchedulerRun MakeRun() {
  dsl::PipelineSpec spec;
  spec.version = "1.0";
  spec.name = "test.builder";
  for (const char* id : {"up", "down"}) {
    dsl::TaskSpec t;
    t.id = id;
    t.type = dsl::TaskType::kShell;
    t.command = "true";
    t.group = "etl";
    spec.tasks.push_back(t);
  }
  spec.tasks[1].depends_on.push_back({"up", dsl::DependencyCondition::kSuccess, {}});
  spec.tasks[1].idempotency_key = "${params.date}-${task_id}";
  spec.tasks[1].timeout = Millis(5000);
  auto graph = engine::RunGraph::Compile(std::move(spec));
  REQUIRE(graph.ok());
  SchedulerRun run;
  run.run_id = "r1";
  run.trace_id = "t1";
  run.graph = std::make_shared<const engine::RunGraph>(std::move(*graph));
  run.dag = std::make_unique<engine::DagRun>(run.graph, engine::DagRunOptions{});
  run.record.params = {{"date", "2026-12-01"}};
  run.execs.resize(2);
  run.outputs = {"0123456789", ""};
  run.expected_ms = {7, 9};
  for (int i = 0; i < 2; ++i) run.execs[i].exec_id = MakeExecId("r1", run.spec().tasks[i].id);
  return run;
}

}  // namespace

TEST_CASE("the dispatch builder fills placement facts, the key and the task's environment",
          "[scheduler][dispatch]") {
  SchedulerRun run = MakeRun();
  DispatchBuilder builder(Millis(2000), /*output_env_cap=*/4);
  const Micros now = 1'000'000;
  QueuedExec q = builder.Build(run, 1, now);
  CHECK(q.group == "etl");
  CHECK(q.expected_ms == 9);
  CHECK(q.ready_at == now);
  CHECK(q.dispatch.exec_id == "r1.down");
  CHECK(q.dispatch.trace_id == "t1");
  CHECK(q.dispatch.task.kill_grace_ms == 2000);
  CHECK(q.dispatch.task.timeout_ms == 5000);
  const auto& env = q.dispatch.task.env;
  CHECK(env.at("APOLLO11_RUN_ID") == "r1");
  // The key reaches the task in its environment (protocol 2 sends it nowhere else).
  CHECK(env.at("APOLLO11_IDEMPOTENCY_KEY") == "2026-12-01-down");
  CHECK(env.at("APOLLO11_EXECUTION_ID") == "r1.down");
  CHECK(env.at("APOLLO11_PARAM_DATE") == "2026-12-01");
  CHECK(env.at("APOLLO11_PIPELINE") == "test.builder");
  // Only the tail of an upstream's output, up to the cap.
  CHECK(env.at("APOLLO11_OUTPUT_UP") == "6789");
}

TEST_CASE("an idempotency key without a template is run.task", "[scheduler][dispatch]") {
  CHECK(DispatchBuilder::ExpandKey("", "r1", "t", {}) == "r1.t");
  CHECK(DispatchBuilder::ExpandKey("${run_id}/${task_id}/${params.x}", "r1", "t", {{"x", "1"}}) ==
        "r1/t/1");
  CHECK(DispatchBuilder::ExpandKey("open ${run_id", "r1", "t", {}) == "open ${run_id");
}
