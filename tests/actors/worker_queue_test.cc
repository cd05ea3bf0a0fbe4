// Worker-side queues (issue 18): a worker grants credit for slots +
// prefetch, queues what arrives while its slots are busy, starts the next one
// the moment a slot frees, and cancels a queued one without starting it. The
// worker core runs over a FakeTaskRunner: attempts finish when the test says.

#include <catch2/catch.hpp>

#include "actors/worker/worker_core.h"
#include "tests/actors/cli_harness.h"
#include "tests/executor/fake_task_runner.h"

using namespace apollo11;          // NOLINT: test file
using namespace apollo11::actors;  // NOLINT: test file

namespace {

transport::Dispatch ShellDispatch(const std::string& exec_id) {
  transport::Dispatch d;
  d.exec_id = exec_id;
  d.attempt = 1;
  d.epoch = 1;
  d.task.type = static_cast<uint8_t>(dsl::TaskType::kShell);
  d.task.command = "true";
  return d;
}

struct QueueFixture {
  FakeClock clock;
  testing::FakeTaskRunner runner;
  std::unique_ptr<WorkerCore> core;

  QueueFixture(uint32_t slots, uint32_t prefetch, bool adapt = false) {
    WorkerOptions options;
    options.worker_id = "w1";
    options.slots = slots;
    options.prefetch = prefetch;
    options.adapt_prefetch = adapt;
    core = std::make_unique<WorkerCore>(&runner, &clock, options);
  }
  template <class T>
  void Feed(transport::MsgType type, const T& body) {
    const std::string frame = transport::EncodeToString(type, body);
    core->OnFrame(frame.data(), frame.size());
  }
  void Dispatch(const std::string& exec_id) {
    Feed(transport::MsgType::kDispatch, ShellDispatch(exec_id));
  }
  // Finishes exec_id's attempt 1, which ran for `took`.
  void Finish(const std::string& exec_id, Micros took = 0) {
    REQUIRE(runner.Complete(exec_id, 1));
    auto finished = runner.Take();
    for (auto& o : finished) {
      o.started_at = clock.Now();
      o.finished_at = o.started_at + took;
    }
    core->OnFinished(finished);
  }
  // The decoded frames of `type` the core queued; every frame is cleared.
  template <class T>
  std::vector<T> Take(transport::MsgType type) {
    std::vector<T> bodies;
    for (const std::string& f : core->outbox()) {
      auto env = transport::DecodeEnvelope(f.data(), f.size());
      REQUIRE(env.ok());
      if (env->type != static_cast<uint16_t>(type)) continue;
      auto body = transport::BodyAs<T>(*env);
      REQUIRE(body.ok());
      bodies.push_back(std::move(*body));
    }
    core->outbox().clear();
    return bodies;
  }
  uint32_t CreditSent() {
    uint32_t n = 0;
    for (const auto& c : Take<transport::Credit>(transport::MsgType::kCredit)) n += c.credits;
    return n;
  }
};

}  // namespace

TEST_CASE("a worker grants credit for slots + prefetch and says its prefetch in HELLO",
          "[worker][queue]") {
  QueueFixture f(2, 3);
  f.core->Hello();
  const std::string hello_frame = f.core->outbox().at(0);
  auto env = transport::DecodeEnvelope(hello_frame.data(), hello_frame.size());
  REQUIRE(env.ok());
  auto hello = transport::BodyAs<transport::Hello>(*env);
  REQUIRE(hello.ok());
  CHECK(hello->slots == 2);
  CHECK(hello->prefetch == 3);
  CHECK(f.CreditSent() == 5);
}

TEST_CASE("a worker queues executions beyond its slots and starts the next as a slot frees",
          "[worker][queue]") {
  QueueFixture f(2, 2);
  f.core->Hello();
  f.core->outbox().clear();
  for (const char* id : {"r.a", "r.b", "r.c", "r.d"}) f.Dispatch(id);
  // Two run, two wait; STARTED only for the two that started.
  CHECK(f.runner.running() == 2);
  CHECK(f.core->queued() == 2);
  auto started = f.Take<transport::Started>(transport::MsgType::kStarted);
  REQUIRE(started.size() == 2);
  CHECK(started[0].exec_id == "r.a");
  CHECK(started[1].exec_id == "r.b");

  // Queued ones are held: HELLO lists all four, and a PROBE says so.
  f.core->Hello();
  auto hellos = f.Take<transport::Hello>(transport::MsgType::kHello);
  REQUIRE(hellos.size() == 1);
  CHECK(hellos[0].running.size() == 4);
  f.Feed(transport::MsgType::kProbe, transport::Probe{{{"r.d", 1}}});
  auto replies = f.Take<transport::ProbeReply>(transport::MsgType::kProbeReply);
  REQUIRE(replies.size() == 1);
  CHECK(replies[0].states.at(0).state == 1);
  transport::Heartbeat answer;  // the coordinator answers the HELLO
  answer.epoch = 1;
  f.Feed(transport::MsgType::kHeartbeat, answer);
  f.core->outbox().clear();

  // A slot frees: the oldest queued one starts at once, before anything else
  // is asked of the coordinator; one credit goes back.
  f.clock.Advance(5 * kMicrosPerMilli);
  f.Finish("r.a");
  CHECK(f.runner.IsRunning("r.c", 1));
  CHECK_FALSE(f.runner.IsRunning("r.d", 1));
  CHECK(f.core->queued() == 1);
  const auto& frames = f.core->outbox();
  REQUIRE(frames.size() == 3);  // STARTED r.c, RESULT r.a, CREDIT 1
  auto first = transport::DecodeEnvelope(frames[0].data(), frames[0].size());
  REQUIRE(first.ok());
  CHECK(first->type == static_cast<uint16_t>(transport::MsgType::kStarted));
  auto started_c = transport::BodyAs<transport::Started>(*first);
  REQUIRE(started_c.ok());
  CHECK(started_c->exec_id == "r.c");
  CHECK(started_c->started_at == f.clock.Now());  // its start, not its DISPATCH
  CHECK(f.CreditSent() == 1);

  f.Finish("r.b");
  f.Finish("r.c");
  f.Finish("r.d");
  CHECK(f.runner.launched.size() == 4);
  CHECK(f.core->queued() == 0);
  CHECK(f.core->unacked_results() == 4);
}

TEST_CASE("cancel of a queued execution removes it without starting it", "[worker][queue]") {
  QueueFixture f(1, 2);
  f.core->Hello();
  f.core->outbox().clear();
  f.Dispatch("r.a");
  f.Dispatch("r.b");
  f.Dispatch("r.c");
  REQUIRE(f.core->queued() == 2);
  f.core->outbox().clear();

  f.Feed(transport::MsgType::kCancel, transport::Cancel{"r.b", 1, 1});
  CHECK(f.core->queued() == 1);
  CHECK(f.runner.launched.size() == 1);  // only r.a ever started
  auto results = f.Take<transport::ResultMsg>(transport::MsgType::kResult);
  REQUIRE(results.size() == 1);
  CHECK(results[0].exec_id == "r.b");
  CHECK(results[0].outcome == static_cast<uint8_t>(transport::Outcome::kCanceled));
  CHECK(results[0].error.find("never started") != std::string::npos);

  // The slot frees: r.c starts, r.b never does.
  f.Finish("r.a");
  CHECK(f.runner.IsRunning("r.c", 1));
  f.Finish("r.c");
  REQUIRE(f.runner.launched.size() == 2);
  CHECK(f.runner.launched[1].exec_id == "r.c");
  // A cancel of a running one still goes to the runner.
  f.Dispatch("r.d");
  f.Feed(transport::MsgType::kCancel, transport::Cancel{"r.d", 1, 1});
  auto canceled = f.runner.Take();
  REQUIRE(canceled.size() == 1);
  CHECK(canceled[0].kind == executor::ExecOutcomeKind::kCanceled);
}

TEST_CASE("a draining worker grants nothing more and still runs what it queued",
          "[worker][queue]") {
  QueueFixture f(1, 1);
  f.core->Hello();
  f.core->outbox().clear();
  f.Dispatch("r.a");
  f.Dispatch("r.b");
  f.core->StartDrain();
  auto hellos = f.Take<transport::Hello>(transport::MsgType::kHello);
  REQUIRE(hellos.size() == 1);
  CHECK(hellos[0].slots == 0);
  CHECK(hellos[0].prefetch == 0);
  f.Finish("r.a");
  CHECK(f.runner.IsRunning("r.b", 1));
  f.Finish("r.b");
  for (const char* id : {"r.a", "r.b"}) f.Feed(transport::MsgType::kAck, transport::Ack{id, 1});
  CHECK(f.core->Drained());
}

TEST_CASE("an adaptive worker queues deeper while its tasks are short, and less once they are long",
          "[worker][queue]") {
  // 2 slots: the depth moves between the floor (4) and the ceiling.
  const uint32_t ceiling = PrefetchCeiling(2), floor = PrefetchFloor(2);
  REQUIRE(floor == 4);
  QueueFixture f(2, ceiling, /*adapt=*/true);
  f.core->Hello();
  auto hellos = f.Take<transport::Hello>(transport::MsgType::kHello);
  REQUIRE(hellos.size() == 1);
  CHECK(hellos[0].prefetch == ceiling);  // the most it may queue: the coordinator's cap
  f.core->Hello();
  CHECK(f.CreditSent() == 2 + floor);  // but credit for the floor until it knows its tasks
  f.Dispatch("r.0");
  f.Finish("r.0", 200);  // 0.2 ms: 2 x 50 ms / 0.2 ms is over the ceiling
  CHECK(f.CreditSent() == 1 + (ceiling - floor));
  // The coordinator now holds 2 + ceiling credits and uses them. Long tasks
  // (1 s) bring the depth back to the floor: the ceiling - floor credits it
  // no longer wants are withheld from the next executions that finish.
  const int held = static_cast<int>(2 + ceiling);
  for (int i = 1; i <= held; ++i) f.Dispatch("r." + std::to_string(i));
  const int debt = static_cast<int>(ceiling - floor);
  for (int i = 1; i <= debt; ++i) f.Finish("r." + std::to_string(i), kMicrosPerSecond);
  CHECK(f.CreditSent() == 0);
  // The debt is paid: each of the last 2 + floor returns its credit, and
  // the coordinator ends with credit for slots + floor again.
  uint32_t credit = 0;
  for (int i = debt + 1; i <= held; ++i) {
    f.Finish("r." + std::to_string(i), kMicrosPerSecond);
    credit += f.CreditSent();
  }
  CHECK(credit == 2 + floor);
}
