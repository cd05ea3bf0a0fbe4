// The coordinator's cores as alert producers, stepped message by message with
// a fake clock and a real LMDB journal: what each event raises, and that a
// scheduler alert leaves only once the transition behind it is committed.

#include <catch2/catch.hpp>

#include "actors/dispatcher/dispatcher_core.h"
#include "actors/scheduler/scheduler_core.h"
#include "dsl/pipeline_json.h"
#include "storage/journal.h"
#include "tests/actors/cli_harness.h"

using namespace apollo11;          // NOLINT: test file
using namespace apollo11::actors;  // NOLINT: test file
using alerts::AlertType;

namespace {

struct RecordingSink final : alerts::Sink {
  std::vector<alerts::AlertEvent> events;
  void Emit(alerts::AlertEvent event) override { events.push_back(std::move(event)); }
  std::vector<alerts::AlertEvent> OfType(AlertType type) const {
    std::vector<alerts::AlertEvent> out;
    for (const auto& e : events) {
      if (e.type == type) out.push_back(e);
    }
    return out;
  }
};

dsl::TaskSpec Shell(const std::string& id, int max_retries = 0) {
  dsl::TaskSpec t;
  t.id = id;
  t.type = dsl::TaskType::kShell;
  t.command = "false";
  if (max_retries > 0) {
    t.retry = dsl::RetryPolicy{};
    t.retry->max_retries = max_retries;
    t.retry->delay = Millis(100);
  }
  return t;
}

SubmitRun Submission(const std::string& name, const std::vector<dsl::TaskSpec>& tasks) {
  dsl::PipelineSpec spec;
  spec.version = "1.0";
  spec.name = name;
  spec.tasks = tasks;
  SubmitRun s;
  s.pipeline_json = dsl::CanonicalJson(spec);
  s.pipeline_hash = dsl::ContentHash(spec);
  return s;
}

struct Fixture {
  testing::ScratchDir dir;
  FakeClock clock;
  RecordingSink sink;
  std::unique_ptr<storage::Journal> journal;
  std::unique_ptr<SchedulerCore> core;
  SchedulerOutbox out;

  explicit Fixture(size_t max_backlog = 1000) {
    auto j = storage::Journal::Open(dir.path() + "/journal", {});
    REQUIRE(j.ok());
    journal = std::move(*j);
    SchedulerOptions options;
    options.max_backlog = max_backlog;
    options.alerts = &sink;
    core = std::make_unique<SchedulerCore>(journal.get(), &clock, options);
  }
  void Flush() {
    out.Clear();
    REQUIRE(core->Flush(&out).ok());
  }
  void Fail(const std::string& exec_id, uint32_t attempt, transport::Outcome outcome,
            const std::string& stderr_tail) {
    core->OnPlaced({{{"w1", exec_id, attempt}}, clock.Now()});
    ResultBatch b;
    ResultFrom r;
    r.worker_id = "w1";
    r.result.exec_id = exec_id;
    r.result.attempt = attempt;
    r.result.outcome = static_cast<uint8_t>(outcome);
    r.result.exit_code = 3;
    r.result.error = "exit code 3";
    r.result.stderr_tail = stderr_tail;
    b.items.push_back(r);
    core->OnResults(b);
  }
};

}  // namespace

TEST_CASE(
    "a task that uses up its retries raises retries_exhausted and run_failed after the "
    "commit",
    "[alerts][scheduler]") {
  Fixture f;
  auto run_id = f.core->Submit(Submission("order.checkout", {Shell("charge", 1)}));
  REQUIRE(run_id.ok());
  f.Flush();
  const std::string id = *run_id + ".charge";
  f.Fail(id, 1, transport::Outcome::kFailed, "first try\n");
  f.Flush();
  CHECK(f.sink.events.empty());  // retrying is not an alert
  f.clock.Advance(200 * kMicrosPerMilli);
  f.core->OnTimers();
  f.Flush();
  f.Fail(id, 2, transport::Outcome::kFailed, "card declined\n");
  CHECK(f.sink.events.empty());  // staged, not committed yet
  f.Flush();
  REQUIRE(f.sink.events.size() == 2);
  const auto& a = f.sink.events[0];
  CHECK(a.type == AlertType::kRetriesExhausted);
  CHECK(a.pipeline == "order.checkout");
  CHECK(a.run_id == *run_id);
  CHECK(a.task_id == "charge");
  CHECK(a.exec_id == id);
  CHECK(a.attempt == 2);
  CHECK(a.worker_id == "w1");
  CHECK(a.stderr_tail == "card declined\n");
  CHECK_FALSE(a.reason.empty());
  CHECK(f.sink.events[1].type == AlertType::kRunFailed);
  CHECK(f.sink.events[1].run_id == *run_id);
  CHECK(f.sink.events[1].task_id.empty());
}

TEST_CASE("a timeout raises timeout and a canceled run raises run_canceled",
          "[alerts][scheduler]") {
  Fixture f;
  auto timed = f.core->Submit(Submission("billing.nightly", {Shell("export")}));
  auto canceled = f.core->Submit(Submission("billing.sleepy", {Shell("nap")}));
  REQUIRE(timed.ok());
  REQUIRE(canceled.ok());
  f.Flush();
  f.Fail(*timed + ".export", 1, transport::Outcome::kTimeout, "");
  REQUIRE(f.core->Cancel(*canceled, "canceled by the user", "user").ok());
  f.Flush();
  REQUIRE(f.sink.OfType(AlertType::kTimeout).size() == 1);
  CHECK(f.sink.OfType(AlertType::kTimeout)[0].task_id == "export");
  CHECK(f.sink.OfType(AlertType::kRunFailed).size() == 1);
  REQUIRE(f.sink.OfType(AlertType::kRunCanceled).size() == 1);
  CHECK(f.sink.OfType(AlertType::kRunCanceled)[0].run_id == *canceled);
  CHECK(f.sink.OfType(AlertType::kRunCanceled)[0].reason == "canceled by the user");
  CHECK(f.sink.OfType(AlertType::kRetriesExhausted).empty());  // canceled tasks are not failures
}

TEST_CASE("reaching the backlog cap raises one backlog_at_cap", "[alerts][scheduler]") {
  Fixture f(/*max_backlog=*/3);
  std::vector<dsl::TaskSpec> tasks;
  for (int i = 0; i < 10; ++i) tasks.push_back(Shell("t" + std::to_string(i)));
  REQUIRE(f.core->Submit(Submission("test.wide", tasks)).ok());
  f.Flush();
  f.Flush();
  f.Flush();
  REQUIRE(f.sink.OfType(AlertType::kBacklogAtCap).size() == 1);
  CHECK(f.sink.OfType(AlertType::kBacklogAtCap)[0].reason.find("cap 3") != std::string::npos);
  CHECK(f.sink.OfType(AlertType::kBacklogAtCap)[0].pipeline.empty());
}

TEST_CASE("a lost worker raises worker_lost naming what it held, one that says BYE does not",
          "[alerts][dispatcher]") {
  FakeClock clock;
  RecordingSink sink;
  DispatcherOptions options;
  options.alerts = &sink;
  DispatcherCore core(&clock, options);
  DispatcherOutput out;
  auto hello = [&](const std::string& id) {
    transport::Hello h;
    h.group = "default";
    h.slots = 1;
    std::string frame = transport::EncodeToString(transport::MsgType::kHello, h);
    core.OnWorkerFrame(id, frame.data(), frame.size(), &out);
    std::string credit =
        transport::EncodeToString(transport::MsgType::kCredit, transport::Credit{1});
    core.OnWorkerFrame(id, credit.data(), credit.size(), &out);
  };
  hello("w1");
  Enqueue e;
  QueuedExec q;
  q.group = "default";
  q.dispatch.exec_id = "r1.a";
  q.dispatch.attempt = 1;
  e.execs.push_back(q);
  core.OnEnqueue(std::move(e));
  core.Place(&out);
  core.OnWorkerLost({"w1", "worker w1 lost: no heartbeat for 300ms"}, &out);
  REQUIRE(sink.events.size() == 1);
  CHECK(sink.events[0].type == AlertType::kWorkerLost);
  CHECK(sink.events[0].worker_id == "w1");
  CHECK(sink.events[0].exec_id == "r1.a");
  CHECK(sink.events[0].run_id == "r1");
  CHECK(sink.events[0].task_id == "a");
  CHECK(sink.events[0].reason ==
        "worker w1 lost: no heartbeat for 300ms; 1 executions requeued: r1.a");

  core.OnWorkerLost({"w1", "again"}, &out);  // already gone: nothing more
  hello("w2");
  core.OnSendFailed("w2", &out);
  REQUIRE(sink.events.size() == 2);
  CHECK(sink.events[1].reason.find("send failed") != std::string::npos);
  hello("w3");
  std::string bye = transport::EncodeToString(transport::MsgType::kBye, transport::Bye{});
  core.OnWorkerFrame("w3", bye.data(), bye.size(), &out);
  CHECK(sink.events.size() == 2);
}
