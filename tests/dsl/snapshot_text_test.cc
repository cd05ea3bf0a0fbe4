// The DOM-free snapshot readers (dsl/snapshot_text.h) against the DOM:
// PipelineFromJsonText must make the model PipelineFromJson makes of the
// parsed text, and refuse exactly what it refuses.

#include "dsl/snapshot_text.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include "dsl/pipeline_json.h"
#include "random_task.h"

using namespace apollo11::dsl;
using apollo11::Millis;
using apollo11::Result;
using apollo11::SharedText;
using apollo11::dsl::testing::RandomTask;

namespace {

PipelineSpec RandomSpec(std::mt19937& random, int tasks, int round) {
  PipelineSpec spec;
  spec.version = "1.0";
  spec.name = "a.b";
  spec.source_file = round % 2 == 0 ? "p.yaml" : "other.yaml";
  spec.concurrency = round % 3;
  for (int i = 0; i < tasks; ++i) spec.tasks.push_back(RandomTask(random, i));
  return spec;
}

// What the DOM makes of `text`; an error when it is not JSON.
Result<PipelineSpec> DomDecode(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return apollo11::Status::InvalidInput("not JSON");
  return PipelineFromJson(j);
}

// The elements of the snapshot's tasks array, one cursor at its first.
snapshot_text::Cursor TasksOf(const std::string& text) {
  size_t begin = 0;
  size_t end = 0;
  REQUIRE(snapshot_text::FindRootTasks(text, &begin, &end));
  snapshot_text::Cursor c{std::string_view(text).substr(begin, end - begin)};
  REQUIRE(c.Eat('['));
  return c;
}

}  // namespace

TEST_CASE("the text decoder makes the DOM's model of any task shape, locations kept or dropped",
          "[json]") {
  std::mt19937 random(20261205);
  for (int round = 0; round < 20; ++round) {
    INFO("round " << round);
    const PipelineSpec spec = RandomSpec(random, 200, round);
    const std::string text = CanonicalJson(spec);
    Result<PipelineSpec> dom = DomDecode(text);
    REQUIRE(dom.ok());
    CHECK(*dom == spec);
    Result<PipelineSpec> kept = PipelineFromJsonText(text);
    REQUIRE(kept.ok());
    CHECK(*kept == *dom);
    Result<PipelineSpec> dropped = PipelineFromJsonText(text, Locations::kCheckAndDrop);
    REQUIRE(dropped.ok());
    DropLocations(&*dom);
    CHECK(*dropped == *dom);
    // The same snapshot indented: no task reads as plain, all go through
    // their own DOM, and the model is the same.
    Result<PipelineSpec> pretty = PipelineFromJsonText(nlohmann::json::parse(text).dump(1));
    REQUIRE(pretty.ok());
    CHECK(*pretty == spec);
  }
}

TEST_CASE("a plain task is read without a DOM, any other is left where it is", "[json]") {
  PipelineSpec spec;
  spec.version = "1.0";
  spec.name = "p";
  spec.source_file = "p.yaml";
  TaskSpec plain;
  plain.id = "a";
  plain.type = TaskType::kShell;
  plain.command = std::string("echo hi");
  plain.where = SourceLocation{SharedText("p.yaml"), 3, 5};
  plain.timeout = Millis(-7);
  plain.depends_on.push_back(Dependency{"b", DependencyCondition::kDone, {}});
  spec.tasks.push_back(plain);
  TaskSpec with_env = plain;
  with_env.env.mut()["K"] = "v";
  spec.tasks.push_back(with_env);
  TaskSpec escaped = plain;
  escaped.command = std::string("say \"hi\"");
  spec.tasks.push_back(escaped);

  const std::string text = CanonicalJson(spec);
  snapshot_text::Cursor c = TasksOf(text);
  const SharedText file("p.yaml");
  TaskSpec read;
  REQUIRE(snapshot_text::ReadPlainTask(&c, file, /*keep_locations=*/true, &read));
  CHECK(read == plain);
  CHECK(read.where->file.SharesWith(file));  // the pipeline's own file, shared
  REQUIRE(c.Eat(','));
  for (int i = 0; i < 2; ++i) {
    const size_t at = c.at;
    CHECK_FALSE(snapshot_text::ReadPlainTask(&c, file, true, &read));
    CHECK(c.at == at);
    REQUIRE(snapshot_text::SkipValue(&c));
    CHECK(c.Eat(i == 0 ? ',' : ']'));
  }
  CHECK(c.Done());
}

TEST_CASE("integers a plain task cannot hold send it to the DOM, which refuses them", "[json]") {
  const std::string head =
      R"({"name":"p","source_file":"p.yaml","tasks":[{"id":"a","type":"noop",)";
  for (const char* where :
       {R"("where":{"column":1,"line":2147483648}})", R"("where":{"column":01,"line":2}})",
        R"("where":{"column":1.5,"line":2}})", R"("where":{"column":1e2,"line":2}})"}) {
    const std::string text = head + where + R"(}],"version":"1.0"})";
    INFO(text);
    Result<PipelineSpec> decoded = PipelineFromJsonText(text);
    CHECK_FALSE(decoded.ok());
    CHECK(DomDecode(text).ok() == decoded.ok());
  }
  const std::string fits = head + R"("where":{"column":-1,"line":2147483647}}],"version":"1.0"})";
  Result<PipelineSpec> decoded = PipelineFromJsonText(fits);
  REQUIRE(decoded.ok());
  CHECK(decoded->tasks[0].where->line == 2147483647);
  CHECK(decoded->tasks[0].where->column == -1);
}

TEST_CASE("a damaged snapshot is refused by the text decoder exactly when the DOM refuses it",
          "[json]") {
  std::mt19937 random(7);
  const std::string text = CanonicalJson(RandomSpec(random, 12, 0));
  const std::string bytes = "{}[],:\"\\ 0-1e.atnx\x01";
  const auto compare = [](const std::string& damaged) {
    INFO(damaged);
    Result<PipelineSpec> dom = DomDecode(damaged);
    Result<PipelineSpec> decoded = PipelineFromJsonText(damaged);
    size_t begin = 0;
    size_t end = 0;
    if (!dom.ok() || snapshot_text::FindRootTasks(damaged, &begin, &end)) {
      CHECK(decoded.ok() == dom.ok());
      if (decoded.ok() && dom.ok()) CHECK(*decoded == *dom);
    }
  };
  for (size_t cut = 0; cut < text.size(); ++cut) compare(text.substr(0, cut));
  for (int i = 0; i < 3000; ++i) {
    std::string damaged = text;
    const size_t at = random() % damaged.size();
    switch (random() % 3) {
      case 0:
        damaged[at] = bytes[random() % bytes.size()];
        break;
      case 1:
        damaged.insert(at, 1, bytes[random() % bytes.size()]);
        break;
      default:
        damaged.erase(at, 1);
        break;
    }
    compare(damaged);
  }
}

TEST_CASE("a root the split cannot take is decoded whole, as before", "[json]") {
  // Two "tasks" members, and a key spelled with an escape: FindRootTasks
  // declines both, and the streaming DOM decoder reads them as it did.
  const std::string twice =
      R"({"name":"p","tasks":[{"id":"a","type":"noop"}],"tasks":[],"version":"1.0"})";
  size_t begin = 0;
  size_t end = 0;
  CHECK_FALSE(snapshot_text::FindRootTasks(twice, &begin, &end));
  const std::string escaped =
      R"({"name":"p","t\u0061sks":[{"id":"a","type":"noop"}],"version":"1.0"})";
  CHECK_FALSE(snapshot_text::FindRootTasks(escaped, &begin, &end));
  Result<PipelineSpec> decoded = PipelineFromJsonText(escaped);
  REQUIRE(decoded.ok());
  REQUIRE(decoded->tasks.size() == 1);
  CHECK(decoded->tasks[0].id == "a");
}
