#include <sys/wait.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "tests/dsl/dsl_test_util.h"

using apollo11::dsl::testing::TempDir;

namespace {

struct Outcome {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// Runs `apollo11 ARGS` through the shell, capturing stdout and stderr.
Outcome Apollo11(const TempDir& dir, const std::string& args) {
  const std::string err_path = dir.Path("stderr.txt");
  const std::string command =
      std::string(APOLLO11_BIN_DIR) + "/apollo11 " + args + " 2>" + err_path;
  Outcome o;
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) o.out.append(buffer, n);
  int status = pclose(pipe);
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream err(err_path);
  std::stringstream s;
  s << err.rdbuf();
  o.err = s.str();
  return o;
}

const std::string kExamples = std::string(APOLLO11_SOURCE_DIR) + "/examples";

}  // namespace

TEST_CASE("validate prints a summary per valid file and exits 0", "[cli]") {
  TempDir dir;
  Outcome o = Apollo11(
      dir, "validate " + kExamples + "/design/pipeline.yaml " + kExamples + "/hello/pipeline.yaml");
  INFO(o.out << o.err);
  CHECK(o.exit_code == 0);
  CHECK(o.out.find(kExamples +
                   "/design/pipeline.yaml: ok: 3 tasks, 2 edges, longest chain 3 (data_fetch -> "
                   "data_store)\n") != std::string::npos);
  CHECK(o.out.find(kExamples + "/hello/pipeline.yaml: ok: 7 tasks") != std::string::npos);
  // The DESIGN example has no name: a warning on stderr, not a failure.
  CHECK(o.err.find("/design/pipeline.yaml:1:1: warning: pipeline name 'pipeline'") !=
        std::string::npos);
}

TEST_CASE("validate reports positioned errors and exits 2 for an invalid file", "[cli]") {
  TempDir dir;
  std::string bad = dir.Write("bad.yaml",
                              "version: \"1.0\"\nname: a.b\npipeline:\n"
                              "  - {id: alpha, type: noop, depends_on: beta}\n"
                              "  - {id: beta, type: noop, depends_on: alpha}\n"
                              "  - {id: gamma, type: shel}\n");
  Outcome o = Apollo11(dir, "validate " + bad + " " + kExamples + "/hello/pipeline.yaml");
  INFO(o.out << o.err);
  CHECK(o.exit_code == 2);
  CHECK(o.err.find(bad + ":4:41: error: dependency cycle: alpha -> beta -> alpha") !=
        std::string::npos);
  CHECK(o.err.find(bad + ":6:23: error: 'type' must be one of") != std::string::npos);
  CHECK(o.out.find("hello/pipeline.yaml: ok:") != std::string::npos);  // other files still checked
  CHECK(o.out.find(bad) == std::string::npos);
}

TEST_CASE("validate --strict turns the missing domain prefix into an error", "[cli]") {
  TempDir dir;
  Outcome o = Apollo11(dir, "validate --strict " + kExamples + "/design/pipeline.yaml");
  CHECK(o.exit_code == 2);
  CHECK(o.err.find(":1:1: error: pipeline name 'pipeline'") != std::string::npos);
  CHECK(Apollo11(dir, "validate --strict " + kExamples + "/hello/pipeline.yaml").exit_code == 0);
}

TEST_CASE("validate --json prints every problem as a JSON array", "[cli]") {
  TempDir dir;
  std::string bad =
      dir.Write("bad.yaml", "version: \"1.0\"\nname: sync\npipeline:\n  - {id: a, tpye: noop}\n");
  Outcome o = Apollo11(dir, "validate --json " + bad);
  INFO(o.out << o.err);
  CHECK(o.exit_code == 2);
  nlohmann::json problems = nlohmann::json::parse(o.out);
  REQUIRE(problems.is_array());
  REQUIRE(problems.size() == 3);
  CHECK(
      problems[0] ==
      nlohmann::json{
          {"file", bad},
          {"line", 2},
          {"column", 7},
          {"severity", "warning"},
          {"message", "pipeline name 'sync' has no domain prefix (write e.g. name: order.sync)"}});
  // Sorted by position: the task (4:5) before its misspelt key (4:13).
  CHECK(problems[1]["message"] == "task 'a' has no 'type' (one of shell, python, http, db, noop)");
  CHECK(problems[2]["message"] == "unknown key 'tpye' in a task (did you mean 'type'?)");
  CHECK(problems[2]["line"] == 4);
  CHECK(problems[2]["column"] == 13);
  Outcome clean = Apollo11(dir, "validate --json " + kExamples + "/hello/pipeline.yaml");
  CHECK(clean.exit_code == 0);
  CHECK(nlohmann::json::parse(clean.out) == nlohmann::json::array());
}

TEST_CASE("validate refuses missing files and missing arguments with exit 2", "[cli]") {
  TempDir dir;
  Outcome missing = Apollo11(dir, "validate " + dir.Path("nope.yaml"));
  CHECK(missing.exit_code == 2);
  CHECK(missing.err.find("nope.yaml: error: cannot read") != std::string::npos);
  CHECK(Apollo11(dir, "validate").exit_code == 2);
}

TEST_CASE("validate refuses imports outside the pipeline's directory and never echoes them",
          "[cli][imports]") {
  TempDir dir;
  dir.Write("outside.yaml", "retry_policy:\n  leaked_policy_name: {max_retries: 1}\n");
  dir.Write("p/passwd", "root:x:0:0:root-secret-hash:/root:/bin/bash\n");
  dir.Write("p/keys.yaml", "root: secret-hash-value\n");
  const std::string escape = dir.Path("p/escape.yaml");
  std::filesystem::create_symlink(dir.Path("outside.yaml"), escape);
  for (const std::string& import :
       {std::string("/etc/passwd"), std::string("../outside.yaml"), std::string("escape.yaml"),
        std::string("passwd"), std::string("keys.yaml")}) {
    const std::string pipeline = dir.Write(
        "p/pipeline.yaml", "version: \"1.0\"\nname: a.b\nimports: [" + import +
                               "]\npipeline: [{id: a, type: noop, retry: leaked_policy_name}]\n");
    Outcome o = Apollo11(dir, "validate " + pipeline);
    INFO(import << "\n" << o.out << o.err);
    CHECK(o.exit_code == 2);
    CHECK(o.out.empty());
    for (const char* content : {"root:", "/bin/bash", "secret-hash", "max_retries"}) {
      CHECK(o.err.find(content) == std::string::npos);
    }
    if (import == "passwd" || import == "keys.yaml") {
      CHECK(o.err.find("not a pipeline library") != std::string::npos);
      CHECK(o.err.find("(its content is not shown)") != std::string::npos);
    } else {
      CHECK(o.err.find(pipeline + ":3:11: error: import '" + import + "' resolves to ") !=
            std::string::npos);
      CHECK(o.err.find("outside the pipeline's directory " + dir.Path("p")) != std::string::npos);
    }
  }
}

TEST_CASE("validate --library lets imports resolve in a library directory", "[cli][imports]") {
  TempDir dir;
  dir.Write("lib/policies.yaml", "retry_policy:\n  shared: {max_retries: 2}\n");
  const std::string pipeline =
      dir.Write("p/pipeline.yaml",
                "version: \"1.0\"\nname: a.b\nimports: [policies.yaml]\n"
                "pipeline: [{id: a, type: shell, command: x, retry: shared}]\n");
  CHECK(Apollo11(dir, "validate " + pipeline).exit_code == 2);
  Outcome o = Apollo11(dir, "validate --library " + dir.Path("lib") + " " + pipeline);
  INFO(o.out << o.err);
  CHECK(o.exit_code == 0);
  CHECK(o.out.find(pipeline + ": ok: 1 tasks") != std::string::npos);
}

TEST_CASE("validate names the opening quote of a file cut off inside a quoted string",
          "[cli][truncated]") {
  TempDir dir;
  const std::string cut = dir.Write("cut.yaml",
                                    "version: \"1.0\"\nname: a.b\npipeline:\n"
                                    "  - {id: a, type: shell, command: \"echo a\"}\n"
                                    "  - id: b\n    type: shell\n    command: \"echo b; rm -rf\n");
  Outcome o = Apollo11(dir, "validate " + cut);
  INFO(o.out << o.err);
  CHECK(o.exit_code == 2);
  CHECK(o.err.find(cut + ":7:14: error: quoted text opened here (\") is never closed") !=
        std::string::npos);
}

TEST_CASE("validate refuses aliases that expand past the limit, naming the alias",
          "[cli][aliases]") {
  TempDir dir;
  std::string yaml =
      "version: \"1.0\"\nname: a.b\npipeline:\n  - {id: t0, type: shell, command: &big " +
      std::string(1 << 20, 'x') + "}\n";
  for (int i = 1; i < 1000; ++i) {
    yaml += "  - {id: t" + std::to_string(i) + ", type: shell, command: *big}\n";
  }
  const std::string big = dir.Write("aliases.yaml", yaml);
  Outcome o = Apollo11(dir, "validate " + big);
  INFO(o.out << o.err.substr(0, 2000));
  CHECK(o.exit_code == 2);
  CHECK(o.err.find(big + ":131:38: error: with this alias the file, every alias written out, "
                         "passes 134217728 bytes") != std::string::npos);
  CHECK(o.err.size() < 1000);  // one error, the megabyte not quoted
}

TEST_CASE("validate refuses credentials in a db host or an http url, at their position", "[cli]") {
  TempDir dir;
  std::string bad = dir.Write(
      "creds.yaml",
      "version: \"1.0\"\nname: a.creds\npipeline:\n"
      "  - {id: q, type: db, host: \"postgres://app@db/orders?sslmode=require&password=hunter2\", "
      "sql: \"select 1\"}\n"
      "  - {id: m, type: db, host: \"mysql://app:hunter2@db/orders\", sql: \"select 1\"}\n"
      "  - {id: h, type: http, url: \"https://bot:hunter2@api.example.com/v1\"}\n"
      "  - {id: ok, type: http, url: \"https://api.example.com/v1?page_token=abc&q=a@b\"}\n"
      "  - {id: ok2, type: db, host: \"postgres://app@db/orders?sslmode=require\", "
      "sql: \"select 1\"}\n");
  Outcome o = Apollo11(dir, "validate " + bad);
  INFO(o.out << o.err);
  CHECK(o.exit_code == 2);
  CHECK(o.err.find(bad + ":4:29: error: 'host' must not hold a password (it has the query "
                         "parameter 'password'") != std::string::npos);
  CHECK(o.err.find(bad + ":5:29: error: 'host' must not hold a password (it has a password "
                         "before '@'") != std::string::npos);
  CHECK(o.err.find(bad + ":6:30: error: 'url' must not hold credentials (it has a user (and "
                         "password) before '@'") != std::string::npos);
  CHECK(o.err.find(":7:") == std::string::npos);  // a page token and an '@' in the query are fine
  CHECK(o.err.find(":8:") == std::string::npos);
  CHECK(o.err.find("hunter2") == std::string::npos);  // the error does not repeat the secret
}

TEST_CASE("validate refuses keys that would do nothing and placeholders in SQL, saying why",
          "[cli]") {
  TempDir dir;
  std::string bad =
      dir.Write("inert.yaml",
                "version: \"1.0\"\nname: a.inert\nparams: {day: x}\npipeline:\n"
                "  - {id: n, type: noop, retry: {max_retries: 2}}\n"
                "  - {id: h, type: http, url: \"http://h/\", env: {A: b}}\n"
                "  - {id: d, type: db, host: \"sqlite:///x.db\", sql: \"DELETE FROM t WHERE day = "
                "'${params.day}'\"}\n");
  Outcome o = Apollo11(dir, "validate " + bad);
  INFO(o.out << o.err);
  CHECK(o.exit_code == 2);
  CHECK(o.err.find(bad + ":5:25: error: 'retry' does nothing on a noop task: it runs nothing, "
                         "so it cannot fail; remove it") != std::string::npos);
  CHECK(o.err.find(bad + ":6:43: error: 'env' does nothing on an http task") != std::string::npos);
  CHECK(o.err.find("'sql': ${params.day} is not expanded in SQL") != std::string::npos);
}
