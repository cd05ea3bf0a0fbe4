// The Node: what it starts, what it refuses, and how its wait ends.

#include "cli/node.h"

#include <signal.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <filesystem>

#include "cli/exit_codes.h"
#include "cli/remote.h"
#include "dsl/parser.h"
#include "dsl/pipeline_json.h"

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

TEST_CASE("a node whose actors die exits non-zero with the reason instead of serving nothing",
          "[cli][node]") {
  const std::string dir = TempStateDir();
  SystemClock clock;
  Node node(InprocConfig(dir, "a11-node-test-4"), &clock);
  REQUIRE(node.Start().ok());
  CHECK_FALSE(node.ActorFailure().has_value());
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGUSR2);
  BlockSignals(signals);
  // Every actor's loop ends with an error when its context is terminated
  // under it: what a crashed loop looks like to the supervisor.
  node.context().shutdown();
  std::optional<Status> failure;
  for (int i = 0; i < 1000 && !failure; ++i) {
    failure = node.ActorFailure();
    if (!failure) ::usleep(10 * 1000);
  }
  REQUIRE(failure.has_value());
  CHECK(failure->message().find("actor ") == 0);
  CHECK(failure->message().find("context") != std::string::npos);  // terminated under it
  CHECK(node.Run(signals, Millis(10)) == kExitInternal);           // the wait ends on it at once
  std::filesystem::remove_all(dir);
}

actors::SubmitRun TwoTasks() {
  dsl::ParseResult parsed = dsl::ParsePipelineText(R"(version: "1.0"
name: demo.follow
pipeline:
  - id: a
    type: noop
  - id: b
    type: shell
    command: "true"
    depends_on: a
)",
                                                   "follow.yaml");
  REQUIRE(parsed.ok());
  actors::SubmitRun submit;
  submit.pipeline_json = dsl::CanonicalJson(*parsed.pipeline);
  submit.pipeline_hash = dsl::HashCanonicalJson(submit.pipeline_json);
  return submit;
}

// A client of `node`'s coordinator over its own (inproc) client socket.
Result<std::unique_ptr<RemoteCoordinator>> ConnectClient(Node& node) {
  return RemoteCoordinator::ConnectWithKeys(node.coordinator()->client_endpoint(), std::nullopt, "",
                                            std::chrono::seconds(10), &node.context());
}

TEST_CASE("a submission naming another snapshot's hash is refused over the client socket",
          "[cli][node][remote][hostile]") {
  const std::string dir = TempStateDir();
  SystemClock clock;
  Node node(InprocConfig(dir, "a11-node-test-5"), &clock);
  REQUIRE(node.Start().ok());
  auto client = ConnectClient(node);
  REQUIRE(client.ok());
  actors::SubmitRun forged = TwoTasks();
  forged.pipeline_hash = "0123456789abcdef";
  auto refused = (*client)->Submit(forged);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().message().find("refused (a snapshot is journaled under its own hash)") !=
        std::string::npos);
  auto stored = node.journal()->GetPipeline("0123456789abcdef");
  REQUIRE(stored.ok());
  CHECK_FALSE(stored->has_value());
  CHECK((*client)->Submit(TwoTasks()).ok());  // the honest one still runs
  client->reset();
  node.Stop(/*drain=*/false);
  std::filesystem::remove_all(dir);
}

TEST_CASE("SubmitAndFollow reports acceptance and progress and returns when the run ends",
          "[cli][node][remote]") {
  const std::string dir = TempStateDir();
  SystemClock clock;
  Node node(InprocConfig(dir, "a11-node-test-4"), &clock);
  REQUIRE(node.Start().ok());
  auto client = ConnectClient(node);
  REQUIRE(client.ok());
  std::string accepted;
  std::vector<uint32_t> last;
  int ticks = 0;
  FollowHooks hooks;
  hooks.accepted = [&](const std::string& id) { accepted = id; };
  hooks.progress = [&](const std::vector<uint32_t>& counts) { last = counts; };
  hooks.tick = [&](const std::string&) {
    ++ticks;
    return FollowAction::kContinue;
  };
  auto run_id = (*client)->SubmitAndFollow(TwoTasks(), hooks);
  REQUIRE(run_id.ok());
  CHECK(*run_id == accepted);
  auto record = node.journal()->GetRun(*run_id);
  REQUIRE(record.ok());
  REQUIRE(record->has_value());
  CHECK((*record)->status == RunStatus::kSuccess);
  REQUIRE(last.size() > static_cast<size_t>(TaskState::kSuccess));
  CHECK(last[static_cast<int>(TaskState::kSuccess)] == 2);
  CHECK(ticks > 0);

  SECTION("a run this client did not submit is followed by polling its record") {
    FollowHooks poll;
    poll.quiet_poll = std::chrono::milliseconds(50);
    CHECK((*client)->Follow(*run_id, poll).ok());
    CHECK((*client)->Follow("r-unknown", poll).code() == StatusCode::kNotFound);
  }
  SECTION("a tick asking to stop ends the follow at once") {
    FollowHooks stop;
    stop.quiet_poll = std::chrono::milliseconds(0);
    stop.tick = [](const std::string&) { return FollowAction::kStop; };
    CHECK_FALSE((*client)->Follow("r-unknown", stop).ok());
  }
  client->reset();
  node.Stop(/*drain=*/false);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace apollo11::cli
