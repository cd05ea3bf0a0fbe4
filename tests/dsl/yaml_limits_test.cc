// What the YAML guard refuses before the model is built: a file cut off
// inside a quoted string, aliases (and templates) that multiply into more
// than the expanded-size limit, an alias inside what it refers to; and how
// validation time grows with the size of a pipeline.
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <string>

#include "dsl/parser.h"
#include "tests/dsl/dsl_test_util.h"

using apollo11::dsl::Diagnostic;
using apollo11::dsl::ParseOptions;
using apollo11::dsl::ParsePipelineText;
using apollo11::dsl::ParseResult;
using apollo11::dsl::testing::CountErrors;
using apollo11::dsl::testing::Dump;
using apollo11::dsl::testing::Find;

namespace {

const std::string kHeader = "version: \"1.0\"\nname: test.pipeline\npipeline:\n";

ParseResult Parse(const std::string& yaml, ParseOptions options = {}) {
  return ParsePipelineText(yaml, "/nonexistent/p.yaml", options);
}

// Requires an error containing `text` at LINE:COL and no pipeline.
void ExpectErrorAt(const ParseResult& r, const std::string& text, int line, int column) {
  INFO(Dump(r));
  const Diagnostic* d = Find(r, text);
  REQUIRE(d != nullptr);
  CHECK(d->where.line == line);
  CHECK(d->where.column == column);
  CHECK_FALSE(r.ok());
}

double SecondsToParse(const std::string& yaml) {
  double best = 1e9;
  for (int i = 0; i < 3; ++i) {  // the best of three: a busy machine only slows a run
    auto start = std::chrono::steady_clock::now();
    ParseResult r = Parse(yaml);
    std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
    REQUIRE(r.ok());
    best = std::min(best, took.count());
  }
  return best;
}

std::string JoinOf(int deps) {
  std::string yaml = kHeader;
  for (int i = 0; i < deps; ++i) yaml += "  - {id: t" + std::to_string(i) + ", type: noop}\n";
  yaml += "  - id: join\n    type: noop\n    depends_on:\n";
  for (int i = 0; i < deps; ++i) yaml += "      - t" + std::to_string(i) + "\n";
  return yaml;
}

std::string ChainOf(int tasks) {
  std::string yaml = kHeader;
  for (int i = 0; i < tasks; ++i) {
    yaml += "  - {id: t" + std::to_string(i) + ", type: noop" +
            (i > 0 ? ", depends_on: t" + std::to_string(i - 1) : std::string()) + "}\n";
  }
  return yaml;
}

}  // namespace

TEST_CASE("a file cut off inside a quoted string is refused at the opening quote",
          "[dsl][truncated]") {
  const std::string two_tasks = kHeader +
                                "  - id: a\n    type: shell\n    command: \"echo a\"\n"
                                "  - id: b\n    type: shell\n    command: \"echo b\n";
  ExpectErrorAt(Parse(two_tasks), "is never closed: the file ends inside it", 9, 14);
  ExpectErrorAt(Parse(kHeader + "  - {id: a, type: shell, command: 'echo it''s\n"),
                "is never closed: the file ends inside it", 4, 35);
  ExpectErrorAt(Parse(kHeader + "  - {id: a, type: shell, command: \"echo\n\n\n"),
                "is never closed", 4, 35);
  // Not only at the end: a quote that runs on into the next, less indented task.
  ExpectErrorAt(Parse(kHeader + "  - id: a\n    type: shell\n    command: \"echo a\n"
                                "  - id: b\n    type: shell\n    command: \"echo b\"\n"),
                "is not closed before line 7, which is indented less", 6, 14);
  // Multi-line quoted text that is closed and indented past its key is fine.
  ParseResult ok = Parse(kHeader +
                         "  - id: a\n    type: shell\n    command: \"echo a\n     b \\\"c\\\"\n"
                         "      d\"\n    env: {X: 'it''s\n      here'}\n");
  INFO(Dump(ok));
  REQUIRE(ok.ok());
  CHECK(ok.pipeline->tasks[0].command == "echo a b \"c\" d");
  CHECK(ok.pipeline->tasks[0].env->at("X") == "it's here");
}

TEST_CASE("invalid YAML that yaml-cpp 0.7 reads is refused where it goes wrong", "[dsl][yaml]") {
  // Cases of the YAML test suite (tests/dsl/yaml_test_suite.py runs them all).
  const std::string task = kHeader + "  - id: a\n    type: shell\n";
  ExpectErrorAt(Parse(task + "    command: \"it\\'s\"\n"), "invalid escape", 6, 17);  // HRE5
  ExpectErrorAt(Parse(task + "    command: \"\\x4g\"\n"), "takes 2 hexadecimal digits", 6, 15);
  ExpectErrorAt(Parse(task + "    command: \"echo\"# x\n"), "a comment needs a space", 6, 20);
  ExpectErrorAt(Parse(task + "    command: >#x\n      echo\n"), "a comment needs a space", 6, 15);
  ExpectErrorAt(Parse(task + "    depends_on: [b, , c]\n"), "must follow an entry", 6, 21);
  ExpectErrorAt(Parse(task + "    depends_on: [-]\n"), "'-' alone", 6, 18);
  // A quoted line or a line in brackets not indented past its key; a tab is no indentation.
  ExpectErrorAt(Parse(task + "    command: \"echo\n    a\"\n"), "must be indented by more than 4",
                7, 5);
  ExpectErrorAt(Parse(task + "    depends_on: [b,\n\tc]\n"), "a tab is not indentation", 7, 1);
  // A line at the column of the keys above that is no key (a ':' missing).
  ExpectErrorAt(Parse(task + "    command: echo\n    retries\n"), "is not 'key: value'", 7, 5);
  // yaml-cpp ends the document at a marker, even inside brackets (then ran away on the ',').
  ExpectErrorAt(Parse(task + "    depends_on: [b,\n--- ,\n    ]\n"), "marks a document", 7, 1);
  ExpectErrorAt(Parse(task + "    command: |\n\n         \n      echo\n"),
                "this empty line of a block scalar has 9 spaces", 8, 7);
  // Valid YAML the pre-scan refused before: commas in a verbatim tag, and plain
  // text going on in a line that starts with what would start a tag or quote.
  ParseResult ok = Parse(task +
                         "    command: !<tag:yaml.org,2002:str> echo\n"
                         "    env: {X: a, Y: \"b\"}\n    precheck: one\n      !two, \"three\"\n");
  INFO(Dump(ok));
  REQUIRE(ok.ok());
  CHECK(ok.pipeline->tasks[0].command == "echo");
  CHECK(ok.pipeline->tasks[0].precheck == "one !two, \"three\"");
}

TEST_CASE("an unclosed bracket is reported where it opened", "[dsl][truncated]") {
  ParseResult r = Parse(kHeader + "  - {id: a, type: noop, depends_on: [b\n");
  INFO(Dump(r));
  CHECK_FALSE(r.ok());
  CHECK(Find(r, "malformed YAML") != nullptr);
  CHECK(Find(r, "('[' opened at 4:37 is never closed)") != nullptr);
  // The next task's line, not indented past the list, shows the bracket is open.
  ExpectErrorAt(
      Parse(kHeader + "  - {id: a, type: noop, depends_on: [b\n  - {id: b, type: noop}\n"),
      "inside the '[' opened at 4:37 (is a ']' missing?)", 5, 3);
}

TEST_CASE("aliases are bounded by their expanded size, the alias and the limit named",
          "[dsl][aliases]") {
  // One 1 MiB command aliased by 140 tasks: 140 MiB written out, over the 128 MiB default.
  std::string yaml =
      kHeader + "  - {id: t0, type: shell, command: &big " + std::string(1 << 20, 'x') + "}\n";
  for (int i = 1; i < 140; ++i) {
    yaml += "  - {id: t" + std::to_string(i) + ", type: shell, command: *big}\n";
  }
  ParseResult r = Parse(yaml);
  // The anchored text and 126 aliases fit (127 x (1 MiB + 2 bytes) and the
  // rest of the tasks); the 127th (task t127, one digit longer than t31 was) passes 128 MiB.
  ExpectErrorAt(r, "passes 134217728 bytes (the limit on a pipeline's expanded size", 4 + 127, 38);
  CHECK(Find(r, "with this alias") != nullptr);
  CHECK(CountErrors(r) == 1);

  ParseOptions small;
  small.max_expanded_bytes = 1000;
  ExpectErrorAt(Parse(kHeader + "  - {id: a, type: shell, command: &c " + std::string(400, 'c') +
                          "}\n  - {id: b, type: shell, command: *c, env: {X: *c, Y: *c}}\n",
                      small),
                "with this alias the file, every alias written out, passes 1000 bytes", 5, 48);
  // Without an alias the limit names the node that passes it.
  ExpectErrorAt(
      Parse(kHeader + "  - {id: a, type: shell, command: " + std::string(2000, 'c') + "}\n", small),
      "here the file, every alias written out, passes 1000 bytes", 4, 35);
}

TEST_CASE("nested aliases (a billion laughs) are refused without expanding them",
          "[dsl][aliases]") {
  std::string yaml = "version: \"1.0\"\nname: a.b\nparams:\n  P0: &l0 lol\n";
  yaml += "templates:\n";
  std::string prev = "l0";
  for (int i = 1; i < 30; ++i) {
    std::string name = "l" + std::to_string(i);
    yaml += "  t" + name + ": {args: &" + name + " [*" + prev + ", *" + prev + ", *" + prev +
            ", *" + prev + "]}\n";
    prev = name;
  }
  yaml += "pipeline:\n  - {id: a, type: shell, command: x, args: *" + prev + "}\n";
  auto start = std::chrono::steady_clock::now();
  ParseResult r = Parse(yaml);
  std::chrono::duration<double> took = std::chrono::steady_clock::now() - start;
  INFO(Dump(r));
  CHECK_FALSE(r.ok());
  CHECK(Find(r, "every alias written out, passes 134217728 bytes") != nullptr);
  CHECK(took.count() < 5.0);  // 4^29 nodes written out: only a walk that stops can finish
}

TEST_CASE("an alias inside the node it refers to is refused", "[dsl][aliases]") {
  ExpectErrorAt(Parse(kHeader + "  - &t {id: a, type: noop, env: *t}\n"),
                "refers to a node that contains it", 4, 33);
  ExpectErrorAt(Parse("version: \"1.0\"\nname: a.b\nx: &l [a, [b, *l]]\npipeline: []\n"),
                "refers to a node that contains it", 3, 15);
}

TEST_CASE("template fields copied into tasks count against the expanded size", "[dsl][aliases]") {
  ParseOptions small;
  small.max_expanded_bytes = 2000;
  std::string yaml = "version: \"1.0\"\nname: a.b\ntemplates:\n  big: {type: shell, command: " +
                     std::string(500, 'c') + "}\npipeline:\n";
  for (int i = 0; i < 5; ++i) yaml += "  - {id: t" + std::to_string(i) + ", extends: big}\n";
  ParseResult r = Parse(yaml, small);
  // Each use copies ~520 bytes: the fourth passes 2000.
  ExpectErrorAt(r, "templates extended by the tasks so far copy more than 2000 bytes", 9, 23);
  CHECK(CountErrors(r) == 2);  // the fourth and the fifth task
}

TEST_CASE("validation time grows linearly with dependencies and tasks", "[dsl][perf]") {
  // A task with 20,000 dependencies took 31 s: a set was rebuilt per entry.
  // Four times the entries may take at most ten times as long (linear: 4,
  // quadratic: 16; the old code took 19 times as long).
  const double small_join = SecondsToParse(JoinOf(2500));
  const double large_join = SecondsToParse(JoinOf(10000));
  INFO("join of 2,500: " << small_join << " s, of 10,000: " << large_join << " s");
  CHECK(large_join < 10 * small_join + 0.1);
  const double small_chain = SecondsToParse(ChainOf(5000));
  const double large_chain = SecondsToParse(ChainOf(20000));
  INFO("chain of 5,000: " << small_chain << " s, of 20,000: " << large_chain << " s");
  CHECK(large_chain < 10 * small_chain + 0.1);
}

TEST_CASE("imports stay inside the pipeline's directory or a library directory", "[dsl][imports]") {
  apollo11::dsl::testing::TempDir dir;
  dir.Write("outside.yaml", "retry_policy:\n  fast: {max_retries: 1}\n");
  dir.Write("lib/shared.yaml", "retry_policy:\n  shared: {max_retries: 2}\n");
  dir.Write("p/inner/ok.yaml", "retry_policy:\n  inner: {max_retries: 3}\n");
  std::filesystem::create_symlink(dir.Path("outside.yaml"), dir.Path("p/link.yaml"));
  const std::string tail = "pipeline: [{id: a, type: noop}]\n";
  auto load = [&](const std::string& imports, ParseOptions options = {}) {
    std::string path = dir.Write("p/pipeline.yaml",
                                 "version: \"1.0\"\nname: a.b\nimports: " + imports + "\n" + tail);
    return apollo11::dsl::LoadPipelineFile(path, options);
  };
  ExpectErrorAt(load("[../outside.yaml]"),
                "resolves to " + dir.Path("outside.yaml") + ", outside the pipeline's directory " +
                    dir.Path("p"),
                3, 11);
  ExpectErrorAt(load("[" + dir.Path("outside.yaml") + "]"), "outside the pipeline's directory", 3,
                11);
  ExpectErrorAt(load("[link.yaml]"), "resolves to " + dir.Path("outside.yaml"), 3, 11);
  ExpectErrorAt(load("[/etc/passwd]"), "resolves to /etc/passwd, outside", 3, 11);
  CHECK(load("[inner/ok.yaml]").ok());
  ParseOptions with_library;
  with_library.library_dirs = {dir.Path("lib")};
  CHECK(load("[shared.yaml]", with_library).ok());  // found in the library directory
  CHECK(load("[../lib/shared.yaml]", with_library).ok());
  CHECK_FALSE(load("[../outside.yaml]", with_library).ok());
}

TEST_CASE("an imported file that is not a pipeline library is refused without its content",
          "[dsl][imports]") {
  apollo11::dsl::testing::TempDir dir;
  dir.Write("p/secrets.yaml", "root: $6$hash-of-root\ndaemon: x\n");
  dir.Write("p/passwd", "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1::/usr/sbin\n");
  dir.Write("p/bad.yaml", "%YAML 9.9 secret-version\n---\nretry_policy: {}\n");
  for (const char* name : {"secrets.yaml", "passwd", "bad.yaml"}) {
    std::string path =
        dir.Write("p/pipeline.yaml", std::string("version: \"1.0\"\nname: a.b\nimports: [") + name +
                                         "]\npipeline: [{id: a, type: noop}]\n");
    ParseResult r = apollo11::dsl::LoadPipelineFile(path);
    INFO(Dump(r));
    CHECK_FALSE(r.ok());
    for (const char* content : {"hash-of-root", "daemon", "/bin/bash", "secret-version"}) {
      CHECK(Dump(r).find(content) == std::string::npos);
    }
  }
}
