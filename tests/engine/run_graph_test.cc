#include "engine/run_graph.h"

#include <catch2/catch.hpp>

#include "tests/engine/pipeline_builder.h"

using apollo11::engine::Edge;
using apollo11::engine::EdgeMet;
using apollo11::engine::RunGraph;
using apollo11::engine::testing::PipelineBuilder;
using C = apollo11::dsl::DependencyCondition;
using S = apollo11::TaskState;

TEST_CASE("a compiled graph has both edge directions and in-degrees", "[run_graph]") {
  PipelineBuilder b;
  b.Task("a").Task("b").After("a").Task("c").After("a", C::kFailure).After("b", C::kDone);
  auto g = b.Build();
  REQUIRE(g->size() == 3);
  CHECK(g->Find("c") == 2);
  CHECK(g->Find("zz") == -1);
  CHECK(g->InDegree(0) == 0);
  CHECK(g->InDegree(2) == 2);
  CHECK(g->EdgeCount() == 3);
  auto down = g->Dependents(0);
  REQUIRE(down.size() == 2);
  CHECK(down[0].task == 1);
  CHECK(down[0].on == C::kSuccess);
  CHECK(down[1].task == 2);
  CHECK(down[1].on == C::kFailure);
  CHECK(g->Upstream(2)[1].task == 1);
}

TEST_CASE("a graph that releases the declared dependencies keeps every edge", "[run_graph]") {
  PipelineBuilder b;
  b.Task("a").Task("b").Task("c").After("b").After("a", C::kDone).After("b", C::kFailure);
  auto compiled = RunGraph::Compile(b.spec());
  REQUIRE(compiled.ok());
  RunGraph g = std::move(compiled).value();
  g.ReleaseDeclaredDependencies();
  for (int i = 0; i < g.size(); ++i) CHECK(g.task(i).depends_on.empty());
  // Upstream(i) is the declared list: its order, a task listed twice twice.
  auto up = g.Upstream(2);
  REQUIRE(up.size() == 3);
  CHECK(g.id(up[0].task) == "b");
  CHECK(up[0].on == C::kSuccess);
  CHECK(g.id(up[1].task) == "a");
  CHECK(up[1].on == C::kDone);
  CHECK(g.id(up[2].task) == "b");
  CHECK(up[2].on == C::kFailure);
  CHECK(g.Dependents(1).size() == 2);
  CHECK(g.FailureHandled(0));
  CHECK(g.FailureHandled(1));
  CHECK(g.Find("c") == 2);
}

TEST_CASE("failure and timeout ends are handled only by matching edges", "[run_graph]") {
  PipelineBuilder b;
  b.Task("a")
      .Task("b")
      .Task("c")
      .Task("x")
      .After("a", C::kFailure)
      .After("b", C::kTimeout)
      .After("c", C::kDone);
  auto g = b.Build();
  CHECK(g->FailureHandled(0));
  CHECK_FALSE(g->TimeoutHandled(0));
  CHECK_FALSE(g->FailureHandled(1));
  CHECK(g->TimeoutHandled(1));
  CHECK(g->FailureHandled(2));
  CHECK(g->TimeoutHandled(2));
  CHECK_FALSE(g->FailureHandled(3));
}

TEST_CASE("edge conditions are met by the documented final states", "[run_graph]") {
  CHECK(EdgeMet(C::kSuccess, S::kSuccess));
  CHECK_FALSE(EdgeMet(C::kSuccess, S::kFailed));
  CHECK(EdgeMet(C::kFailure, S::kFailed));
  CHECK_FALSE(EdgeMet(C::kFailure, S::kTimeout));
  CHECK(EdgeMet(C::kTimeout, S::kTimeout));
  CHECK_FALSE(EdgeMet(C::kTimeout, S::kFailed));
  for (S s : {S::kSuccess, S::kFailed, S::kTimeout, S::kSkipped, S::kCanceled}) {
    CHECK(EdgeMet(C::kDone, s));
  }
  CHECK_FALSE(EdgeMet(C::kDone, S::kRunning));
  CHECK_FALSE(EdgeMet(C::kSuccess, S::kSkipped));
}

TEST_CASE("unknown dependencies, duplicate ids and cycles are refused", "[run_graph]") {
  {
    PipelineBuilder b;
    b.Task("a").After("ghost");
    auto g = RunGraph::Compile(b.spec());
    REQUIRE_FALSE(g.ok());
    CHECK(g.status().message().find("unknown task 'ghost'") != std::string::npos);
  }
  {
    PipelineBuilder b;
    b.Task("a").Task("a");
    CHECK_FALSE(RunGraph::Compile(b.spec()).ok());
  }
  {
    PipelineBuilder b;
    b.Task("root").Task("a").After("root").After("c").Task("b").After("a").Task("c").After("b");
    auto g = RunGraph::Compile(b.spec());
    REQUIRE_FALSE(g.ok());
    INFO(g.status().message());
    CHECK(g.status().message().find("dependency cycle: ") == 0);
    CHECK(g.status().message().find("a -> b -> c -> a") != std::string::npos);
  }
  {
    PipelineBuilder b;
    b.Task("self").After("self");
    CHECK_FALSE(RunGraph::Compile(b.spec()).ok());
  }
}

TEST_CASE(
    "Find gives each id its file index whatever the ids' order, and duplicates apart are refused",
    "[run_graph]") {
  PipelineBuilder b;
  const char* ids[] = {"t10", "t9", "b", "a", "t1", "T", "t1_0", "t0"};
  for (const char* id : ids) b.Task(id);
  auto g = b.Build();
  for (int i = 0; i < 8; ++i) CHECK(g->Find(ids[i]) == i);
  for (const char* absent : {"", "t", "t11", "c", "t1_", "zz"}) CHECK(g->Find(absent) == -1);

  PipelineBuilder dup;
  dup.Task("m").Task("a").Task("z").Task("m");
  auto refused = RunGraph::Compile(dup.spec());
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message() == "duplicate task id 'm'");
}
