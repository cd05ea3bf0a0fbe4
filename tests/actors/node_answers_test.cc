// A real node answering about a task that printed bytes that are not UTF-8:
// over the HTTP API and the CLI, and still serving afterwards.

#include <httplib.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/actors/cli_harness.h"
#include "tests/actors/cluster_harness.h"

using namespace apollo11::testing;  // NOLINT: test file

namespace {

constexpr const char* kReplaced = "\xEF\xBF\xBD";  // U+FFFD

const char* kBadBytesPipeline = R"(version: "1.0"
name: test.badbytes
pipeline:
  - id: t
    type: shell
    command: printf 'out \377 byte\n'
)";

httplib::Client Http(const NodeProc& node) {
  const std::string addr = node.listening["http"].get<std::string>();
  httplib::Client c(addr.substr(0, addr.rfind(':')), std::stoi(addr.substr(addr.rfind(':') + 1)));
  c.set_read_timeout(15, 0);
  return c;
}

}  // namespace

TEST_CASE("a node answers about a task that printed non-UTF-8 bytes, and keeps answering",
          "[cluster][query]") {
  // Regression: GET /api/executions/ID made the scheduler throw in
  // json::dump on the task's output; its thread died and the node stayed up
  // answering nothing.
  ScratchDir dir;
  NodeProc node = StartNode(dir, "all",
                            {"--role", "all", "--bind", "tcp://127.0.0.1:0", "--api-bind",
                             "tcp://127.0.0.1:0", "--slots", "1", "--worker-id", "local"});
  Nodes guard{{&node}};
  const std::string file = dir.Write("bad.yaml", kBadBytesPipeline);
  CmdResult submitted = Cli(node, {"submit", file, "--wait", "--timeout", "5"});
  INFO(submitted.out << submitted.err);
  REQUIRE(submitted.exit_code == 0);
  const std::string run_id = submitted.out.substr(0, submitted.out.find('\n'));

  auto res = Http(node).Get("/api/executions/" + run_id + ".t");
  REQUIRE(res);
  INFO(res->body);
  REQUIRE(res->status == 200);
  auto doc = nlohmann::json::parse(res->body, nullptr, false);
  REQUIRE(doc.is_object());
  CHECK(doc.value("output_tail", "").find(kReplaced) != std::string::npos);

  // The scheduler is still serving: the CLI's questions are answered.
  CmdResult status = Cli(node, {"status", run_id, "--json", "--timeout", "5"});
  INFO(status.err);
  CHECK(status.exit_code == 0);
  CHECK(nlohmann::json::parse(status.out, nullptr, false).is_object());
  CmdResult history = Cli(node, {"history", run_id + ".t", "--timeout", "5"});
  CHECK(history.exit_code == 0);
  CmdResult missing = Cli(node, {"status", "no-such-run", "--timeout", "5"});
  CHECK(missing.exit_code == 2);  // NotFound, from the reply's code
  auto runs = Http(node).Get("/api/runs");
  REQUIRE(runs);
  CHECK(runs->status == 200);
  CHECK(Http(node).Get("/api/runs/no-such-run")->status == 404);
}
