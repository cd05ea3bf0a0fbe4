// registry: versions, pause, removal, idempotent trigger keys and param
// checks, through SchedulerCore over the in-memory store.

#include "actors/registry/pipeline_registry.h"

#include <catch2/catch.hpp>
#include <string>

#include "actors/scheduler/scheduler_core.h"
#include "alerts/sink.h"
#include "dsl/param_values.h"
#include "dsl/pipeline_json.h"
#include "storage/journal.h"
#include "storage/memory_run_store.h"
#include "tests/storage/storage_test_util.h"

using namespace apollo11;          // NOLINT: test file
using namespace apollo11::actors;  // NOLINT: test file

namespace {

dsl::PipelineSpec Spec(const std::string& name, const std::string& command) {
  dsl::PipelineSpec spec;
  spec.version = "1.0";
  spec.name = name;
  spec.params = {{"day", "2026-01-01"}, {"limit", "10"}, {"dry", "false"}};
  dsl::TaskSpec t;
  t.id = "a";
  t.type = dsl::TaskType::kShell;
  t.command = command;
  spec.tasks.push_back(t);
  return spec;
}

struct RecordingSink final : alerts::Sink {
  void Emit(alerts::AlertEvent event) override { events.push_back(std::move(event)); }
  std::vector<alerts::AlertEvent> events;
};

struct RegistryFixture {
  explicit RegistryFixture(storage::RunStore* s = nullptr, bool prefix = false)
      : store(s ? s : &memory), core(store, &clock, Options(prefix)) {}
  SchedulerOptions Options(bool prefix) {
    SchedulerOptions o;
    o.alerts = &sink;
    o.require_domain_prefix = prefix;
    return o;
  }
  Result<PipelineRegistry::Added> Add(const dsl::PipelineSpec& spec) {
    storage::RunBatch batch;
    auto added = core.registry().pipelines().Add(
        spec.name, dsl::ContentHash(spec), dsl::CanonicalJson(spec), clock.Now(), "test", &batch);
    if (added.ok()) REQUIRE(store->Commit(batch).ok());
    return added;
  }
  Status Flush() {
    SchedulerOutbox out;
    return core.Flush(&out);
  }
  FakeClock clock;
  RecordingSink sink;
  storage::MemoryRunStore memory;
  storage::RunStore* store;
  SchedulerCore core;
};

}  // namespace

TEST_CASE("adding a pipeline twice keeps one version and a change adds the next", "[registry]") {
  RegistryFixture f;
  auto v1 = f.Add(Spec("etl.daily", "echo 1"));
  REQUIRE(v1.ok());
  CHECK(v1->version.version == 1);
  CHECK_FALSE(v1->unchanged);
  auto again = f.Add(Spec("etl.daily", "echo 1"));
  REQUIRE(again.ok());
  CHECK(again->unchanged);
  CHECK(again->version.version == 1);
  auto v2 = f.Add(Spec("etl.daily", "echo 2"));
  REQUIRE(v2.ok());
  CHECK(v2->version.version == 2);
  CHECK(f.store->PipelineVersions("etl.daily")->size() == 2);
  CHECK((*f.store->GetPipelineState("etl.daily"))->active == 2);

  auto& r = f.core.registry().pipelines();
  CHECK(r.Resolve("etl.daily", "")->version == 2);
  CHECK(r.Resolve("etl.daily", "1")->version == 1);
  CHECK(r.Resolve("etl.daily", VersionLabel(v1->version))->version == 1);
  CHECK(r.Resolve("etl.daily", v1->version.hash.substr(0, 6))->version == 1);
  CHECK(r.Resolve("etl.daily", "7").status().code() == StatusCode::kNotFound);
  CHECK(r.Resolve("nope.x", "").status().code() == StatusCode::kNotFound);
}

TEST_CASE("a run started from the registry is pinned to its version", "[registry]") {
  RegistryFixture f;
  REQUIRE(f.Add(Spec("etl.daily", "echo 1")).ok());
  REQUIRE(f.Add(Spec("etl.daily", "echo 2")).ok());
  StartRequest req;
  req.name = "etl.daily";
  req.version = "1";
  req.params = {{"limit", "5"}};
  auto started = f.core.registry().StartPinned(req);
  REQUIRE(started.ok());
  CHECK(started->version == 1);
  REQUIRE(f.Flush().ok());
  auto run = f.store->GetRun(started->run_id);
  REQUIRE(run.ok());
  REQUIRE(run->has_value());
  CHECK((*run)->pipeline_version == 1);
  CHECK((*run)->params.at("limit") == "5");
  CHECK((*run)->params.at("day") == "2026-01-01");
  req.version.clear();
  auto latest = f.core.registry().StartPinned(req);
  REQUIRE(latest.ok());
  CHECK(latest->version == 2);
}

TEST_CASE("the same trigger key starts one run, also after a restart", "[registry]") {
  storage::testing::TempDir tmp;
  std::string first;
  {
    auto journal = storage::Journal::Open(tmp.path(), {});
    REQUIRE(journal.ok());
    RegistryFixture f(journal->get());
    REQUIRE(f.Add(Spec("etl.daily", "echo 1")).ok());
    StartRequest req;
    req.name = "etl.daily";
    req.trigger_key = "order-42";
    auto a = f.core.registry().StartPinned(req);
    REQUIRE(a.ok());
    CHECK_FALSE(a->existing);
    auto b = f.core.registry().StartPinned(req);  // same turn, not committed yet
    REQUIRE(b.ok());
    CHECK(b->existing);
    CHECK(b->run_id == a->run_id);
    REQUIRE(f.Flush().ok());
    first = a->run_id;
    req.trigger_key = "order-43";
    auto c = f.core.registry().StartPinned(req);
    REQUIRE(c.ok());
    CHECK(c->run_id != first);
  }
  auto journal = storage::Journal::Open(tmp.path(), {});
  REQUIRE(journal.ok());
  RegistryFixture f(journal->get());
  StartRequest req;
  req.name = "etl.daily";
  req.trigger_key = "order-42";
  auto again = f.core.registry().StartPinned(req);
  REQUIRE(again.ok());
  CHECK(again->existing);
  CHECK(again->run_id == first);
  CHECK(again->version == 1);
}

TEST_CASE("a paused pipeline refuses triggers until it is unpaused", "[registry]") {
  RegistryFixture f;
  REQUIRE(f.Add(Spec("etl.daily", "echo 1")).ok());
  storage::RunBatch batch;
  REQUIRE(f.core.registry().pipelines().SetPaused("etl.daily", true, 1, "ops", &batch).ok());
  REQUIRE(f.store->Commit(batch).ok());
  StartRequest req;
  req.name = "etl.daily";
  auto refused = f.core.registry().StartPinned(req);
  CHECK(refused.status().code() == StatusCode::kConflict);
  CHECK(refused.status().message().find("paused") != std::string::npos);
  CHECK((*f.store->GetPipelineState("etl.daily"))->paused);
  REQUIRE(f.core.registry().pipelines().SetPaused("etl.daily", false, 2, "ops", &batch).ok());
  CHECK(f.core.registry().StartPinned(req).ok());
}

TEST_CASE("undeclared and ill-typed params are refused", "[registry]") {
  RegistryFixture f;
  REQUIRE(f.Add(Spec("etl.daily", "echo 1")).ok());
  StartRequest req;
  req.name = "etl.daily";
  req.params = {{"color", "red"}};
  auto undeclared = f.core.registry().StartPinned(req);
  CHECK(undeclared.status().code() == StatusCode::kInvalidInput);
  CHECK(undeclared.status().message().find("declares no param 'color'") != std::string::npos);
  req.params = {{"limit", "ten"}};
  auto ill = f.core.registry().StartPinned(req);
  CHECK(ill.status().code() == StatusCode::kInvalidInput);
  CHECK(ill.status().message().find("integer") != std::string::npos);
  req.params = {{"dry", "yes"}};
  CHECK(f.core.registry().StartPinned(req).status().code() == StatusCode::kInvalidInput);
  req.params = {{"dry", "true"}, {"limit", "-3"}, {"day", "anything"}};
  CHECK(f.core.registry().StartPinned(req).ok());
  CHECK(std::string(dsl::ParamType("0.5")) == "number");
}

TEST_CASE("a removed pipeline starts nothing by name and keeps its versions", "[registry]") {
  RegistryFixture f;
  REQUIRE(f.Add(Spec("etl.daily", "echo 1")).ok());
  storage::RunBatch batch;
  REQUIRE(f.core.registry().pipelines().Remove("etl.daily", 1, &batch).ok());
  REQUIRE(f.store->Commit(batch).ok());
  StartRequest req;
  req.name = "etl.daily";
  CHECK(f.core.registry().StartPinned(req).status().code() == StatusCode::kInvalidInput);
  req.version = "1";
  CHECK(f.core.registry().StartPinned(req).ok());
  auto v2 = f.Add(Spec("etl.daily", "echo 1"));  // added again: a new version number
  REQUIRE(v2.ok());
  CHECK(v2->version.version == 2);
}

TEST_CASE("with the domain prefix policy a bare name is refused", "[registry]") {
  RegistryFixture f(nullptr, /*prefix=*/true);
  auto bare = f.Add(Spec("daily", "echo 1"));
  CHECK(bare.status().code() == StatusCode::kInvalidInput);
  CHECK(bare.status().message().find("domain prefix") != std::string::npos);
  CHECK(f.Add(Spec("etl.daily", "echo 1")).ok());
  SubmitRun submit;
  submit.pipeline_json = dsl::CanonicalJson(Spec("daily", "echo 1"));
  submit.pipeline_hash = dsl::ContentHash(Spec("daily", "echo 1"));
  CHECK(f.core.Submit(submit).status().code() == StatusCode::kInvalidInput);
}

TEST_CASE("a rejected version raises pipeline_rejected after the commit", "[registry]") {
  RegistryFixture f;
  f.core.StagePipelineRejected("etl.daily", "etl.yaml:4:3: error: cycle a -> b -> a");
  CHECK(f.sink.events.empty());
  REQUIRE(f.Flush().ok());
  REQUIRE(f.sink.events.size() == 1);
  CHECK(f.sink.events[0].type == alerts::AlertType::kPipelineRejected);
  CHECK(f.sink.events[0].pipeline == "etl.daily");
  CHECK(f.sink.events[0].reason.find("cycle") != std::string::npos);
}
