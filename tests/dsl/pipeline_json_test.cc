#include "dsl/pipeline_json.h"

#include <catch2/catch.hpp>
#include <random>
#include <string>

#include "dsl/parser.h"
#include "dsl_test_util.h"
#include "random_task.h"

using namespace apollo11::dsl;
using apollo11::Result;
using apollo11::SharedText;
using apollo11::dsl::testing::Dump;
using apollo11::dsl::testing::RandomTask;
using apollo11::dsl::testing::TempDir;

namespace {

PipelineSpec FullSpec() {
  static TempDir dir;
  dir.Write("s.py", "");
  std::string path = dir.Write("p.yaml", R"(version: "1.0"
name: order.sync
params: {region: eu}
concurrency: 3
schedule: "0 3 * * *"
alerts: [{events: [run_failed], webhook: "https://h.example/x", command: "logger x"}]
pipeline:
  - {id: f, type: http, url: "https://x", method: PUT, headers: {A: b}, body: "{}", expect_status: [204]}
  - {id: s, type: shell, command: "echo ü", workdir: /tmp, env: {K: v}, precheck: "true",
     depends_on: [f, {task: f, on: done}], trigger: any, timeout: 90s, group: etl, labels: [gpu, ssd], priority: -3,
     idempotency_key: "${run_id}/${params.region}",
     retry: {max_retries: 4, delay: 1500ms, backoff: exponential, max_delay: 1m, jitter: 0.35, on_exit_codes: [3]}}
  - {id: p, type: python, script: s.py, args: [a, b], depends_on: {task: s, on: timeout}, foreach: s}
  - {id: d, type: db, host: "sqlite:///tmp/x.db", sql: "select 1", depends_on: [{task: p, on: failure}]}
)");
  ParseResult r = LoadPipelineFile(path);
  INFO(Dump(r));
  REQUIRE(r.ok());
  return *r.pipeline;
}

}  // namespace

TEST_CASE("a pipeline survives JSON and back exactly", "[json]") {
  PipelineSpec spec = FullSpec();
  Result<PipelineSpec> back = PipelineFromJson(ToJson(spec));
  REQUIRE(back.ok());
  CHECK(*back == spec);
  CHECK(CanonicalJson(*back) == CanonicalJson(spec));
  // Through text too, as the journal stores it.
  Result<PipelineSpec> reparsed = PipelineFromJson(nlohmann::json::parse(CanonicalJson(spec)));
  REQUIRE(reparsed.ok());
  CHECK(*reparsed == spec);
}

TEST_CASE("the content hash is stable and changes with the content", "[json]") {
  PipelineSpec spec = FullSpec();
  std::string hash = ContentHash(spec);
  CHECK(hash.size() == 16);
  CHECK(ContentHash(FullSpec()) == hash);
  PipelineSpec changed = spec;
  changed.tasks[1].retry->max_retries = 5;
  CHECK(ContentHash(changed) != hash);
  CHECK(CanonicalJson(spec).find("\n") == std::string::npos);
}

TEST_CASE("malformed pipeline JSON is an error, not an exception", "[json]") {
  CHECK_FALSE(PipelineFromJson(nlohmann::json::parse("{}")).ok());
  CHECK_FALSE(PipelineFromJson(nlohmann::json::parse("[1,2]")).ok());
  auto bad_type = PipelineFromJson(nlohmann::json::parse(
      R"({"version":"1.0","name":"a.b","tasks":[{"id":"x","type":"rocket"}]})"));
  REQUIRE_FALSE(bad_type.ok());
  CHECK(bad_type.status().code() == apollo11::StatusCode::kCorrupt);
  CHECK(bad_type.status().message().find("rocket") != std::string::npos);
  auto minimal = PipelineFromJson(nlohmann::json::parse(
      R"({"version":"1.0","name":"a.b","tasks":[{"id":"x","type":"noop"}]})"));
  REQUIRE(minimal.ok());
  CHECK(minimal->tasks[0].group == "default");
}

TEST_CASE("the streamed canonical JSON is byte for byte the DOM's dump", "[json]") {
  // CanonicalJson writes one task at a time; the journal's hashes and
  // snapshots must not change because of it.
  PipelineSpec spec = FullSpec();
  CHECK(CanonicalJson(spec) == ToJson(spec).dump());
  PipelineSpec empty;
  empty.version = "1.0";
  empty.name = "a.b";
  CHECK(CanonicalJson(empty) == ToJson(empty).dump());
  CHECK(HashCanonicalJson(CanonicalJson(spec)) == ContentHash(spec));
}

TEST_CASE("canonical JSON written without a DOM is byte for byte the DOM's, for any task shape",
          "[json]") {
  std::mt19937 random(20261205);
  for (int round = 0; round < 20; ++round) {
    PipelineSpec spec;
    spec.version = "1.0";
    spec.name = "a.b";
    spec.source_file = round % 2 == 0 ? "p.yaml" : "other.yaml";
    for (int i = 0; i < 200; ++i) spec.tasks.push_back(RandomTask(random, i));
    INFO("round " << round);
    CHECK(CanonicalJson(spec) == ToJson(spec).dump());
  }
}

TEST_CASE("a snapshot taken from the model equals CanonicalJson and empties the task list",
          "[json]") {
  PipelineSpec spec = FullSpec();
  const std::string expected = CanonicalJson(spec);
  PipelineSpec taken = spec;
  CHECK(TakeCanonicalJson(std::move(taken)) == expected);
  CHECK(taken.tasks.empty());
  CHECK(taken.name == spec.name);
  // Many tasks: the text is written in several pieces and joined.
  PipelineSpec large = spec;
  for (int i = 0; i < 30000; ++i) {
    TaskSpec t;
    t.id = "task_number_" + std::to_string(i);
    t.command = std::string(static_cast<size_t>(i % 97), 'c');
    t.type = TaskType::kShell;
    large.tasks.push_back(std::move(t));
  }
  const std::string large_expected = ToJson(large).dump();
  REQUIRE(large_expected.size() > (size_t{2} << 20));
  CHECK(CanonicalJson(large) == large_expected);
  CHECK(TakeCanonicalJson(std::move(large)) == large_expected);
}

TEST_CASE("the locations of one file share its name, in a parse and in a decode", "[json]") {
  PipelineSpec spec = FullSpec();
  const auto shared_with_first = [](const PipelineSpec& s) {
    const SharedText& first = s.tasks.front().where->file;
    REQUIRE_FALSE(first.empty());
    for (const TaskSpec& t : s.tasks) {
      CHECK(t.where->file.SharesWith(first));
      for (const Dependency& d : t.depends_on) CHECK(d.where->file.SharesWith(first));
    }
  };
  shared_with_first(spec);
  Result<PipelineSpec> decoded = PipelineFromJsonText(CanonicalJson(spec));
  REQUIRE(decoded.ok());
  CHECK(*decoded == spec);
  shared_with_first(*decoded);
  Result<PipelineSpec> from_dom = PipelineFromJson(ToJson(spec));
  REQUIRE(from_dom.ok());
  shared_with_first(*from_dom);
}

TEST_CASE("a snapshot decoded task by task equals the DOM decode", "[json]") {
  PipelineSpec spec = FullSpec();
  Result<PipelineSpec> streamed = PipelineFromJsonText(CanonicalJson(spec));
  REQUIRE(streamed.ok());
  CHECK(*streamed == spec);
  // Key order does not matter: "tasks" first, nested objects around it.
  Result<PipelineSpec> reordered = PipelineFromJsonText(
      R"({"tasks":[{"id":"x","type":"noop","where":{"file":"f","line":2,"column":3}},
                   {"id":"y","type":"noop","depends_on":[{"task":"x","on":"done"}]}],
          "alerts":[{"events":["run_failed"],"webhook":"","command":"logger x"}],
          "params":{"tasks":"v"},"version":"1.0","name":"a.b"})");
  REQUIRE(reordered.ok());
  REQUIRE(reordered->tasks.size() == 2);
  CHECK(reordered->tasks[0].where->line == 2);
  CHECK(reordered->tasks[1].depends_on[0].on == DependencyCondition::kDone);
  CHECK(reordered->alerts.size() == 1);
  CHECK(reordered->params.at("tasks") == "v");
}

TEST_CASE("a snapshot decoded without locations checks them and keeps nothing else out", "[json]") {
  PipelineSpec spec = FullSpec();
  const std::string text = CanonicalJson(spec);
  Result<PipelineSpec> dropped = PipelineFromJsonText(text, Locations::kCheckAndDrop);
  REQUIRE(dropped.ok());
  // Equal to the full decode once its locations are cleared too.
  for (TaskSpec& t : spec.tasks) {
    CHECK_FALSE(t.where->file.empty());
    t.where = SourceLocation{};
    for (Dependency& d : t.depends_on) d.where = SourceLocation{};
  }
  CHECK(*dropped == spec);
  // A malformed location is still refused.
  const std::string bad =
      R"({"tasks":[{"id":"x","type":"noop","where":{"file":"f","line":"two","column":3}}],)"
      R"("version":"1.0","name":"a.b"})";
  CHECK_FALSE(PipelineFromJsonText(bad, Locations::kCheckAndDrop).ok());
  CHECK_FALSE(PipelineFromJsonText(bad).ok());
}

TEST_CASE("a decoded snapshot's task list holds no growth slack", "[json]") {
  // Grown by doubling, 1,025 tasks had room for 2,048 (100k: 131,072, 28 MB
  // of TaskSpecs the coordinator held for the whole run), and three
  // dependencies for four.
  PipelineSpec spec;
  spec.version = "1.0";
  spec.name = "a.b";
  for (int i = 0; i < 1025; ++i) {
    TaskSpec t;
    t.id = "t" + std::to_string(i);
    for (int d = 1; d <= 3 && d <= i; ++d) {
      t.depends_on.push_back({"t" + std::to_string(i - d), {}, {}});
    }
    if (i % 10 == 0) t.env.mut()["id"] = "an env variable named id";  // counted by the estimate too
    spec.tasks.push_back(std::move(t));
  }
  Result<PipelineSpec> back = PipelineFromJsonText(CanonicalJson(spec));
  REQUIRE(back.ok());
  CHECK(*back == spec);
  CHECK(back->tasks.capacity() <= back->tasks.size() + back->tasks.size() / 8 + 16);
  CHECK(back->tasks[5].depends_on.capacity() == 3);
}

TEST_CASE("the task count estimate follows the ids and is bounded by the text's size", "[json]") {
  CHECK(EstimateTaskCount(R"({"tasks":[{"id":"a","type":"noop"},{"id":"b","type":"noop"}]})") == 2);
  CHECK(EstimateTaskCount("") == 0);
  // A hostile text of nothing but "id": keys (5 bytes each) gets the room of
  // the most tasks a valid text of its size could hold, not one per key.
  std::string keys;
  for (int i = 0; i < 100000; ++i) keys += "\"id\":";
  CHECK(EstimateTaskCount(keys) <= keys.size() / 20);
  CHECK_FALSE(PipelineFromJsonText(keys).ok());
}

TEST_CASE("a malformed snapshot text is an error, not an exception", "[json]") {
  auto not_json = PipelineFromJsonText("{\"version\":");
  REQUIRE_FALSE(not_json.ok());
  CHECK(not_json.status().code() == apollo11::StatusCode::kInvalidInput);
  auto bad_type = PipelineFromJsonText(
      R"({"version":"1.0","name":"a.b","tasks":[{"id":"x","type":"rocket"}]})");
  REQUIRE_FALSE(bad_type.ok());
  CHECK(bad_type.status().code() == apollo11::StatusCode::kCorrupt);
  CHECK(bad_type.status().message().find("rocket") != std::string::npos);
  CHECK_FALSE(PipelineFromJsonText(R"({"version":"1.0","name":"a.b","tasks":[1]})").ok());
  CHECK_FALSE(PipelineFromJsonText(R"({"name":"a.b","tasks":[{"id":"x","type":"noop"}]})").ok());
  CHECK_FALSE(PipelineFromJsonText("[1,2]").ok());
}

TEST_CASE("a snapshot writes only what differs from the defaults, and each path once", "[json]") {
  // A 100k-task pipeline once made a 68 MB snapshot: every task spelled out
  // two dozen empty fields and the file path in each of its locations.
  PipelineSpec spec = FullSpec();
  spec.tasks.push_back(TaskSpec{});
  spec.tasks.back().id = "n";
  spec.tasks.back().where = SourceLocation{spec.source_file, 9, 5};
  spec.tasks.back().depends_on.push_back(
      {"d", DependencyCondition::kSuccess, SourceLocation{"lib.yaml", 2, 3}});
  const std::string text = CanonicalJson(spec);
  const nlohmann::json doc = nlohmann::json::parse(text);
  const nlohmann::json& noop = doc["tasks"].back();
  CHECK(noop.size() == 4);  // id, type, where, depends_on
  CHECK(noop["where"] == nlohmann::json{{"line", 9}, {"column", 5}});
  // A location in another file (an import) keeps its file.
  CHECK(noop["depends_on"][0]["where"]["file"] == "lib.yaml");
  CHECK(noop["depends_on"][0].count("on") == 0);
  // The pipeline's own path appears once, at the root.
  size_t count = 0;
  for (size_t at = text.find(spec.source_file); at != std::string::npos;
       at = text.find(spec.source_file, at + 1)) {
    ++count;
  }
  CHECK(count == 1);
  // And nothing is lost, whichever decoder reads it.
  Result<PipelineSpec> dom = PipelineFromJson(doc);
  REQUIRE(dom.ok());
  CHECK(*dom == spec);
  Result<PipelineSpec> streamed = PipelineFromJsonText(text);
  REQUIRE(streamed.ok());
  CHECK(*streamed == spec);
}
