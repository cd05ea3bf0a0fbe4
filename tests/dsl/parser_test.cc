#include "dsl/parser.h"

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "dsl/dag.h"
#include "dsl/pipeline_json.h"
#include "dsl_test_util.h"

using apollo11::Millis;
using namespace apollo11::dsl;
using apollo11::dsl::testing::CountErrors;
using apollo11::dsl::testing::Dump;
using apollo11::dsl::testing::Find;
using apollo11::dsl::testing::TempDir;

namespace {

const std::string kHeader = "version: \"1.0\"\nname: test.pipeline\npipeline:\n";

ParseResult Parse(const std::string& yaml, ParseOptions options = {}) {
  return ParsePipelineText(yaml, "/nonexistent/p.yaml", options);
}

// Checks that an error containing `text` was reported at LINE:COL of p.yaml.
void ExpectErrorAt(const ParseResult& r, const std::string& text, int line, int column) {
  INFO(Dump(r));
  const Diagnostic* d = Find(r, text);
  REQUIRE(d != nullptr);
  CHECK(d->where.line == line);
  CHECK(d->where.column == column);
  CHECK_FALSE(r.ok());
}

}  // namespace

TEST_CASE("the DESIGN example validates as written, imports and script resolved", "[dsl]") {
  std::string path = std::string(APOLLO11_SOURCE_DIR) + "/examples/design/pipeline.yaml";
  ParseResult r = LoadPipelineFile(path);
  INFO(Dump(r));
  REQUIRE(r.ok());
  const PipelineSpec& p = *r.pipeline;
  CHECK(p.version == "1.0");
  CHECK(p.name == "pipeline");  // the file stem, with a warning
  CHECK(Find(r, "no domain prefix", Diagnostic::Severity::kWarning) != nullptr);
  REQUIRE(p.tasks.size() == 3);
  const TaskSpec& fetch = p.tasks[0];
  CHECK(fetch.type == TaskType::kHttp);
  CHECK(fetch.url == "https://api.example.com/data");
  CHECK(fetch.method == "GET");
  REQUIRE(fetch.retry.has_value());
  CHECK(fetch.retry->max_retries == 3);
  CHECK(fetch.retry->backoff == Backoff::kExponential);
  CHECK(fetch.retry->jitter == 0.2);  // default for exponential backoff
  CHECK(fetch.retry->max_delay == Millis(30000));
  CHECK(fetch.where->line == 5);
  CHECK(fetch.where->column == 5);
  const TaskSpec& clean = p.tasks[1];
  // The script is read into the model: its name and its content, not where
  // it was (the snapshot carries the code to the worker).
  CHECK(clean.script == "clean.py");
  std::ifstream clean_file(std::string(APOLLO11_SOURCE_DIR) + "/examples/design/scripts/clean.py");
  std::stringstream clean_text;
  clean_text << clean_file.rdbuf();
  CHECK(clean.code.get() == clean_text.str());
  REQUIRE(clean.depends_on.size() == 1);
  CHECK(clean.depends_on[0].task == "data_fetch");
  CHECK(clean.depends_on[0].on == DependencyCondition::kSuccess);
  CHECK(p.tasks[2].db_host == "mysql://internal:3306");
  CHECK(p.tasks[2].sql.empty());  // sql is optional: connect-check only
  CHECK(p.tasks[2].group == "default");
  CHECK_FALSE(p.tasks[2].retry.has_value());  // no global retry default
}

TEST_CASE("every example in examples/ parses without errors", "[dsl]") {
  namespace fs = std::filesystem;
  int seen = 0;
  for (const auto& entry :
       fs::recursive_directory_iterator(std::string(APOLLO11_SOURCE_DIR) + "/examples")) {
    if (entry.path().filename() != "pipeline.yaml") continue;
    ParseResult r = LoadPipelineFile(entry.path().string());
    INFO(entry.path().string() << "\n" << Dump(r));
    CHECK(r.ok());
    ++seen;
  }
  CHECK(seen >= 2);
}

TEST_CASE("every task field is read into the model", "[dsl]") {
  TempDir dir;
  dir.Write("scripts/job.py", "print('hi')\n");
  std::string path = dir.Write("p.yaml", R"(version: "1.0"
name: order.sync
params:
  region: eu
concurrency: 4
schedule: "*/5 * * * mon-fri"
alerts:
  - events: [run_failed, retries_exhausted]
    webhook: https://hooks.example.com/a
  - events: task_timeout
    command: notify-send timeout
pipeline:
  - id: fetch
    type: http
    url: https://api.example.com/x
    method: post
    headers: {Authorization: token, X-Trace: "1"}
    body: '{"a": 1}'
    expect_status: [200, 201]
    timeout: 1h30m
    priority: 5
    group: etl
  - id: shell_step
    type: shell
    command: make all
    workdir: /srv
    env: {MODE: fast, LEVEL: "3"}
    precheck: test -f /srv/done
    idempotency_key: "${run_id}-${task_id}-${params.region}"
    depends_on:
      - fetch
      - {task: fetch, on: done}
    trigger: any
    retry: {max_retries: 2, delay: 250ms, backoff: fixed, on_exit_codes: [75, 1]}
  - id: py
    type: python
    script: scripts/job.py
    args: [--fast, "2"]
    depends_on: {task: shell_step, on: failure}
    foreach: shell_step
  - id: store
    type: db
    host: postgres://db/x
    sql: insert into t values (1)
    depends_on: [{task: py, on: timeout}]
    retry: {max_retries: 1, backoff: exponential, jitter: 0.5, delay: 2s, max_delay: 10s}
  - id: done
    type: noop
    depends_on: [store]
)");
  ParseResult r = LoadPipelineFile(path);
  INFO(Dump(r));
  REQUIRE(r.ok());
  CHECK(r.diagnostics.empty());
  const PipelineSpec& p = *r.pipeline;
  CHECK(p.name == "order.sync");
  CHECK(p.params.at("region") == "eu");
  CHECK(p.concurrency == 4);
  CHECK(p.schedule == "*/5 * * * mon-fri");
  REQUIRE(p.alerts.size() == 2);
  CHECK(p.alerts[0].events == std::vector<std::string>{"run_failed", "retries_exhausted"});
  CHECK(p.alerts[0].webhook == "https://hooks.example.com/a");
  CHECK(p.alerts[1].command == "notify-send timeout");

  const TaskSpec& fetch = p.tasks[0];
  CHECK(fetch.method == "POST");
  CHECK(fetch.headers->at("X-Trace") == "1");
  CHECK(fetch.body == "{\"a\": 1}");
  CHECK(fetch.expect_status == std::vector<int>{200, 201});
  CHECK(fetch.timeout == Millis(5400000));
  CHECK(fetch.priority == 5);
  CHECK(fetch.group == "etl");

  const TaskSpec& sh = p.tasks[1];
  CHECK(sh.command == "make all");
  CHECK(sh.workdir == "/srv");
  CHECK(sh.env->at("LEVEL") == "3");
  CHECK(sh.precheck == "test -f /srv/done");
  CHECK(sh.idempotency_key == "${run_id}-${task_id}-${params.region}");
  REQUIRE(sh.depends_on.size() == 2);
  CHECK(sh.depends_on[1].on == DependencyCondition::kDone);
  CHECK(sh.trigger == Trigger::kAny);
  REQUIRE(sh.retry.has_value());
  CHECK(sh.retry->max_retries == 2);
  CHECK(sh.retry->delay == Millis(250));
  CHECK(sh.retry->jitter == 0.0);
  CHECK(sh.retry->on_exit_codes == std::vector<int>{75, 1});

  const TaskSpec& py = p.tasks[2];
  CHECK(py.script == "job.py");
  CHECK(py.args == std::vector<std::string>{"--fast", "2"});
  CHECK(py.depends_on[0].on == DependencyCondition::kFailure);
  CHECK(py.foreach == "shell_step");

  const TaskSpec& store = p.tasks[3];
  CHECK(store.sql == "insert into t values (1)");
  CHECK(store.depends_on[0].on == DependencyCondition::kTimeout);
  CHECK(store.retry->jitter == 0.5);
  CHECK(store.retry->max_delay == Millis(10000));
  CHECK(p.tasks[4].type == TaskType::kNoop);
}

TEST_CASE("an unknown key is reported at its position with a suggestion", "[dsl]") {
  ParseResult r = Parse(kHeader + "  - id: a\n    type: shell\n    comand: ls\n");
  ExpectErrorAt(r, "unknown key 'comand' in a task (did you mean 'command'?)", 6, 5);
  ExpectErrorAt(r, "shell task 'a' needs 'command'", 4, 5);
  ParseResult top = Parse("version: \"1.0\"\nname: a.b\npipline: []\n");
  ExpectErrorAt(top, "unknown key 'pipline' in the top level (did you mean 'pipeline'?)", 3, 1);
  ExpectErrorAt(top, "missing required key 'pipeline'", 1, 1);
}

TEST_CASE("missing required keys are named", "[dsl]") {
  ExpectErrorAt(Parse("name: a.b\npipeline:\n  - {id: a, type: noop}\n"),
                "missing required key 'version'", 1, 1);
  ExpectErrorAt(Parse(kHeader + "  - type: noop\n"), "task has no 'id'", 4, 5);
  ExpectErrorAt(Parse(kHeader + "  - id: a\n"), "task 'a' has no 'type'", 4, 5);
  ExpectErrorAt(Parse(kHeader + "  - {id: a, type: http}\n"), "http task 'a' needs 'url'", 4, 5);
  ExpectErrorAt(Parse(kHeader + "  - {id: a, type: db}\n"), "db task 'a' needs 'host'", 4, 5);
  ExpectErrorAt(Parse(kHeader + "  - {id: a, type: python}\n"), "python task 'a' needs 'script'", 4,
                5);
  ExpectErrorAt(Parse(kHeader + "  - id: a\n    type: shell\n    command:\n"),
                "'command' needs a value", 6, 5);
  ExpectErrorAt(Parse("version: \"1.0\"\nname: a.b\npipeline: []\n"), "'pipeline' has no tasks", 3,
                11);
}

TEST_CASE("values of the wrong type are refused with what was found", "[dsl]") {
  ParseResult r = Parse(kHeader +
                        "  - id: a\n"
                        "    type: python\n"
                        "    script: /bin/sh\n"
                        "    args: --fast\n"
                        "    priority: high\n"
                        "    env: [A, B]\n"
                        "    command: [ls]\n");
  ExpectErrorAt(r, "'args' must be a list of text, found text", 7, 11);
  ExpectErrorAt(r, "'priority' must be a whole number, found 'high'", 8, 15);
  ExpectErrorAt(r, "'env' must be a mapping of names to text, found a list", 9, 10);
  ExpectErrorAt(r, "'command' is not a field of python tasks (shell tasks use it)", 10, 5);
  ExpectErrorAt(
      Parse("version: \"1.0\"\nname: a.b\nconcurrency: -1\npipeline: [{id: a, type: noop}]\n"),
      "'concurrency' must be between 0 and 1000000", 3, 14);
  ExpectErrorAt(Parse(kHeader + "  - {id: a, type: shell, env: {1BAD: x}, command: x}\n"),
                "variable names", 4, 32);
  ExpectErrorAt(Parse(kHeader + "  - {id: a, type: noop, trigger: most}\n"),
                "'trigger' must be one of all, any, found 'most'", 4, 34);
  ExpectErrorAt(Parse(kHeader + "  - {id: A-1, type: noop}\n"), "task id 'A-1' must be lowercase",
                4, 10);
}

TEST_CASE("an unknown task type is refused with a suggestion", "[dsl]") {
  ExpectErrorAt(
      Parse(kHeader + "  - id: a\n    type: shel\n    command: ls\n"),
      "'type' must be one of shell, python, http, db, noop, found 'shel' (did you mean 'shell'?)",
      5, 11);
}

TEST_CASE("type-specific values are checked", "[dsl]") {
  ExpectErrorAt(Parse(kHeader + "  - {id: a, type: http, url: ftp://x}\n"),
                "'url' must start with http://", 4, 30);
  ExpectErrorAt(Parse(kHeader + "  - {id: a, type: http, url: http://x, method: FETCH}\n"),
                "unknown HTTP method 'FETCH'", 4, 48);
  ExpectErrorAt(
      Parse(kHeader + "  - {id: a, type: http, url: http://x, expect_status: [200, 700]}\n"),
      "between 100 and 599", 4, 61);
  ExpectErrorAt(Parse(kHeader + "  - {id: a, type: db, host: oracle://x}\n"),
                "'host' must be a URL postgres://", 4, 29);
  ExpectErrorAt(Parse(kHeader + "  - {id: a, type: python, script: nope.py}\n"),
                "script 'nope.py' not found (looked for /nonexistent/nope.py)", 4, 35);
}

TEST_CASE("duplicate ids point at both definitions", "[dsl]") {
  ParseResult r = Parse(
      kHeader + "  - {id: a, type: noop}\n  - {id: b, type: noop}\n  - {id: a, type: noop}\n");
  ExpectErrorAt(r, "duplicate task id 'a' (first defined at /nonexistent/p.yaml:4:5)", 6, 5);
}

TEST_CASE("duplicate keys in one mapping are refused", "[dsl]") {
  ExpectErrorAt(Parse(kHeader + "  - id: a\n    type: noop\n    id: b\n"),
                "duplicate key 'id' in a task (first at /nonexistent/p.yaml:4:5)", 6, 5);
}

TEST_CASE("unknown and self dependencies are reported at the entry", "[dsl]") {
  ParseResult r = Parse(kHeader +
                        "  - {id: fetch, type: noop}\n"
                        "  - id: clean\n"
                        "    type: noop\n"
                        "    depends_on: [fecth, clean]\n");
  ExpectErrorAt(r, "task 'clean' depends on unknown task 'fecth' (did you mean 'fetch'?)", 7, 18);
  ExpectErrorAt(r, "task 'clean' depends on itself", 7, 25);
  ExpectErrorAt(
      Parse(kHeader + "  - id: a\n    type: noop\n    depends_on: [{task: a0, on: failed}]\n"),
      "'on' must be one of success, failure, timeout, done, found 'failed'", 6, 33);
  ExpectErrorAt(Parse(kHeader + "  - id: a\n    type: noop\n    depends_on: [{on: failure}]\n"),
                "dependency entry needs 'task'", 6, 18);
}

TEST_CASE("a cycle is reported with its whole path", "[dsl]") {
  ParseResult r = Parse(kHeader +
                        "  - {id: alpha, type: noop, depends_on: gamma}\n"
                        "  - {id: beta, type: noop, depends_on: alpha}\n"
                        "  - {id: gamma, type: noop, depends_on: beta}\n"
                        "  - {id: free, type: noop}\n");
  ExpectErrorAt(r, "dependency cycle: alpha -> beta -> gamma -> alpha", 4, 41);
  CHECK(CountErrors(r) == 1);
}

TEST_CASE("durations are checked wherever they appear", "[dsl]") {
  ExpectErrorAt(Parse(kHeader + "  - {id: a, type: shell, timeout: 5x, command: x}\n"),
                "'timeout': bad duration '5x'", 4, 35);
  ExpectErrorAt(Parse(kHeader + "  - {id: a, type: shell, timeout: 1.5s, command: x}\n"),
                "bad duration '1.5s'", 4, 35);
  ExpectErrorAt(Parse(kHeader + "  - {id: a, type: shell, timeout: 0s, command: x}\n"),
                "longer than 0s", 4, 35);
  ExpectErrorAt(
      Parse(kHeader +
            "  - {id: a, type: shell, retry: {max_retries: 1, delay: soon}, command: x}\n"),
      "'delay': bad duration 'soon'", 4, 57);
  ExpectErrorAt(Parse(kHeader + "  - {id: a, type: shell, retry: {max_retries: 1, delay: 1m, "
                                "max_delay: 1s}, command: x}\n"),
                "'max_delay' is shorter than 'delay'", 4, 72);
  ParseResult ok = Parse(
      kHeader + "  - {id: a, type: shell, timeout: 1h30m, retry: {max_retries: 1}, command: x}\n");
  INFO(Dump(ok));
  REQUIRE(ok.ok());
  CHECK(ok.pipeline->tasks[0].retry->delay == Millis(1000));  // default delay
}

TEST_CASE("cron schedules are checked", "[dsl]") {
  ExpectErrorAt(Parse("version: \"1.0\"\nname: a.b\nschedule: \"61 * * * *\"\npipeline: [{id: a, "
                      "type: noop}]\n"),
                "bad cron minute field '61'", 3, 11);
  ExpectErrorAt(
      Parse("version: \"1.0\"\nname: a.b\nschedule: daily\npipeline: [{id: a, type: noop}]\n"),
      "expected 5", 3, 11);
  CHECK(
      Parse("version: \"1.0\"\nname: a.b\nschedule: \"@daily\"\npipeline: [{id: a, type: noop}]\n")
          .ok());
}

TEST_CASE("schedule policy keys are checked with their positions", "[dsl][sched]") {
  const std::string head = "version: \"1.0\"\nname: a.b\n";
  const std::string tail = "pipeline: [{id: a, type: noop}]\n";
  const std::string cron = "schedule: \"*/5 * * * * *\"\n";
  ExpectErrorAt(Parse(head + cron + "timezone: Mars/Olympus\n" + tail), "unknown time zone", 4, 11);
  ExpectErrorAt(Parse(head + cron + "catchup: some\n" + tail), "'catchup'", 4, 10);
  ExpectErrorAt(Parse(head + cron + "catchup_window: soon\n" + tail), "bad duration", 4, 17);
  ExpectErrorAt(Parse(head + cron + "overlap: maybe\n" + tail), "'overlap'", 4, 10);
  ExpectErrorAt(Parse(head + cron + "max_active_runs: 0\n" + tail), "max_active_runs", 4, 18);
  ExpectErrorAt(Parse(head + cron + "overlap: allow\nmax_active_runs: 2\n" + tail),
                "does not apply with overlap: allow", 5, 1);
  ExpectErrorAt(Parse(head + "timezone: UTC\n" + tail), "only meaningful with a 'schedule'", 3, 1);
  ParseResult ok = Parse(head + cron +
                         "timezone: Europe/Berlin\ncatchup: all\ncatchup_window: 2h\noverlap: "
                         "queue\nmax_active_runs: 3\n" +
                         tail);
  INFO(Dump(ok));
  REQUIRE(ok.ok());
  CHECK(ok.pipeline->timezone == "Europe/Berlin");
  CHECK(ok.pipeline->catchup == "all");
  CHECK(ok.pipeline->catchup_window == Millis(2 * 3600 * 1000));
  CHECK(ok.pipeline->overlap == "queue");
  CHECK(ok.pipeline->max_active_runs == 3);
  auto back = apollo11::dsl::PipelineFromJson(apollo11::dsl::ToJson(*ok.pipeline));
  REQUIRE(back.ok());
  CHECK(*back == *ok.pipeline);
  ParseResult plain = Parse(head + tail);
  REQUIRE(plain.ok());
  CHECK_FALSE(apollo11::dsl::ToJson(*plain.pipeline).contains("catchup"));
}

TEST_CASE("imports resolve relative to the importing file, nested", "[dsl][imports]") {
  TempDir dir;
  dir.Write("lib/policies.yaml",
            "imports: [more/templates.yaml]\nretry_policy:\n  fast: {max_retries: 3, delay: 1s}\n");
  dir.Write("lib/more/templates.yaml",
            "templates:\n  curl_json:\n    type: http\n    method: POST\n    headers: {Accept: "
            "application/json}\n");
  std::string path =
      dir.Write("p/pipeline.yaml",
                "version: \"1.0\"\nname: a.b\nimports: [../lib/policies.yaml]\npipeline:\n"
                "  - {id: a, extends: curl_json, url: http://x, retry: retry_policy.fast}\n"
                "  - {id: b, extends: curl_json, url: http://y, method: PUT, retry: fast}\n");
  ParseOptions with_library;  // ../lib is outside the pipeline's directory
  with_library.library_dirs = {dir.Path("lib")};
  ParseResult r = LoadPipelineFile(path, with_library);
  INFO(Dump(r));
  REQUIRE(r.ok());
  const TaskSpec& a = r.pipeline->tasks[0];
  CHECK(a.type == TaskType::kHttp);
  CHECK(a.method == "POST");
  CHECK(a.headers->at("Accept") == "application/json");
  CHECK(a.retry->max_retries == 3);
  CHECK(r.pipeline->tasks[1].method == "PUT");  // the task overrides its template
  CHECK(r.pipeline->tasks[1].retry->max_retries == 3);
}

TEST_CASE("an import cycle names the files", "[dsl][imports]") {
  TempDir dir;
  dir.Write("a.yaml", "imports: [b.yaml]\n");
  dir.Write("b.yaml", "imports:\n  - a.yaml\n");
  std::string path = dir.Write(
      "p.yaml",
      "version: \"1.0\"\nname: a.b\nimports: [a.yaml]\npipeline: [{id: a, type: noop}]\n");
  ParseResult r = LoadPipelineFile(path);
  INFO(Dump(r));
  const Diagnostic* d = Find(r, "import cycle: ");
  REQUIRE(d != nullptr);
  CHECK(d->message == "import cycle: " + dir.Path("a.yaml") + " -> " + dir.Path("b.yaml") + " -> " +
                          dir.Path("a.yaml"));
  CHECK(d->where.file == dir.Path("b.yaml"));
  CHECK(d->where.line == 2);
  CHECK(d->where.column == 5);
}

TEST_CASE("a missing or bad import is reported where it is imported", "[dsl][imports]") {
  TempDir dir;
  dir.Write("bad.yaml", "retry_policy:\n  slow: {max_retries: 1, dely: 1s}\npipeline: []\n");
  std::string path = dir.Write("p.yaml",
                               "version: \"1.0\"\nname: a.b\nimports:\n  - nothere.yaml\n  - "
                               "bad.yaml\npipeline: [{id: a, type: noop}]\n");
  ParseResult r = LoadPipelineFile(path);
  INFO(Dump(r));
  ExpectErrorAt(r, "import 'nothere.yaml' not found", 4, 5);
  const Diagnostic* d = Find(r, "unknown key 'dely' in a retry policy (did you mean 'delay'?)");
  REQUIRE(d != nullptr);
  CHECK(d->where.file == dir.Path("bad.yaml"));
  CHECK(d->where.line == 2);
  CHECK(Find(r, "unknown key 'pipeline' in an imported file") != nullptr);
}

TEST_CASE("unknown policy and template names are errors", "[dsl]") {
  ParseResult r = Parse(
      "version: \"1.0\"\nname: a.b\nretry_policy:\n  fast: {max_retries: 2}\ntemplates:\n"
      "  base: {type: noop, group: etl}\npipeline:\n"
      "  - {id: a, type: shell, command: x, retry: retry_policy.fsat}\n"
      "  - {id: b, extends: bsae}\n"
      "  - {id: c, extends: base}\n");
  ExpectErrorAt(r, "unknown retry policy 'retry_policy.fsat' (did you mean 'retry_policy.fast'?)",
                8, 45);
  ExpectErrorAt(r, "unknown template 'bsae' (did you mean 'base'?)", 9, 22);
  CHECK(Find(r, "'c'") == nullptr);            // the template gave c its type
  CHECK(Find(r, "has no 'type'") == nullptr);  // no cascade from the unknown template
  ExpectErrorAt(Parse("version: \"1.0\"\nname: a.b\nretry_policy:\n  fast: {delay: 1s}\npipeline: "
                      "[{id: a, type: noop}]\n"),
                "retry policy needs 'max_retries'", 4, 9);
}

TEST_CASE("idempotency key placeholders are checked", "[dsl]") {
  ExpectErrorAt(
      Parse(kHeader + "  - {id: a, type: noop, idempotency_key: \"${run_id}-${trace}\"}\n"),
      "unknown placeholder ${trace}", 4, 42);
  ExpectErrorAt(Parse(kHeader + "  - {id: a, type: noop, idempotency_key: \"${params.x}\"}\n"),
                "(no such param)", 4, 42);
  ExpectErrorAt(Parse(kHeader + "  - {id: a, type: noop, idempotency_key: \"${run_id\"}\n"),
                "unterminated", 4, 42);
}

TEST_CASE("foreach must name a dependency", "[dsl]") {
  ExpectErrorAt(Parse(kHeader + "  - {id: a, type: noop}\n  - {id: b, type: noop, foreach: a}\n"),
                "foreach 'a' must name one of the task's dependencies", 5, 5);
}

TEST_CASE("a long dependency chain draws a warning naming its ends", "[dsl][warnings]") {
  std::string yaml = kHeader + "  - {id: t0, type: noop}\n";
  for (int i = 1; i < 6; ++i) {
    yaml += "  - {id: t" + std::to_string(i) + ", type: noop, depends_on: t" +
            std::to_string(i - 1) + "}\n";
  }
  ParseOptions options;
  options.chain_warning_threshold = 5;
  ParseResult r = Parse(yaml, options);
  INFO(Dump(r));
  REQUIRE(r.ok());
  const Diagnostic* d =
      Find(r, "the longest dependency chain has 6 tasks (t0 -> t5), above the threshold of 5",
           Diagnostic::Severity::kWarning);
  REQUIRE(d != nullptr);
  CHECK(d->where.line == 9);
  options.chain_warning_threshold = 6;
  CHECK(Parse(yaml, options).diagnostics.empty());
}

TEST_CASE("a failure branch joined under trigger all draws a warning", "[dsl][warnings]") {
  ParseResult r = Parse(kHeader +
                        "  - {id: load, type: noop}\n"
                        "  - {id: transform, type: noop, depends_on: load}\n"
                        "  - id: cleanup\n"
                        "    type: noop\n"
                        "    depends_on: [{task: load, on: failure}, transform]\n");
  INFO(Dump(r));
  REQUIRE(r.ok());
  const Diagnostic* d = Find(r, "joins the failure branch of 'load' with 'transform'",
                             Diagnostic::Severity::kWarning);
  REQUIRE(d != nullptr);
  CHECK(d->where.line == 8);
  ParseResult both =
      Parse(kHeader +
            "  - {id: load, type: noop}\n"
            "  - {id: x, type: noop, depends_on: [{task: load, on: failure}, load]}\n");
  CHECK(Find(both, "two different outcomes of 'load'", Diagnostic::Severity::kWarning) != nullptr);
  ParseResult any = Parse(
      kHeader +
      "  - {id: load, type: noop}\n"
      "  - {id: x, type: noop, trigger: any, depends_on: [{task: load, on: failure}, load]}\n");
  CHECK(any.diagnostics.empty());
}

TEST_CASE("a name without a domain prefix warns, and is an error under strict", "[dsl]") {
  std::string yaml = "version: \"1.0\"\nname: sync\npipeline: [{id: a, type: noop}]\n";
  ParseResult loose = Parse(yaml);
  CHECK(loose.ok());
  CHECK(Find(loose, "pipeline name 'sync' has no domain prefix", Diagnostic::Severity::kWarning) !=
        nullptr);
  ParseOptions strict;
  strict.strict = true;
  ExpectErrorAt(Parse(yaml, strict), "pipeline name 'sync' has no domain prefix", 2, 7);
  ExpectErrorAt(Parse("version: \"1.0\"\nname: Order Sync\npipeline: [{id: a, type: noop}]\n"),
                "must be dot-separated words", 2, 7);
  ExpectErrorAt(Parse("version: \"2.0\"\nname: a.b\npipeline: [{id: a, type: noop}]\n"),
                "unsupported version '2.0'", 1, 10);
}

TEST_CASE("empty, binary, non-mapping, oversized and malformed files get clear errors",
          "[dsl][bounds]") {
  ExpectErrorAt(Parse(""), "file is empty", 1, 1);
  ExpectErrorAt(Parse("  \n\n"), "file is empty", 1, 1);
  ExpectErrorAt(Parse("# only a comment\n"), "file is empty", 1, 1);
  ExpectErrorAt(Parse(std::string("version: \"1.0\"\nna\0me: x\n", 24)),
                "file looks binary (control byte 0x00)", 2, 3);
  ExpectErrorAt(Parse("- a\n- b\n"), "the top level must be a mapping", 1, 1);
  ExpectErrorAt(Parse("just text\n"), "found text", 1, 1);
  ParseOptions small;
  small.max_file_bytes = 16;
  ExpectErrorAt(Parse(kHeader + "  - {id: a, type: noop}\n", small), "larger than the limit of 16",
                1, 1);
  ExpectErrorAt(Parse("version: \"1.0\"\npipeline: [\n"), "malformed YAML", 3, 1);
  ExpectErrorAt(Parse("a: 1\n---\nb: 2\n"), "one YAML document", 3, 1);
}

TEST_CASE("deep nesting is refused before yaml-cpp recurses", "[dsl][bounds]") {
  ExpectErrorAt(Parse("a: " + std::string(100000, '[') + "\n"), "nested deeper than 64 levels", 1,
                67);
  std::string block;
  for (int i = 0; i < 200; ++i) block += std::string(i, ' ') + "k:\n";
  ExpectErrorAt(Parse(block), "nested deeper than 64 levels", 65, 65);
  ExpectErrorAt(Parse("a: " + std::string(300, '-') + "\n" +
                      [] {
                        std::string s;
                        for (int i = 0; i < 100; ++i) s += "- ";
                        return s + "x\n";
                      }()),
                "nested deeper than 64 levels", 2, 1);
  // Brackets inside quotes, comments and plain text do not count.
  std::string many = std::string(100, '[');
  ParseResult r =
      Parse(kHeader + "  - {id: a, type: shell, command: \"echo '" + many + "'\"}  # " + many +
            "\n  - id: b\n    type: shell\n    command: |\n      echo " + many + "\n");
  INFO(Dump(r));
  CHECK(r.ok());
}

TEST_CASE("all problems are reported in one pass", "[dsl]") {
  ParseResult r = Parse(
      "version: \"1.0\"\nname: a.b\nschedul: x\npipeline:\n"
      "  - {id: a, type: shel}\n"
      "  - {id: b, type: noop, depends_on: zz, timeout: 3 s}\n"
      "  - {id: b, type: noop}\n");
  INFO(Dump(r));
  CHECK(CountErrors(r) == 5);
  // Sorted by position.
  for (size_t i = 1; i < r.diagnostics.size(); ++i) {
    CHECK(r.diagnostics[i - 1].where.line <= r.diagnostics[i].where.line);
  }
}

TEST_CASE("diagnostics format as FILE:LINE:COL: severity: message", "[dsl]") {
  CHECK(FormatDiagnostic({Diagnostic::Severity::kError, {"p.yaml", 3, 7}, "bad"}) ==
        "p.yaml:3:7: error: bad");
  CHECK(FormatDiagnostic({Diagnostic::Severity::kWarning, {"p.yaml", 1, 1}, "hm"}) ==
        "p.yaml:1:1: warning: hm");
  CHECK(FormatDiagnostic({Diagnostic::Severity::kError, {"gone.yaml", 0, 0}, "no such file"}) ==
        "gone.yaml: error: no such file");
}

TEST_CASE("an unreadable path is an error, not a crash", "[dsl]") {
  TempDir dir;
  ParseResult missing = LoadPipelineFile(dir.Path("nope.yaml"));
  REQUIRE(missing.diagnostics.size() == 1);
  CHECK(missing.diagnostics[0].message.find("no such file") != std::string::npos);
  ParseResult directory = LoadPipelineFile(dir.Path(""));
  CHECK_FALSE(directory.ok());
  CHECK(Find(directory, "not a regular file") != nullptr);
}

TEST_CASE("labels are a list of words, each listed once", "[dsl][labels]") {
  ParseResult ok = Parse(kHeader + "  - {id: a, type: noop, labels: [gpu, ssd-2, x.y]}\n");
  INFO(Dump(ok));
  REQUIRE(ok.ok());
  CHECK(ok.pipeline->tasks[0].labels == std::vector<std::string>{"gpu", "ssd-2", "x.y"});
  CHECK(Parse(kHeader + "  - {id: a, type: noop}\n").pipeline->tasks[0].labels.empty());
  ExpectErrorAt(Parse(kHeader + "  - {id: a, type: noop, labels: [gpu, gpu]}\n"),
                "label 'gpu' is listed twice", 4, 33);
  ExpectErrorAt(Parse(kHeader + "  - {id: a, type: noop, labels: [\"has space\"]}\n"),
                "each label must be a word", 4, 33);
  ExpectErrorAt(Parse(kHeader + "  - {id: a, type: noop, labels: gpu}\n"),
                "'labels' must be a list of text", 4, 33);
  ExpectErrorAt(Parse(kHeader + "  - {id: a, type: noop, lables: [gpu]}\n"),
                "did you mean 'labels'", 4, 25);
}

TEST_CASE("a db task reads its script beside the pipeline into sql, with bound params",
          "[dsl][db]") {
  TempDir dir;
  dir.Write("sql/store.sql", "INSERT INTO t VALUES (?, ?)\n");
  std::string path = dir.Write("p.yaml", kHeader + R"(  - id: store
    type: db
    host: mariadb://etl@db1:3306/shop
    password_env: SHOP_DB_PASSWORD
    script: sql/store.sql
    params: ["${task.idempotency_key}", "x'); DROP TABLE t; --"]
)");
  ParseResult r = LoadPipelineFile(path);
  INFO(Dump(r));
  REQUIRE(r.ok());
  const TaskSpec& t = r.pipeline->tasks[0];
  CHECK(t.sql == "INSERT INTO t VALUES (?, ?)\n");
  CHECK(t.script == "store.sql");  // read into sql; the name alone is kept
  CHECK(t.db_password_env == "SHOP_DB_PASSWORD");
  CHECK(t.sql_params ==
        std::vector<std::string>{"${task.idempotency_key}", "x'); DROP TABLE t; --"});
}

TEST_CASE("a db task refuses a password in its URL, sql with script, and bad fields", "[dsl][db]") {
  ExpectErrorAt(Parse(kHeader + "  - {id: a, type: db, host: \"mysql://etl:pw@db1/shop\"}\n"),
                "'host' must not hold a password", 4, 29);
  ExpectErrorAt(Parse(kHeader + "  - {id: a, type: db, host: \"sqlite://rel.db\"}\n"),
                "sqlite:///PATH", 4, 29);
  ExpectErrorAt(Parse(kHeader + "  - {id: a, type: db, host: \"sqlite:///x.db\", "
                                "password_env: \"not a name\"}\n"),
                "'password_env' must name an environment variable", 4, 61);
  ExpectErrorAt(Parse(kHeader + "  - {id: a, type: shell, command: x, params: [1]}\n"),
                "'params' is not a field of shell tasks (db tasks use it)", 4, 38);
  TempDir dir;
  dir.Write("q.sql", "SELECT 1");
  std::string path = dir.Write(
      "p.yaml",
      kHeader + "  - {id: a, type: db, host: \"sqlite:///x.db\", sql: x, script: q.sql}\n");
  ParseResult both = LoadPipelineFile(path);
  INFO(Dump(both));
  CHECK(Find(both, "a db task takes 'sql' or 'script', not both") != nullptr);
}

TEST_CASE("keys that would do nothing on a type are refused, naming why", "[dsl]") {
  ExpectErrorAt(Parse(kHeader + "  - {id: a, type: http, url: \"http://x/\", env: {A: b}}\n"),
                "'env' does nothing on an http task: it starts no process", 4, 43);
  for (const char* key : {"retry: {max_retries: 3}", "timeout: 5s", "precheck: \"true\"",
                          "env: {A: b}", "secrets: {A: \"env:B\"}"}) {
    const std::string line = std::string("  - {id: a, type: noop, ") + key + "}\n";
    ParseResult r = Parse(kHeader + line);
    INFO(line << Dump(r));
    CHECK_FALSE(r.ok());
    CHECK(Find(r, "does nothing on a noop task") != nullptr);
  }
  // The same keys on a type they work on are taken.
  CHECK(Parse(kHeader +
              "  - {id: a, type: shell, command: x, retry: {max_retries: 3}, timeout: 5s, "
              "precheck: \"true\", env: {A: b}}\n")
            .ok());
}

TEST_CASE("a db task's sql refuses a placeholder, pointing at params", "[dsl][db]") {
  ParseResult r = Parse(
      "version: \"1.0\"\nname: test.pipeline\nparams: {day: \"2026-01-01\"}\n"
      "pipeline:\n"
      "  - {id: a, type: db, host: \"sqlite:///x.db\", "
      "sql: \"DELETE FROM t WHERE day = '${params.day}'\"}\n");
  INFO(Dump(r));
  CHECK_FALSE(r.ok());
  const Diagnostic* d = Find(r, "'sql': ${params.day} is not expanded in SQL");
  REQUIRE(d != nullptr);
  CHECK(d->message.find("params: [\"${params.day}\"]") != std::string::npos);
  // Bound as a param, it is taken; a shell-style ${X} in SQL is no placeholder of ours.
  CHECK(Parse("version: \"1.0\"\nname: test.pipeline\nparams: {day: x}\n"
              "pipeline:\n"
              "  - {id: a, type: db, host: \"sqlite:///x.db\", "
              "sql: \"DELETE FROM t WHERE day = ?\", params: [\"${params.day}\"]}\n")
            .ok());
}
