// A rerun: the selection of what runs again (SelectReused) and DagRun's reused
// tasks (Reuse before Start).
#include <catch2/catch.hpp>

#include "engine/dag_run.h"
#include "engine/rerun_selection.h"
#include "tests/engine/pipeline_builder.h"

using apollo11::RunStatus;
using apollo11::StatusCode;
using apollo11::engine::RerunSelection;
using apollo11::engine::SelectReused;
using apollo11::engine::testing::Harness;
using apollo11::engine::testing::PipelineBuilder;
using C = apollo11::dsl::DependencyCondition;
using S = apollo11::TaskState;
using O = apollo11::AttemptOutcome;

namespace {

// extract -> transform -> load -> report, and audit after extract alone.
PipelineBuilder Etl() {
  PipelineBuilder b;
  b.Task("extract")
      .Task("transform")
      .After("extract")
      .Task("load")
      .After("transform")
      .Task("report")
      .After("load")
      .Task("audit")
      .After("extract");
  return b;
}

std::vector<uint8_t> Select(const PipelineBuilder& b, const std::vector<S>& original,
                            RerunSelection sel) {
  auto graph = b.Build();
  auto reused = SelectReused(*graph, original, sel);
  REQUIRE(reused.ok());
  return *reused;
}

}  // namespace

TEST_CASE("rerun --failed reuses what succeeded upstream and reruns the rest", "[rerun]") {
  // transform failed: load and report were canceled, audit succeeded.
  const std::vector<S> original = {S::kSuccess, S::kFailed, S::kCanceled, S::kCanceled,
                                   S::kSuccess};
  CHECK(Select(Etl(), original, {}) == std::vector<uint8_t>{1, 0, 0, 0, 1});
}

TEST_CASE("rerun --failed also reruns what succeeded downstream of a failure", "[rerun]") {
  // An on: failure handler after transform ran; with transform rerun it must
  // be decided again.
  PipelineBuilder b = Etl();
  b.Task("alert").After("transform", C::kFailure);
  const std::vector<S> original = {S::kSuccess,  S::kFailed,  S::kCanceled,
                                   S::kCanceled, S::kSuccess, S::kSuccess};
  CHECK(Select(b, original, {}) == std::vector<uint8_t>{1, 0, 0, 0, 1, 0});
}

TEST_CASE("rerun --failed of a run that succeeded is refused", "[rerun]") {
  auto graph = Etl().Build();
  auto r = SelectReused(*graph, std::vector<S>(5, S::kSuccess), {});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kInvalidInput);
  CHECK(r.status().message().find("nothing to rerun") != std::string::npos);
}

TEST_CASE("rerun --from with and without --downstream", "[rerun]") {
  const std::vector<S> all(5, S::kSuccess);
  // --from transform --downstream: transform, load, report run again.
  CHECK(Select(Etl(), all, {false, "transform", true}) == std::vector<uint8_t>{1, 0, 0, 0, 1});
  // --from transform alone: only transform; what depends on it keeps its
  // SUCCESS (as Airflow's clear without downstream).
  CHECK(Select(Etl(), all, {false, "transform", false}) == std::vector<uint8_t>{1, 0, 1, 1, 1});
  // ...but what did not succeed runs again whatever the selection.
  const std::vector<S> failed_load = {S::kSuccess, S::kSuccess, S::kFailed, S::kCanceled,
                                      S::kSuccess};
  CHECK(Select(Etl(), failed_load, {false, "extract", false}) ==
        std::vector<uint8_t>{0, 1, 0, 0, 1});
}

TEST_CASE("rerun --from an unknown task is refused naming it", "[rerun]") {
  auto graph = Etl().Build();
  auto r = SelectReused(*graph, std::vector<S>(5, S::kSuccess), {false, "nope", false});
  REQUIRE_FALSE(r.ok());
  CHECK(r.status().code() == StatusCode::kNotFound);
  CHECK(r.status().message().find("'nope'") != std::string::npos);
  auto short_states = SelectReused(*graph, std::vector<S>(4, S::kSuccess), {});
  CHECK(short_states.status().code() == StatusCode::kInvalidInput);
}

TEST_CASE("reused tasks are journaled SUCCESS and release their dependents", "[rerun][dag_run]") {
  Harness h(Etl());
  REQUIRE(h.Reuse("extract").ok());
  REQUIRE(h.Reuse("audit").ok());
  CHECK(h.S("extract") == S::kSuccess);
  CHECK(h.Reason("extract", S::kSuccess) == "reused from r1");
  h.Start();
  // transform waits on the reused extract only: READY at once.
  CHECK(h.S("transform") == S::kReady);
  CHECK(h.Reason("transform", S::kReady) == "dependency met: extract succeeded");
  CHECK(h.dispatched == std::vector<int>{h.T("transform")});
  CHECK(h.run.count(S::kSuccess) == 2);
  h.SucceedAll();
  CHECK(h.run.Finished());
  CHECK(h.run.Outcome() == RunStatus::kSuccess);
  // extract and audit never went READY in this run.
  for (const auto& t : h.log) {
    if (t.task == h.T("extract") || t.task == h.T("audit")) CHECK(t.to == S::kSuccess);
  }
}

TEST_CASE("a reused task downstream of a rerun one keeps its SUCCESS", "[rerun][dag_run]") {
  Harness h(Etl());
  for (const char* id : {"extract", "load", "report", "audit"}) REQUIRE(h.Reuse(id).ok());
  h.Start();
  CHECK(h.S("transform") == S::kReady);
  REQUIRE(h.Finish("transform", O::kFailed, 1).ok());
  CHECK(h.S("load") == S::kSuccess);
  CHECK(h.run.Finished());
  CHECK(h.run.Outcome() == RunStatus::kFailed);
}

TEST_CASE("a branch handler of a reused task is skipped as after a success", "[rerun][dag_run]") {
  PipelineBuilder b;
  b.Task("a").Task("on_fail").After("a", C::kFailure).Task("next").After("a");
  Harness h(b);
  REQUIRE(h.Reuse("a").ok());
  h.Start();
  CHECK(h.S("on_fail") == S::kSkipped);
  CHECK(h.S("next") == S::kReady);
}

TEST_CASE("a run whose every task is reused is finished at Start", "[rerun][dag_run]") {
  Harness h(Etl());
  for (const char* id : {"extract", "transform", "load", "report", "audit"}) {
    REQUIRE(h.Reuse(id).ok());
  }
  h.Start();
  CHECK(h.run.Finished());
  CHECK(h.run.Outcome() == RunStatus::kSuccess);
  CHECK(h.dispatched.empty());
}

TEST_CASE("Reuse refuses a task not PENDING, a bad index and a started run", "[rerun][dag_run]") {
  Harness h(Etl());
  REQUIRE(h.Reuse("extract").ok());
  CHECK(h.Reuse("extract").code() == StatusCode::kInvalidInput);
  CHECK(h.run.Reuse(99, "x", &h.fx).code() == StatusCode::kInvalidInput);
  h.Start();
  CHECK(h.run.Reuse(h.T("report"), "x", &h.fx).code() == StatusCode::kInternal);
  CHECK(h.S("report") == S::kPending);
}

TEST_CASE("a rerun recovered after a crash restores reused tasks as SUCCESS", "[rerun][dag_run]") {
  // The journal holds the reused SUCCESS like any other: Restore + Resume.
  Harness h(Etl());
  REQUIRE(h.run.Restore(h.T("extract"), S::kSuccess, 0, 0, 0).ok());
  REQUIRE(h.run.Restore(h.T("audit"), S::kSuccess, 0, 0, 0).ok());
  REQUIRE(h.run.Resume(h.now, &h.fx).ok());
  h.Absorb();
  h.Promote();
  CHECK(h.S("transform") == S::kReady);
  h.SucceedAll();
  CHECK(h.run.Outcome() == RunStatus::kSuccess);
}
