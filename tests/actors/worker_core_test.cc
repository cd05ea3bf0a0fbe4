// The worker's logic with a real Executor (noop tasks finish without a
// process) and a real LMDB outbox: epoch fencing, DISPATCH deduplication, and
// results that survive a restart of the worker until they are ACKed. The last
// cases run it over a FakeTaskRunner: what it reads comes through its ports.

#include "actors/worker/worker_core.h"

#include <catch2/catch.hpp>
#include <filesystem>

#include "common/wire_limits.h"
#include "executor/executor.h"
#include "tests/actors/cli_harness.h"
#include "tests/executor/fake_task_runner.h"

using namespace apollo11;          // NOLINT: test file
using namespace apollo11::actors;  // NOLINT: test file

namespace {

std::string Frame(transport::MsgType type, const auto& body) {
  return transport::EncodeToString(type, body);
}

transport::Dispatch NoopDispatch(const std::string& exec_id, uint32_t attempt, uint64_t epoch) {
  transport::Dispatch d;
  d.exec_id = exec_id;
  d.attempt = attempt;
  d.epoch = epoch;
  d.task.type = static_cast<uint8_t>(dsl::TaskType::kNoop);
  return d;
}

transport::Heartbeat Beat(uint64_t epoch) {
  transport::Heartbeat hb;
  hb.epoch = epoch;
  return hb;
}

// Types of the frames in the worker's outbox, which is then cleared.
std::vector<transport::MsgType> Drain(WorkerCore& core) {
  std::vector<transport::MsgType> types;
  for (const std::string& f : core.outbox()) {
    auto env = transport::DecodeEnvelope(f.data(), f.size());
    REQUIRE(env.ok());
    types.push_back(static_cast<transport::MsgType>(env->type));
  }
  core.outbox().clear();
  return types;
}

size_t Count(const std::vector<transport::MsgType>& types, transport::MsgType t) {
  return static_cast<size_t>(std::count(types.begin(), types.end(), t));
}

struct WorkerFixture {
  testing::ScratchDir dir;
  FakeClock clock;
  executor::ExecutorOptions exec_options;
  std::unique_ptr<executor::Executor> executor;
  std::unique_ptr<storage::Outbox> outbox;
  std::unique_ptr<WorkerCore> core;

  WorkerFixture() { Restart(); }
  // A new worker process on the same state dir.
  void Restart() {
    core.reset();
    outbox.reset();
    exec_options.log_dir = dir.path() + "/logs";
    executor = std::make_unique<executor::Executor>(exec_options, clock);
    auto opened = storage::Outbox::Open(dir.path() + "/outbox");
    REQUIRE(opened.ok());
    outbox = std::move(*opened);
    WorkerOptions options;
    options.worker_id = "w1";
    options.slots = 2;
    core = std::make_unique<WorkerCore>(executor.get(), &clock, options, outbox.get());
  }
  void Feed(const std::string& frame) {
    core->OnFrame(frame.data(), frame.size());
    core->EndTurn();
  }
  void Finish() {
    std::vector<executor::ExecOutcome> finished;
    executor->Process(clock.Steady(), &finished);
    if (!finished.empty()) core->OnFinished(finished);
  }
};

}  // namespace

TEST_CASE("a worker refuses DISPATCH and CANCEL from an older coordinator epoch", "[worker]") {
  WorkerFixture f;
  f.Feed(Frame(transport::MsgType::kHeartbeat, Beat(2)));
  CHECK(f.core->epoch_seen() == 2);
  Drain(*f.core);
  f.Feed(Frame(transport::MsgType::kDispatch, NoopDispatch("r.old", 1, 1)));
  f.Finish();
  CHECK(Drain(*f.core).empty());  // nothing ran, nothing reported
  f.Feed(Frame(transport::MsgType::kDispatch, NoopDispatch("r.new", 1, 2)));
  f.Finish();
  CHECK(Count(Drain(*f.core), transport::MsgType::kResult) == 1);
  // A newer epoch is adopted, and the worker introduces itself again.
  f.Feed(Frame(transport::MsgType::kHeartbeat, Beat(3)));
  auto types = Drain(*f.core);
  CHECK(f.core->epoch_seen() == 3);
  CHECK(Count(types, transport::MsgType::kHello) == 1);
}

TEST_CASE("a duplicated DISPATCH runs nothing twice, and its result is resent", "[worker]") {
  WorkerFixture f;
  f.Feed(Frame(transport::MsgType::kHeartbeat, Beat(1)));
  f.Feed(Frame(transport::MsgType::kDispatch, NoopDispatch("r.a", 1, 1)));
  f.Finish();
  CHECK(Count(Drain(*f.core), transport::MsgType::kResult) == 1);
  f.Feed(Frame(transport::MsgType::kDispatch, NoopDispatch("r.a", 1, 1)));
  CHECK(f.executor->running() == 0);
  f.Finish();
  auto types = Drain(*f.core);
  CHECK(Count(types, transport::MsgType::kResult) == 1);  // the same result, again
  CHECK(f.core->unacked_results() == 1);
}

TEST_CASE("unacknowledged results survive a worker restart in its outbox", "[worker][recovery]") {
  WorkerFixture f;
  f.Feed(Frame(transport::MsgType::kHeartbeat, Beat(1)));
  f.Feed(Frame(transport::MsgType::kDispatch, NoopDispatch("r.a", 1, 1)));
  f.Feed(Frame(transport::MsgType::kDispatch, NoopDispatch("r.b", 2, 1)));
  f.Finish();
  Drain(*f.core);
  f.Feed(Frame(transport::MsgType::kAck, transport::Ack{"r.a", 1}));
  CHECK(f.outbox->size() == 1);

  f.Restart();  // killed before r.b's ACK
  CHECK(f.core->unacked_results() == 1);
  f.core->Hello();
  auto types = Drain(*f.core);
  CHECK(Count(types, transport::MsgType::kHello) == 1);
  CHECK(Count(types, transport::MsgType::kResult) == 1);  // r.b, from the outbox
  // A DISPATCH of r.b attempt 2 again (at-least-once) does not rerun it.
  f.Feed(Frame(transport::MsgType::kDispatch, NoopDispatch("r.b", 2, 1)));
  CHECK(f.executor->running() == 0);
  f.Feed(Frame(transport::MsgType::kAck, transport::Ack{"r.b", 2}));
  CHECK(f.core->unacked_results() == 0);
  CHECK(f.outbox->size() == 0);
}

namespace {

// The node log as a test sets it.
class FakeNodeLog final : public NodeLogReader {
 public:
  Result<std::vector<std::string>> LinesAbout(const std::string& exec_id) const override {
    asked.push_back(exec_id);
    return lines;
  }
  std::vector<std::string> lines;
  mutable std::vector<std::string> asked;
};

transport::LogReply OnlyLogReply(WorkerCore& core) {
  REQUIRE(core.outbox().size() == 1);
  auto env = transport::DecodeEnvelope(core.outbox()[0].data(), core.outbox()[0].size());
  REQUIRE(env.ok());
  REQUIRE(env->type == transport::ToWire(transport::MsgType::kLogReply));
  auto reply = transport::BodyAs<transport::LogReply>(*env);
  REQUIRE(reply.ok());
  core.outbox().clear();
  return *reply;
}

transport::LogRequest AskLog(const std::string& exec_id, uint8_t stream, uint64_t offset,
                             uint32_t max_bytes) {
  transport::LogRequest r;
  r.request_id = 7;
  r.exec_id = exec_id;
  r.attempt = 1;
  r.stream = stream;
  r.offset = offset;
  r.max_bytes = max_bytes;
  return r;
}

}  // namespace

TEST_CASE("a worker serves LOG_REQUEST through its runner and node-log reader, not files",
          "[worker][logs]") {
  FakeClock clock;
  testing::FakeTaskRunner runner;
  FakeNodeLog node_log;
  WorkerOptions options;
  options.worker_id = "w1";
  WorkerCore core(&runner, &clock, options, nullptr, &node_log);
  auto feed = [&](const transport::LogRequest& r) {
    std::string frame = Frame(transport::MsgType::kLogRequest, r);
    core.OnFrame(frame.data(), frame.size());
  };

  runner.output[{"r.a.out", 1}] = "hello world";
  feed(AskLog("r.a", 0, 6, 3));
  transport::LogReply reply = OnlyLogReply(core);
  CHECK(reply.request_id == 7);
  CHECK(reply.data == "wor");
  CHECK(reply.size == 11);
  CHECK(reply.error.empty());

  // Nothing captured for a finished (unknown) attempt: it printed nothing,
  // which is no error (issue 19); `apollo11 logs` says so on stderr.
  feed(AskLog("r.b", 1, 0, 0));
  reply = OnlyLogReply(core);
  CHECK(reply.error.empty());
  CHECK(reply.size == 0);
  CHECK(reply.data.empty());

  // Nothing captured yet for a running attempt: empty, no error.
  std::string dispatch = Frame(transport::MsgType::kDispatch, [] {
    transport::Dispatch d = NoopDispatch("r.c", 1, 1);
    d.task.type = static_cast<uint8_t>(dsl::TaskType::kShell);
    return d;
  }());
  core.OnFrame(dispatch.data(), dispatch.size());
  core.outbox().clear();
  REQUIRE(runner.IsRunning("r.c", 1));
  feed(AskLog("r.c", 0, 0, 0));
  reply = OnlyLogReply(core);
  CHECK(reply.running);
  CHECK(reply.error.empty());
  CHECK(reply.size == 0);

  node_log.lines = {"{\"exec_id\":\"r.a\"}", "{\"exec_id\":\"r.a\",\"x\":1}"};
  feed(AskLog("r.a", transport::kLogStreamEvents, 0, 0));
  reply = OnlyLogReply(core);
  CHECK(node_log.asked == std::vector<std::string>{"r.a"});
  CHECK(reply.data == node_log.lines[0] + "\n" + node_log.lines[1] + "\n");
}

TEST_CASE("a worker without a node-log reader says it keeps no log file", "[worker][logs]") {
  FakeClock clock;
  testing::FakeTaskRunner runner;
  WorkerOptions options;
  options.worker_id = "w1";
  WorkerCore core(&runner, &clock, options);
  std::string frame =
      Frame(transport::MsgType::kLogRequest, AskLog("r.a", transport::kLogStreamEvents, 0, 0));
  core.OnFrame(frame.data(), frame.size());
  CHECK(OnlyLogReply(core).error == "worker w1 keeps no log file");
}

TEST_CASE("a DISPATCH the coordinator refused fails at once with its reason and runs nothing",
          "[worker][limits]") {
  WorkerFixture f;
  f.Feed(Frame(transport::MsgType::kHeartbeat, Beat(1)));
  Drain(*f.core);
  transport::Dispatch d = NoopDispatch("r.big", 1, 1);
  d.task.type = static_cast<uint8_t>(dsl::TaskType::kShell);
  d.task.refusal = "the task cannot be sent to a worker: a DISPATCH of 20000000 bytes exceeds";
  f.Feed(Frame(transport::MsgType::kDispatch, d));
  CHECK(f.executor->running() == 0);
  REQUIRE(f.core->outbox().size() == 2);  // the RESULT, then the slot's credit back
  auto env = transport::DecodeEnvelope(f.core->outbox()[0].data(), f.core->outbox()[0].size());
  REQUIRE(env.ok());
  auto result = transport::BodyAs<transport::ResultMsg>(*env);
  REQUIRE(result.ok());
  CHECK(result->outcome == static_cast<uint8_t>(transport::Outcome::kRejected));
  CHECK_FALSE(result->retryable);
  CHECK(result->error == d.task.refusal);
}

TEST_CASE("a DISPATCH of a task type this worker does not know fails, naming the types it knows",
          "[worker]") {
  WorkerFixture f;
  f.Feed(Frame(transport::MsgType::kHeartbeat, Beat(1)));
  Drain(*f.core);
  transport::Dispatch d = NoopDispatch("r.future", 1, 1);
  d.task.type = 9;  // a newer coordinator's type
  d.task.command = "touch " + f.dir.path() + "/ran";
  f.Feed(Frame(transport::MsgType::kDispatch, d));
  CHECK(f.executor->running() == 0);
  f.Finish();
  REQUIRE(f.core->outbox().size() == 2);  // the RESULT, then the slot's credit back
  auto env = transport::DecodeEnvelope(f.core->outbox()[0].data(), f.core->outbox()[0].size());
  REQUIRE(env.ok());
  auto result = transport::BodyAs<transport::ResultMsg>(*env);
  REQUIRE(result.ok());
  CHECK(result->exec_id == "r.future");
  CHECK(result->outcome == static_cast<uint8_t>(transport::Outcome::kRejected));  // FAILED
  CHECK_FALSE(result->retryable);
  CHECK(
      result->error ==
      "unknown task type 9 (this worker knows shell, python, http, db, noop): upgrade the worker");
  CHECK_FALSE(std::filesystem::exists(f.dir.path() + "/ran"));
  // A repeat of it is the same attempt: its result again, nothing run.
  Drain(*f.core);
  f.Feed(Frame(transport::MsgType::kDispatch, d));
  CHECK(Count(Drain(*f.core), transport::MsgType::kResult) == 1);
  CHECK(f.executor->running() == 0);
}

TEST_CASE("a RESULT too large for the dispatcher's decoder is cut to fit, saying so",
          "[worker][limits]") {
  WorkerFixture f;
  f.Feed(Frame(transport::MsgType::kHeartbeat, Beat(1)));
  f.Feed(Frame(transport::MsgType::kDispatch, NoopDispatch("r.loud", 1, 1)));
  Drain(*f.core);
  std::vector<executor::ExecOutcome> finished(1);
  finished[0].exec_id = "r.loud";
  finished[0].attempt = 1;
  finished[0].kind = executor::ExecOutcomeKind::kFailed;
  finished[0].output = std::string(kWireMaxStringBytes + 10, 'o');  // a runner with a large tail
  finished[0].error = "exited with code 1";
  f.executor->Process(f.clock.Now(), &finished);  // drains the noop's own outcome
  finished.resize(1);
  f.core->OnFinished(finished);
  auto env = transport::DecodeEnvelope(f.core->outbox()[0].data(), f.core->outbox()[0].size());
  REQUIRE(env.ok());  // the dispatcher's limits
  auto result = transport::BodyAs<transport::ResultMsg>(*env);
  REQUIRE(result.ok());
  CHECK(result->output.size() == kWireMaxStringBytes / 4);
  CHECK(result->error == "exited with code 1 (result texts cut to fit the worker link)");
}

TEST_CASE("a task's JSON output travels in its RESULT and survives a worker restart",
          "[worker][output]") {
  WorkerFixture f;
  f.Feed(Frame(transport::MsgType::kHeartbeat, Beat(1)));
  f.Feed(Frame(transport::MsgType::kDispatch, NoopDispatch("r.out", 1, 1)));
  Drain(*f.core);
  std::vector<executor::ExecOutcome> finished(1);
  finished[0].exec_id = "r.out";
  finished[0].attempt = 1;
  finished[0].kind = executor::ExecOutcomeKind::kSuccess;
  finished[0].task_output = R"({"x":1})";
  f.executor->Process(f.clock.Now(), &finished);  // drains the noop's own outcome
  finished.resize(1);
  f.core->OnFinished(finished);
  auto env = transport::DecodeEnvelope(f.core->outbox()[0].data(), f.core->outbox()[0].size());
  REQUIRE(env.ok());
  auto result = transport::BodyAs<transport::ResultMsg>(*env);
  REQUIRE(result.ok());
  CHECK(result->task_output == R"({"x":1})");
  f.core->outbox().clear();

  f.Restart();  // killed before the ACK: the RESULT comes back from the outbox
  f.core->Hello();
  bool resent = false;
  for (const auto& frame : f.core->outbox()) {
    auto e = transport::DecodeEnvelope(frame.data(), frame.size());
    if (!e.ok() || e->type != transport::ToWire(transport::MsgType::kResult)) continue;
    auto r = transport::BodyAs<transport::ResultMsg>(*e);
    REQUIRE(r.ok());
    CHECK(r->task_output == R"({"x":1})");
    resent = true;
  }
  CHECK(resent);
}
