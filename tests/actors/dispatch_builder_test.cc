#include "actors/scheduler/dispatch_builder.h"

#include <catch2/catch.hpp>

#include "common/wire_limits.h"
#include "transport/codec.h"

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
  run.outputs = {std::string("0123456789"), std::string()};
  run.expected_ms = {7, 9};
  for (int i = 0; i < 2; ++i) run.execs[i].task_id = run.spec().tasks[i].id;
  return run;
}

// The value of one input of the DISPATCH, or "<none>".
std::string Input(const QueuedExec& q, transport::InputKind kind, const std::string& name) {
  for (const transport::TaskInput& in : q.dispatch.task.inputs) {
    if (in.kind == static_cast<uint8_t>(kind) && in.name == name) return in.value;
  }
  return "<none>";
}

// A run of `fan_in` upstreams joined by "join"; every upstream printed
// `output`.
SchedulerRun WideRun(int fan_in, const std::string& output) {
  dsl::PipelineSpec spec;
  spec.version = "1.0";
  spec.name = "test.wide";
  dsl::TaskSpec join;
  join.id = "join";
  join.type = dsl::TaskType::kShell;
  join.command = "true";
  for (int i = 0; i < fan_in; ++i) {
    dsl::TaskSpec t;
    t.id = "u" + std::to_string(i);
    t.type = dsl::TaskType::kShell;
    t.command = "true";
    spec.tasks.push_back(t);
    join.depends_on.push_back({t.id, dsl::DependencyCondition::kSuccess, {}});
  }
  spec.tasks.push_back(join);
  auto graph = engine::RunGraph::Compile(std::move(spec));
  REQUIRE(graph.ok());
  SchedulerRun run;
  run.run_id = "r1";
  run.graph = std::make_shared<const engine::RunGraph>(std::move(*graph));
  run.dag = std::make_unique<engine::DagRun>(run.graph, engine::DagRunOptions{});
  const size_t n = static_cast<size_t>(fan_in) + 1;
  run.execs.resize(n);
  run.outputs.assign(n, output);
  run.expected_ms.assign(n, 0);
  for (size_t i = 0; i < n; ++i) run.execs[i].task_id = run.spec().tasks[i].id;
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
  CHECK(Input(q, transport::InputKind::kParam, "date") == "2026-12-01");
  CHECK(env.at("APOLLO11_PIPELINE") == "test.builder");
  // Only the tail of an upstream's output, up to the cap.
  CHECK(Input(q, transport::InputKind::kOutput, "up") == "6789");
  // Inputs travel apart from the environment (the worker writes them to files).
  CHECK(env.count("APOLLO11_PARAM_DATE") == 0);
  CHECK(env.count("APOLLO11_OUTPUT_UP") == 0);
}

TEST_CASE("an idempotency key without a template is run.task", "[scheduler][dispatch]") {
  CHECK(DispatchBuilder::ExpandKey("", "r1", "t", {}) == "r1.t");
  CHECK(DispatchBuilder::ExpandKey("${run_id}/${task_id}/${params.x}", "r1", "t", {{"x", "1"}}) ==
        "r1/t/1");
  CHECK(DispatchBuilder::ExpandKey("open ${run_id", "r1", "t", {}) == "open ${run_id");
}

TEST_CASE("a DISPATCH of 10000 upstream outputs fits the worker's decoder",
          "[scheduler][dispatch][limits]") {
  // 10,000 x 64 KiB of output: far over a frame if sent whole.
  SchedulerRun run = WideRun(10'000, std::string(64 << 10, 'o'));
  DispatchBuilder builder(Millis(2000), /*output_env_cap=*/64 << 10);
  QueuedExec q = builder.Build(run, 10'000, 0);
  const transport::TaskPayload& p = q.dispatch.task;
  CHECK(p.refusal.empty());
  REQUIRE(p.inputs.size() == 10'000);
  const size_t share = DispatchBuilder::OutputShare(64 << 10, 10'000);
  CHECK(share == kMaxDispatchOutputsBytes / 10'000);
  CHECK(p.inputs.front().value.size() == share);
  std::string frame;
  transport::Encode(transport::MsgType::kDispatch, q.dispatch, &frame);
  CHECK(frame.size() <= kWireMaxFrameBytes);
  auto decoded = transport::DecodeEnvelope(frame.data(), frame.size());  // the worker's limits
  REQUIRE(decoded.ok());
  auto body = transport::BodyAs<transport::Dispatch>(*decoded);
  REQUIRE(body.ok());
  CHECK(body->task.inputs.size() == 10'000);
}

TEST_CASE("a small join gets each upstream's whole output tail", "[scheduler][dispatch][limits]") {
  SchedulerRun run = WideRun(70, std::string(40'000, 'o'));
  DispatchBuilder builder(Millis(2000), /*output_env_cap=*/64 << 10);
  QueuedExec q = builder.Build(run, 70, 0);
  REQUIRE(q.dispatch.task.inputs.size() == 70);
  for (const auto& in : q.dispatch.task.inputs) CHECK(in.value.size() == 40'000);
}

TEST_CASE("a DISPATCH the worker could not decode is sent as a refusal naming the limit",
          "[scheduler][dispatch][limits]") {
  SchedulerRun run = MakeRun();
  // Beyond validation (an old snapshot, a client that skipped it): one value
  // over the worker's string limit.
  run.record.params["huge"] = std::string(kWireMaxStringBytes + 1, 'h');
  DispatchBuilder builder(Millis(2000), 4);
  QueuedExec q = builder.Build(run, 1, 0);
  const transport::TaskPayload& p = q.dispatch.task;
  CHECK(p.inputs.empty());
  CHECK(p.refusal.find("the task cannot be sent to a worker: a DISPATCH of") == 0);
  CHECK(p.refusal.find("one string at most 1048576 bytes") != std::string::npos);
  CHECK(transport::CheckFits(transport::MsgType::kDispatch, q.dispatch).ok());
}

TEST_CASE("the dispatch builder expands templates from params and journaled outputs",
          "[scheduler][dispatch][template]") {
  SchedulerRun run = MakeRun();
  run.execs[0].task_output = R"({"file":"a b.csv","n":[5]})";
  // The graph's spec is immutable: build one whose "down" uses templates.
  dsl::PipelineSpec spec = run.spec();
  spec.tasks[1].command = "wc -l ${tasks.up.output.file} # ${params.date} ${HOME}";
  spec.tasks[1].env = {{"N", "${tasks.up.output.n.0}"}, {"K", "${task.idempotency_key}"}};
  auto graph = engine::RunGraph::Compile(std::move(spec));
  REQUIRE(graph.ok());
  run.graph = std::make_shared<const engine::RunGraph>(std::move(*graph));
  DispatchBuilder builder(Millis(2000), 4);
  QueuedExec q = builder.Build(run, 1, 0);
  INFO(q.dispatch.task.refusal);
  CHECK(q.dispatch.task.refusal.empty());
  CHECK(q.dispatch.task.command == "wc -l 'a b.csv' # '2026-12-01' ${HOME}");
  CHECK(q.dispatch.task.env.at("N") == "5");
  CHECK(q.dispatch.task.env.at("K") == "2026-12-01-down");

  // An output without the path: the attempt is refused with the reason.
  run.execs[0].task_output = R"({"other":1})";
  QueuedExec refused = builder.Build(run, 1, 0);
  CHECK(refused.dispatch.task.command.empty());
  CHECK(refused.dispatch.task.refusal ==
        "could not fill in the task's fields: 'command': placeholder ${tasks.up.output.file}: "
        "task 'up' output has no 'file'");
}

TEST_CASE("a db task's params are expanded by the coordinator and sent as values to bind",
          "[scheduler][dispatch][template]") {
  SchedulerRun run = MakeRun();
  run.execs[0].task_output = R"({"rows":[{"id":"o'1"}]})";
  dsl::PipelineSpec spec = run.spec();
  spec.tasks[1].type = dsl::TaskType::kDb;
  spec.tasks[1].command.clear();
  spec.tasks[1].db_host = "sqlite:///tmp/x.db";
  spec.tasks[1].sql = "INSERT INTO t VALUES (?, ?, ?)";
  spec.tasks[1].sql_params = {"${task.idempotency_key}", "${tasks.up.output.rows.0.id}",
                              "${params.date}"};
  auto graph = engine::RunGraph::Compile(std::move(spec));
  REQUIRE(graph.ok());
  run.graph = std::make_shared<const engine::RunGraph>(std::move(*graph));
  DispatchBuilder builder(Millis(2000), 4);
  QueuedExec q = builder.Build(run, 1, 0);
  INFO(q.dispatch.task.refusal);
  CHECK(q.dispatch.task.refusal.empty());
  // Raw values, no shell quoting: they are bound, never pasted into the SQL.
  CHECK(q.dispatch.task.sql_params ==
        std::vector<std::string>{"2026-12-01-down", "o'1", "2026-12-01"});
  CHECK(q.dispatch.task.sql == "INSERT INTO t VALUES (?, ?, ?)");
  CHECK(q.dispatch.task.inputs.empty());
}
