// The worker's logic with a real Executor (noop tasks finish without a
// process) and a real LMDB outbox: epoch fencing, DISPATCH deduplication, and
// results that survive a restart of the worker until they are ACKed.

#include "actors/worker_core.h"

#include <catch2/catch.hpp>

#include "tests/actors/cli_harness.h"

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
  void Feed(const std::string& frame) { core->OnFrame(frame.data(), frame.size()); }
  void Finish() {
    std::vector<executor::ExecOutcome> finished;
    executor->Process(clock.Now(), &finished);
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
