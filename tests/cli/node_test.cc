// The Node: what it starts, what it refuses, and how its wait ends.

#include "cli/node.h"

#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "cli/exit_codes.h"

namespace apollo11::cli {
namespace {

std::string TempStateDir() {
  std::string dir = (std::filesystem::temp_directory_path() / "a11-node-test-XXXXXX").string();
  REQUIRE(::mkdtemp(dir.data()) != nullptr);
  return dir;
}

// A role=all node on inproc endpoints without HTTP, as `apollo11 run` builds.
NodeConfig InprocConfig(const std::string& state_dir, const std::string& name) {
  NodeConfig c;
  c.state_dir = state_dir;
  c.coordinator_config.instance = name;
  c.coordinator_config.worker_endpoint = "inproc://" + name + "-workers";
  c.coordinator_config.client_endpoint = "inproc://" + name + "-clients";
  c.worker_config.worker.worker_id = "local";
  c.worker_config.worker.slots = 1;
  c.worker_config.executor.log_dir = state_dir + "/logs";
  return c;
}

TEST_CASE("a node starts its coordinator and worker and names them in its listening line",
          "[cli][node]") {
  const std::string dir = TempStateDir();
  SystemClock clock;
  Node node(InprocConfig(dir, "a11-node-test-1"), &clock);
  REQUIRE(node.Start().ok());
  CHECK(node.failed_stage() == NodeStage::kNone);
  REQUIRE(node.journal() != nullptr);
  CHECK(node.epoch() == 1);
  const nlohmann::json& l = node.listening();
  CHECK(l["role"] == "all");
  CHECK(l["api"] == "inproc://a11-node-test-1-clients");
  CHECK(l["connect"] == "inproc://a11-node-test-1-workers");
  CHECK(l["worker_id"] == "local");
  CHECK_FALSE(l.contains("http"));
  node.Stop(/*drain=*/false);
  node.Stop(/*drain=*/false);  // idempotent
  std::filesystem::remove_all(dir);
}

TEST_CASE("a second node on a locked state dir fails at the lock", "[cli][node]") {
  const std::string dir = TempStateDir();
  SystemClock clock;
  Node first(InprocConfig(dir, "a11-node-test-2"), &clock);
  REQUIRE(first.OpenState().ok());
  Node second(InprocConfig(dir, "a11-node-test-3"), &clock);
  Status s = second.Start();
  CHECK_FALSE(s.ok());
  CHECK(second.failed_stage() == NodeStage::kLock);
  CHECK(second.journal() == nullptr);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a node's wait ends with exit 0 on a signal and non-zero when an actor dies",
          "[cli][node]") {
  SystemClock clock;
  NodeConfig config;
  config.coordinator = false;
  config.worker = false;  // nothing to start: only the wait is under test
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGUSR2);
  BlockSignals(signals);

  Node signaled(config, &clock);
  REQUIRE(signaled.Start().ok());
  ::raise(SIGUSR2);
  CHECK(signaled.Run(signals, Millis(10)) == kExitOk);

  Node failing(config, &clock);
  REQUIRE(failing.Start().ok());
  int asked = 0;
  failing.AddFailureSource([&asked]() -> std::optional<Status> {
    if (++asked < 3) return std::nullopt;
    return Status::Internal("scheduler thread exited: boom");
  });
  CHECK(failing.Run(signals, Millis(10)) == kExitInternal);
  CHECK(asked == 3);
  CHECK(failing.ActorFailure()->message() == "scheduler thread exited: boom");
}

}  // namespace
}  // namespace apollo11::cli
