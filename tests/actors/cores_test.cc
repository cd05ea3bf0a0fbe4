// The coordinator's logic classes, stepped message by message with a fake
// clock and a real LMDB journal: no threads, no sockets, no sleeps.

#include <zlib.h>

#include <catch2/catch.hpp>
#include <map>
#include <set>

#include "actors/actor_loop.h"
#include "actors/dispatcher/dispatcher_core.h"
#include "actors/dispatcher/dispatcher_turn.h"
#include "actors/dispatcher/watchers.h"
#include "actors/reconciler/reconciler_core.h"
#include "actors/scheduler/scheduler_core.h"
#include "actors/scheduler/turn_commit.h"
#include "dsl/pipeline_json.h"
#include "storage/journal.h"
#include "storage/snapshot_pack.h"
#include "tests/actors/cli_harness.h"
#include "tests/actors/log_capture.h"

using namespace apollo11;          // NOLINT: test file
using namespace apollo11::actors;  // NOLINT: test file

namespace {

dsl::TaskSpec Task(const std::string& id, std::vector<std::string> deps = {},
                   const std::string& group = "default", int priority = 0) {
  dsl::TaskSpec t;
  t.id = id;
  t.type = dsl::TaskType::kShell;
  t.command = "true";
  t.group = group;
  t.priority = priority;
  for (auto& d : deps) t.depends_on.push_back({d, dsl::DependencyCondition::kSuccess, {}});
  return t;
}

SubmitRun Submission(const std::vector<dsl::TaskSpec>& tasks) {
  dsl::PipelineSpec spec;
  spec.version = "1.0";
  spec.name = "test.cores";
  spec.tasks = tasks;
  SubmitRun s;
  s.pipeline_json = dsl::CanonicalJson(spec);
  s.pipeline_hash = dsl::ContentHash(spec);
  return s;
}

// A HELLO; the worker is known by the identity it is sent from, not by the frame.
std::string HelloFrame(const std::string& /*id*/, uint32_t slots,
                       const std::string& group = "default",
                       std::vector<transport::ExecRef> running = {}) {
  transport::Hello h;
  h.group = group;
  h.slots = slots;
  h.running = std::move(running);
  return transport::EncodeToString(transport::MsgType::kHello, h);
}

std::string CreditFrame(uint32_t n) {
  return transport::EncodeToString(transport::MsgType::kCredit, transport::Credit{n});
}

QueuedExec Exec(const std::string& id, const std::string& group = "default", int priority = 0) {
  QueuedExec q;
  q.group = group;
  q.priority = priority;
  q.dispatch.exec_id = id;
  q.dispatch.attempt = 1;
  return q;
}

// The worker's STARTED of each execution (its timeout and slow check count
// from it, not from the placement).
StartedBatch StartedOf(const std::vector<transport::ExecRef>& refs, Micros at,
                       const std::string& worker = "w1") {
  StartedBatch b;
  for (const transport::ExecRef& ref : refs) {
    b.items.push_back({worker, transport::Started{ref.exec_id, ref.attempt, at}});
  }
  return b;
}

struct SchedulerFixture {
  testing::ScratchDir dir;
  FakeClock clock;
  std::unique_ptr<storage::Journal> journal;
  std::unique_ptr<SchedulerCore> core;
  SchedulerOutbox out;

  explicit SchedulerFixture(SchedulerOptions options = {}) {
    auto j = storage::Journal::Open(dir.path() + "/journal", {});
    REQUIRE(j.ok());
    journal = std::move(*j);
    core = std::make_unique<SchedulerCore>(journal.get(), &clock, options);
  }
  void Flush() {
    out.Clear();
    REQUIRE(core->Flush(&out).ok());
  }
};

ResultBatch ResultOf(const std::string& exec_id, uint32_t attempt, transport::Outcome outcome,
                     int exit_code = 0, const std::string& worker = "w1") {
  ResultBatch b;
  ResultFrom r;
  r.worker_id = worker;
  r.result.exec_id = exec_id;
  r.result.attempt = attempt;
  r.result.outcome = static_cast<uint8_t>(outcome);
  r.result.exit_code = exit_code;
  b.items.push_back(r);
  return b;
}

}  // namespace

TEST_CASE("the dispatcher sends only against credit", "[dispatcher]") {
  FakeClock clock;
  DispatcherCore core(&clock, {});
  DispatcherOutput out;
  std::string hello = HelloFrame("w1", 2);
  core.OnWorkerFrame("w1", hello.data(), hello.size(), &out);
  Enqueue e;
  for (int i = 0; i < 5; ++i) e.execs.push_back(Exec("r.t" + std::to_string(i)));
  core.OnEnqueue(std::move(e));
  out.Clear();
  core.Place(&out);
  CHECK(out.placed.placed.empty());  // HELLO grants nothing by itself
  std::string credit = CreditFrame(2);
  core.OnWorkerFrame("w1", credit.data(), credit.size(), &out);
  core.Place(&out);
  CHECK(out.placed.placed.size() == 2);
  CHECK(core.queued() == 3);
  // More credit than free slots is clamped: nothing beyond the slots.
  std::string flood = CreditFrame(100);
  core.OnWorkerFrame("w1", flood.data(), flood.size(), &out);
  out.Clear();
  core.Place(&out);
  CHECK(out.placed.placed.empty());
}

TEST_CASE("the dispatcher honours groups and priorities", "[dispatcher]") {
  FakeClock clock;
  DispatcherCore core(&clock, {});
  DispatcherOutput out;
  for (auto [id, group] : {std::pair{"etl1", "etl"}, std::pair{"ml1", "ml"}}) {
    std::string h = HelloFrame(id, 1, group);
    core.OnWorkerFrame(id, h.data(), h.size(), &out);
    std::string c = CreditFrame(1);
    core.OnWorkerFrame(id, c.data(), c.size(), &out);
  }
  Enqueue e;
  e.execs.push_back(Exec("r.low", "etl", 0));
  e.execs.push_back(Exec("r.high", "etl", 5));
  e.execs.push_back(Exec("r.gpu", "gpu", 0));
  core.OnEnqueue(std::move(e));
  out.Clear();
  core.Place(&out);
  REQUIRE(out.placed.placed.size() == 1);
  CHECK(out.placed.placed[0].exec_id == "r.high");
  CHECK(out.placed.placed[0].worker_id == "etl1");
  CHECK(core.queued() == 2);  // r.low waits for etl credit, r.gpu for a gpu worker
}

TEST_CASE("a lost worker's executions go back to the scheduler", "[dispatcher]") {
  FakeClock clock;
  DispatcherCore core(&clock, {});
  DispatcherOutput out;
  std::string h = HelloFrame("w1", 2), c = CreditFrame(2);
  core.OnWorkerFrame("w1", h.data(), h.size(), &out);
  core.OnWorkerFrame("w1", c.data(), c.size(), &out);
  Enqueue e;
  e.execs.push_back(Exec("r.a"));
  core.OnEnqueue(std::move(e));
  core.Place(&out);
  out.Clear();
  core.OnWorkerLost({"w1", "worker w1 lost: no heartbeat for 300ms"}, &out);
  REQUIRE(out.gone.size() == 1);
  CHECK(out.gone[0].execs.size() == 1);
  CHECK(out.gone[0].execs[0].exec_id == "r.a");
  CHECK(core.workers() == 0);
}

TEST_CASE("garbage from a peer is counted and dropped", "[dispatcher]") {
  FakeClock clock;
  DispatcherCore core(&clock, {});
  DispatcherOutput out;
  const char junk[] = "\xdd\xff\xff\xff\xff garbage";
  core.OnWorkerFrame("evil", junk, sizeof(junk), &out);
  CHECK(core.dropped_frames() == 1);
  CHECK(core.workers() == 0);
}

TEST_CASE("the reconciler declares silent workers lost and expires deadlines", "[reconciler]") {
  ReconcilerOptions options;
  options.heartbeat = Millis(100);
  options.liveness = 3;
  ReconcilerCore core(options);
  const Micros t0 = 1'000'000'000;
  core.OnWorkersSeen({{{"w1", t0}, {"w2", t0}}});
  CHECK(core.LostWorkers(t0 + 250'000).empty());
  core.OnWorkersSeen({{{"w1", t0 + 250'000}, {"w2", t0}}});
  auto lost = core.LostWorkers(t0 + 301'000);
  REQUIRE(lost.size() == 1);
  CHECK(lost[0].worker_id == "w2");
  CHECK(lost[0].reason.find("no heartbeat for 301ms") != std::string::npos);

  core.OnWatch({{{"r.a", 1, t0 + 1000, 1}, {"r.b", 1, t0 + 1000, 1}}});
  core.OnUnwatch({{{"r.a", 1}}});
  auto expired = core.Expired(t0 + 2000);
  REQUIRE(expired.exceeded.size() == 1);
  CHECK(expired.exceeded[0].exec_id == "r.b");
}

TEST_CASE("one worker leaving leaves the reconciler watching every other worker", "[reconciler]") {
  // Regression: the dispatcher told the reconciler about a worker that left
  // with a one-entry list, read as a full snapshot: every other worker was
  // forgotten, and one of them going silent afterwards was never declared
  // lost.
  ReconcilerOptions options;
  options.heartbeat = Millis(100);
  options.liveness = 3;
  ReconcilerCore core(options);
  const Micros t0 = 1'000'000'000;
  core.OnWorkersSeen({{{"w1", t0}, {"w2", t0 + 200'000}, {"w3", t0}}});
  core.OnWorkerLeft({"w1"});
  CHECK(core.tracked_workers() == 2);
  auto lost = core.LostWorkers(t0 + 301'000);
  REQUIRE(lost.size() == 1);
  CHECK(lost[0].worker_id == "w3");
  lost = core.LostWorkers(t0 + 501'000);
  REQUIRE(lost.size() == 1);
  CHECK(lost[0].worker_id == "w2");
}

TEST_CASE("a full worker snapshot forgets the workers it does not list", "[reconciler]") {
  ReconcilerOptions options;
  options.heartbeat = Millis(100);
  options.liveness = 3;
  ReconcilerCore core(options);
  const Micros t0 = 1'000'000'000;
  core.OnWorkersSeen({{{"w1", t0}, {"w2", t0}}});
  core.OnWorkersSeen({{{"w2", t0 + 100'000}}});
  CHECK(core.tracked_workers() == 1);
  CHECK(core.LostWorkers(t0 + 301'000).empty());
}

TEST_CASE("nothing is released before its transitions are committed", "[scheduler]") {
  SchedulerFixture f;
  auto run_id = f.core->Submit(Submission({Task("a"), Task("b", {"a"})}));
  REQUIRE(run_id.ok());
  // Before Flush nothing is journaled and nothing is ready to send.
  auto before = f.journal->HistoryOfRun(*run_id);
  REQUIRE(before.ok());
  CHECK(before->empty());
  f.Flush();
  auto after = f.journal->HistoryOfRun(*run_id);
  REQUIRE(after.ok());
  REQUIRE(after->size() == 1);
  CHECK((*after)[0].to == TaskState::kReady);
  REQUIRE(f.out.enqueue.execs.size() == 1);
  CHECK(f.out.enqueue.execs[0].dispatch.exec_id == *run_id + ".a");
  CHECK(f.out.enqueue.execs[0].dispatch.task.env.at("APOLLO11_IDEMPOTENCY_KEY") == *run_id + ".a");
  // The attempt's W3C traceparent, in the run's trace.
  const auto& env = f.out.enqueue.execs[0].dispatch.task.env;
  CHECK(env.at("TRACEPARENT") ==
        TraceParent(env.at("APOLLO11_TRACE_ID"), *run_id + ".a", /*attempt=*/1));
}

TEST_CASE("a task's own env TRACEPARENT is kept, not replaced by the attempt's", "[scheduler]") {
  SchedulerFixture f;
  dsl::TaskSpec a = Task("a");
  const std::string outside = "00-0123456789abcdef0123456789abcdef-0123456789abcdef-01";
  a.env = std::map<std::string, std::string>{{"TRACEPARENT", outside}};
  REQUIRE(f.core->Submit(Submission({a})).ok());
  f.Flush();
  REQUIRE(f.out.enqueue.execs.size() == 1);
  CHECK(f.out.enqueue.execs[0].dispatch.task.env.at("TRACEPARENT") == outside);
}

TEST_CASE("a submission whose params break the limits is refused naming the limit",
          "[scheduler][limits]") {
  SchedulerFixture f;
  SubmitRun s = Submission({Task("a")});
  s.params["huge"] = std::string((1 << 20) + 1, 'p');  // a trigger's value, past validation
  auto refused = f.core->Submit(s);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == StatusCode::kInvalidInput);
  CHECK(refused.status().message().find("param 'huge' is 1048577 bytes, above the limit") !=
        std::string::npos);
  f.Flush();
  CHECK(f.out.enqueue.execs.empty());
}

TEST_CASE("a result is acknowledged only with its transition, and stale ones change nothing",
          "[scheduler]") {
  SchedulerFixture f;
  auto run_id = f.core->Submit(Submission({Task("a"), Task("b", {"a"})}));
  REQUIRE(run_id.ok());
  f.Flush();
  f.core->OnPlaced({{{"w1", *run_id + ".a", 1}}, f.clock.Now()});
  f.core->OnResults(ResultOf(*run_id + ".a", 1, transport::Outcome::kSuccess));
  f.Flush();
  REQUIRE(f.out.acks.acks.size() == 1);
  CHECK(f.out.enqueue.execs.size() == 1);  // b promoted in the same turn
  auto exec = f.journal->GetExecution(*run_id + ".a");
  REQUIRE(exec.ok());
  CHECK((*exec)->state == TaskState::kSuccess);
  const uint64_t seq = f.journal->last_seq();
  // A duplicate RESULT: acknowledged again, nothing journaled.
  f.core->OnResults(ResultOf(*run_id + ".a", 1, transport::Outcome::kFailed, 1));
  f.Flush();
  CHECK(f.out.acks.acks.size() == 1);
  CHECK(f.journal->last_seq() == seq);
  CHECK(f.core->stale_results() == 1);
}

TEST_CASE("a result from a worker that does not hold the attempt changes nothing",
          "[scheduler][security]") {
  SchedulerFixture f;
  auto run_id = f.core->Submit(Submission({Task("a"), Task("b", {"a"})}));
  REQUIRE(run_id.ok());
  f.Flush();
  f.core->OnPlaced({{{"w1", *run_id + ".a", 1}}, f.clock.Now()});
  f.Flush();
  const uint64_t seq = f.journal->last_seq();
  f.core->OnResults(ResultOf(*run_id + ".a", 1, transport::Outcome::kSuccess, 0, "w2"));
  f.Flush();
  CHECK(f.journal->last_seq() == seq);
  CHECK(f.core->stale_results() == 1);
  auto exec = f.journal->GetExecution(*run_id + ".a");
  REQUIRE(exec.ok());
  CHECK((*exec)->state == TaskState::kRunning);
  // The holder's own result still counts.
  f.core->OnResults(ResultOf(*run_id + ".a", 1, transport::Outcome::kSuccess));
  f.Flush();
  exec = f.journal->GetExecution(*run_id + ".a");
  REQUIRE(exec.ok());
  CHECK((*exec)->state == TaskState::kSuccess);
}

TEST_CASE("a placement made before the commit joins it: result, READY and RUNNING in one commit",
          "[scheduler]") {
  SchedulerFixture f;
  auto run_id = f.core->Submit(Submission({Task("a"), Task("b", {"a"})}));
  REQUIRE(run_id.ok());
  f.Flush();
  f.core->OnPlaced({{{"w1", *run_id + ".a", 1}}, f.clock.Now()});
  f.Flush();
  const uint64_t seq = f.journal->last_seq();

  // a's result promotes b; the turn hands b over before committing.
  f.core->OnResults(ResultOf(*run_id + ".a", 1, transport::Outcome::kSuccess));
  Enqueue early;
  f.core->TakeEnqueue(&early);
  REQUIRE(early.execs.size() == 1);
  CHECK(early.execs[0].dispatch.exec_id == *run_id + ".b");
  // Nothing is journaled yet, and nothing may leave yet.
  CHECK(f.journal->last_seq() == seq);
  // The dispatcher answers at once; then the turn commits once.
  f.core->OnPlaced({{{"w1", *run_id + ".b", 1}}, f.clock.Now()});
  f.Flush();
  CHECK(f.out.enqueue.execs.empty());  // already handed over
  REQUIRE(f.out.release.execs.size() == 1);
  CHECK(f.out.release.execs[0].exec_id == *run_id + ".b");
  REQUIRE(f.out.acks.acks.size() == 1);
  auto history = f.journal->HistoryOfRun(*run_id);
  REQUIRE(history.ok());
  std::vector<std::string> after;
  for (const storage::TransitionRecord& r : *history) {
    if (r.seq > seq) after.push_back(r.task_id + ":" + ToString(r.from) + ">" + ToString(r.to));
  }
  CHECK(after ==
        std::vector<std::string>{"a:RUNNING>SUCCESS", "b:PENDING>READY", "b:READY>RUNNING"});
}

TEST_CASE("a scheduler turn answers a submission with its commit, placed work released with it",
          "[scheduler][turn]") {
  SchedulerFixture f;
  JournalHealth health(f.dir.path() + "/journal");
  ClientSessions sessions;
  TurnCommit turn(f.core.get(), &health, &sessions, nullptr);
  InternalFrames frames;
  auto run_id = f.core->Submit(Submission({Task("a")}));
  REQUIRE(run_id.ok());
  sessions.Accepted("client", *run_id);

  // Before the commit: the READY execution goes to the dispatcher with a
  // ticket, and nothing else leaves.
  REQUIRE(turn.BeginEarlyPlacement(&frames));
  REQUIRE(frames.to_dispatcher.size() == 1);
  auto env = transport::DecodeEnvelope(frames.to_dispatcher[0].data(),
                                       frames.to_dispatcher[0].size(), InternalLimits());
  REQUIRE(env.ok());
  REQUIRE(env->type == static_cast<uint16_t>(InternalType::kEnqueue));
  auto early = transport::BodyAs<Enqueue>(*env);
  REQUIRE(early.ok());
  CHECK(early->ticket == 1);
  REQUIRE(early->execs.size() == 1);
  CHECK(turn.AwaitingPlacement());
  CHECK(sessions.TakeFrames().empty());
  auto before = f.journal->GetRun(*run_id);
  REQUIRE(before.ok());
  CHECK_FALSE(before->has_value());
  frames.Clear();

  turn.OnPlaced({{{"w1", *run_id + ".a", 1}}, f.clock.Now(), 1});
  CHECK_FALSE(turn.AwaitingPlacement());
  REQUIRE(turn.Commit(f.clock.Now(), f.clock.Steady(), &frames));
  auto after = f.journal->GetRun(*run_id);
  REQUIRE(after.ok());
  CHECK(after->has_value());
  auto replies = sessions.TakeFrames();  // the run id, then the run's first progress
  REQUIRE_FALSE(replies.empty());
  CHECK(replies[0].identity == "client");
  auto reply_env =
      transport::DecodeEnvelope(replies[0].frame.data(), replies[0].frame.size(), ClientLimits());
  REQUIRE(reply_env.ok());
  CHECK(reply_env->type == static_cast<uint16_t>(ClientType::kSubmitReply));
  bool released = false;
  for (const std::string& frame : frames.to_dispatcher) {
    auto e = transport::DecodeEnvelope(frame.data(), frame.size(), InternalLimits());
    REQUIRE(e.ok());
    if (e->type != static_cast<uint16_t>(InternalType::kReleaseDispatch)) continue;
    auto release = transport::BodyAs<ReleaseDispatch>(*e);
    REQUIRE(release.ok());
    released = release->execs.size() == 1 && release->execs[0].exec_id == *run_id + ".a";
  }
  CHECK(released);
}

TEST_CASE("promotion pauses at the backlog cap and resumes below 80%", "[scheduler]") {
  SchedulerOptions options;
  options.max_backlog = 10;
  SchedulerFixture f(options);
  std::vector<dsl::TaskSpec> tasks;
  for (int i = 0; i < 30; ++i) tasks.push_back(Task("t" + std::to_string(i)));
  auto run_id = f.core->Submit(Submission(tasks));
  REQUIRE(run_id.ok());
  f.Flush();
  CHECK(f.out.enqueue.execs.size() == 10);
  CHECK(f.core->in_flight() == 10);
  f.Flush();
  CHECK(f.core->backlog_paused());
  // One finishes: 9 in flight, still above 8 (80%): nothing promoted.
  auto finish = [&](int i) {
    std::string id = *run_id + ".t" + std::to_string(i);
    f.core->OnPlaced({{{"w1", id, 1}}, f.clock.Now()});
    f.core->OnResults(ResultOf(id, 1, transport::Outcome::kSuccess));
  };
  finish(0);
  f.Flush();
  CHECK(f.out.enqueue.execs.empty());
  finish(1);
  finish(2);
  f.Flush();  // 7 in flight: below 80%, promotion resumes up to the cap
  CHECK_FALSE(f.core->backlog_paused());
  CHECK(f.out.enqueue.execs.size() == 3);
  CHECK(f.core->backlog_events() == 1);
}

TEST_CASE("backlog pauses are logged once a minute and counted in between", "[scheduler]") {
  testing::LogCapture log;
  SchedulerOptions options;
  options.max_backlog = 4;
  SchedulerFixture f(options);
  std::vector<dsl::TaskSpec> tasks;
  for (int i = 0; i < 40; ++i) tasks.push_back(Task("t" + std::to_string(i)));
  auto run_id = f.core->Submit(Submission(tasks));
  REQUIRE(run_id.ok());
  int next = 0;
  // Fills the backlog (a pause), then finishes two so it falls below 80%
  // (a resume): one pause-and-resume cycle.
  auto cycle = [&] {
    f.Flush();
    f.Flush();
    REQUIRE(f.core->backlog_paused());
    for (int k = 0; k < 2; ++k) {
      std::string id = *run_id + ".t" + std::to_string(next++);
      f.core->OnPlaced({{{"w1", id, 1}}, f.clock.Now()});
      f.core->OnResults(ResultOf(id, 1, transport::Outcome::kSuccess));
    }
    f.Flush();
  };
  for (int i = 0; i < 4; ++i) cycle();
  CHECK(f.core->backlog_events() == 4);
  CHECK(log.Count("promotion paused") == 1);
  CHECK(log.Count("promotion resumed") == 1);
  f.clock.Advance(61 * kMicrosPerSecond);
  cycle();
  CHECK(f.core->backlog_events() == 5);
  CHECK(log.Count("promotion paused") == 2);
  CHECK(log.Count("promotion paused (and 3 times since the last one logged)") == 1);
  CHECK(log.Count("promotion resumed") == 2);
}

TEST_CASE("a lost worker's running execution is requeued with a new attempt", "[scheduler]") {
  SchedulerFixture f;
  auto run_id = f.core->Submit(Submission({Task("a")}));
  REQUIRE(run_id.ok());
  f.Flush();
  const std::string id = *run_id + ".a";
  f.core->OnPlaced({{{"w1", id, 1}}, f.clock.Now()});
  f.Flush();
  f.core->OnWorkerGone({"w1", "worker w1 lost: no heartbeat for 300ms", {{id, 1}}});
  f.Flush();
  REQUIRE(f.out.enqueue.execs.size() == 1);
  CHECK(f.out.enqueue.execs[0].dispatch.attempt == 2);
  auto history = f.journal->HistoryOfExecution(id);
  REQUIRE(history.ok());
  CHECK(history->back().from == TaskState::kRunning);
  CHECK(history->back().to == TaskState::kReady);
  CHECK(history->back().reason.find("worker w1 lost") != std::string::npos);
  // The old attempt's late result is stale.
  f.core->OnResults(ResultOf(id, 1, transport::Outcome::kSuccess));
  f.Flush();
  CHECK(f.core->stale_results() == 1);
}

namespace {

// Submits a one-task run whose task "slow" has `timeout` and places it on
// w1 (queued there: no STARTED yet); returns its exec id.
std::string PlaceTaskWithTimeout(SchedulerFixture& f, Millis timeout) {
  dsl::TaskSpec slow = Task("slow");
  slow.timeout = timeout;
  auto run_id = f.core->Submit(Submission({slow}));
  REQUIRE(run_id.ok());
  f.Flush();
  const std::string id = *run_id + ".slow";
  f.core->OnPlaced({{{"w1", id, 1}}, f.clock.Now()});
  f.Flush();
  return id;
}

}  // namespace

TEST_CASE("a coordinator-side deadline times out a silent execution and kills it", "[scheduler]") {
  SchedulerFixture f;
  const std::string id = PlaceTaskWithTimeout(f, Millis(1000));
  CHECK(f.out.watch.deadlines.empty());  // queued on the worker: no clock yet
  f.core->OnStarted(StartedOf({{id, 1}}, f.clock.Now()));
  f.Flush();
  REQUIRE(f.out.watch.deadlines.size() == 1);
  f.core->OnDeadlineExceeded({{f.out.watch.deadlines[0]}});
  f.Flush();
  CHECK(f.out.cancels.execs.size() == 1);
  REQUIRE(f.out.finished.size() == 1);
  CHECK(f.out.finished[0].status == static_cast<uint8_t>(RunStatus::kFailed));
  auto exec = f.journal->GetExecution(id);
  CHECK((*exec)->state == TaskState::kTimeout);
}

TEST_CASE(
    "a STARTED stamped before a wall-clock step arms its deadline from its arrival, not its stamp",
    "[scheduler][clock]") {
  // Regression: the deadline was mapped from the worker's wall stamp, so a
  // STARTED that arrived just after the coordinator's clock stepped 60 s
  // forward had a 20 s deadline already past, and the task timed out at once.
  SchedulerFixture f;
  const std::string id = PlaceTaskWithTimeout(f, Millis(20'000));
  const Micros stamped = f.clock.Now();
  f.clock.StepWall(60 * kMicrosPerSecond);
  const Micros arrived_steady = f.clock.Steady();
  f.core->OnStarted(StartedOf({{id, 1}}, stamped));
  f.Flush();
  REQUIRE(f.out.watch.deadlines.size() == 1);
  CHECK(f.out.watch.deadlines[0].deadline >= arrived_steady + 20 * kMicrosPerSecond);
}

TEST_CASE("a worker whose HELLO was lost is told to say it again", "[dispatcher]") {
  // Regression: the dispatcher answered an unknown worker's heartbeat with a
  // plain heartbeat, which the worker took as registration; it then waited
  // forever without ever being placed work.
  FakeClock clock;
  DispatcherCore core(&clock, {});
  DispatcherOutput out;
  transport::Heartbeat hb;
  std::string frame = transport::EncodeToString(transport::MsgType::kHeartbeat, hb);
  core.OnWorkerFrame("w9", frame.data(), frame.size(), &out);
  REQUIRE(out.to_workers.size() == 1);
  auto env =
      transport::DecodeEnvelope(out.to_workers[0].second.data(), out.to_workers[0].second.size());
  REQUIRE(env.ok());
  auto reply = transport::BodyAs<transport::Heartbeat>(*env);
  REQUIRE(reply.ok());
  CHECK_FALSE(reply->registered);
  CHECK(core.workers() == 0);
}

TEST_CASE("reconciliation hands back an execution its worker does not hold", "[dispatcher]") {
  FakeClock clock;
  DispatcherCore core(&clock, {});
  DispatcherOutput out;
  std::string h = HelloFrame("w1", 1), c = CreditFrame(1);
  core.OnWorkerFrame("w1", h.data(), h.size(), &out);
  core.OnWorkerFrame("w1", c.data(), c.size(), &out);
  Enqueue e;
  e.execs.push_back(Exec("r.lost"));
  core.OnEnqueue(std::move(e));
  core.Place(&out);
  core.OnRelease({{{"r.lost", 1}}}, &out);  // its placement is journaled: DISPATCH sent
  out.Clear();
  core.Probe(&out);
  REQUIRE(out.to_workers.size() == 1);  // PROBE naming r.lost
  transport::ProbeReply reply;
  reply.states.push_back({"r.lost", 1, 0});  // "unknown": the DISPATCH never arrived
  std::string frame = transport::EncodeToString(transport::MsgType::kProbeReply, reply);
  out.Clear();
  core.OnWorkerFrame("w1", frame.data(), frame.size(), &out);
  REQUIRE(out.gone.size() == 1);
  CHECK(out.gone[0].execs[0].exec_id == "r.lost");
  CHECK(out.gone[0].reason.find("reconciliation") != std::string::npos);
  CHECK(core.HasWorker("w1"));
  // Its slot is usable again.
  Enqueue next;
  next.execs.push_back(Exec("r.next"));
  core.OnEnqueue(std::move(next));
  out.Clear();
  core.Place(&out);
  CHECK(out.placed.placed.size() == 1);
}

TEST_CASE("placement estimates come from the P50 of a task's past durations", "[scheduler]") {
  SchedulerFixture f;
  storage::Journal::Batch history;
  for (Micros d : {4, 5, 6}) history.RecordDuration("test.cores/slow", d * kMicrosPerSecond);
  REQUIRE(f.journal->Commit(history).ok());
  auto run_id = f.core->Submit(Submission({Task("slow"), Task("fresh")}));
  REQUIRE(run_id.ok());
  f.Flush();
  REQUIRE(f.out.enqueue.execs.size() == 2);
  for (const QueuedExec& q : f.out.enqueue.execs) {
    if (q.dispatch.exec_id == *run_id + ".slow") CHECK(q.expected_ms == 5000);
    if (q.dispatch.exec_id == *run_id + ".fresh") CHECK(q.expected_ms == 1000);  // no history
  }
}

TEST_CASE("a restarted scheduler takes up unfinished runs from the journal",
          "[scheduler][recovery]") {
  testing::ScratchDir dir;
  FakeClock clock;
  auto j = storage::Journal::Open(dir.path() + "/journal", {});
  REQUIRE(j.ok());
  std::unique_ptr<storage::Journal> journal = std::move(*j);
  std::string run_id;
  {
    // Before the crash: a done, b READY, c RUNNING on w1, d failed once and
    // waiting 10 s for its retry.
    SchedulerCore before(journal.get(), &clock, {});
    dsl::TaskSpec d = Task("d");
    d.retry = dsl::RetryPolicy{};
    d.retry->max_retries = 2;
    d.retry->delay = Millis(10000);
    auto id = before.Submit(Submission({Task("a"), Task("b", {"a"}), Task("c"), d}));
    REQUIRE(id.ok());
    run_id = *id;
    SchedulerOutbox out;
    REQUIRE(before.Flush(&out).ok());
    before.OnPlaced({{{"w1", run_id + ".a", 1}, {"w1", run_id + ".c", 1}, {"w1", run_id + ".d", 1}},
                     clock.Now()});
    before.OnResults(ResultOf(run_id + ".a", 1, transport::Outcome::kSuccess));
    before.OnResults(ResultOf(run_id + ".d", 1, transport::Outcome::kFailed, 1));
    out.Clear();
    REQUIRE(before.Flush(&out).ok());
  }  // the scheduler dies; only the journal is left

  SchedulerCore after(journal.get(), &clock, {});
  RecoveryReport report = after.Recover();
  CHECK(report.runs == 1);
  CHECK(report.tasks == 4);
  CHECK(report.running == 1);
  CHECK(report.ready == 1);
  CHECK(report.retrying == 1);
  CHECK(report.failed_runs == 0);
  SchedulerOutbox out;
  REQUIRE(after.Flush(&out).ok());
  // b goes back to the dispatcher at once: it was never sent before the crash.
  REQUIRE(out.enqueue.execs.size() == 1);
  CHECK(out.enqueue.execs[0].dispatch.exec_id == run_id + ".b");
  CHECK(out.enqueue.execs[0].dispatch.attempt == 1);
  // c is left to w1 to claim.
  REQUIRE(out.adopt.execs.size() == 1);
  CHECK(out.adopt.execs[0].exec_id == run_id + ".c");
  CHECK(out.adopt.execs[0].worker_id == "w1");
  CHECK(out.adopt.claim_until > clock.Now());
  CHECK(after.in_flight() == 2);

  // c's result, resent by its worker, is accepted: not stale.
  after.OnResults(ResultOf(run_id + ".c", 1, transport::Outcome::kSuccess));
  // d's retry comes due; its timer survived the restart.
  clock.Advance(11 * kMicrosPerSecond);
  after.OnTimers();
  out.Clear();
  REQUIRE(after.Flush(&out).ok());
  CHECK(after.stale_results() == 0);
  REQUIRE(out.enqueue.execs.size() == 1);
  CHECK(out.enqueue.execs[0].dispatch.exec_id == run_id + ".d");
  CHECK(out.enqueue.execs[0].dispatch.attempt == 2);

  after.OnPlaced({{{"w2", run_id + ".b", 1}, {"w2", run_id + ".d", 2}}, clock.Now()});
  after.OnResults(ResultOf(run_id + ".b", 1, transport::Outcome::kSuccess, 0, "w2"));
  after.OnResults(ResultOf(run_id + ".d", 2, transport::Outcome::kSuccess, 0, "w2"));
  out.Clear();
  REQUIRE(after.Flush(&out).ok());
  REQUIRE(out.finished.size() == 1);
  CHECK(out.finished[0].status == static_cast<uint8_t>(RunStatus::kSuccess));
  auto unfinished = journal->UnfinishedRuns();
  REQUIRE(unfinished.ok());
  CHECK(unfinished->empty());
  // Records written before and after the restart carry the run's ids, its
  // trace id the same throughout.
  auto records = journal->ExecutionsOfRun(run_id);
  REQUIRE(records.ok());
  REQUIRE(records->size() == 4);
  for (const storage::ExecutionRecord& r : *records) {
    CHECK(r.run_id == run_id);
    CHECK(r.trace_id.size() == 16);
    CHECK(r.trace_id == records->front().trace_id);
  }
}

TEST_CASE("a run whose snapshot is gone ends FAILED at recovery instead of blocking the start",
          "[scheduler][recovery]") {
  SchedulerFixture f;
  storage::RunRecord orphan;
  orphan.run_id = "r20260101T000000-dead";
  orphan.pipeline_name = "test.gone";
  orphan.pipeline_hash = "0000000000000000";
  orphan.status = RunStatus::kRunning;
  storage::Journal::Batch batch;
  batch.PutRun(orphan);
  REQUIRE(f.journal->Commit(batch).ok());
  RecoveryReport report = f.core->Recover();
  CHECK(report.failed_runs == 1);
  f.Flush();
  auto run = f.journal->GetRun(orphan.run_id);
  REQUIRE(run.ok());
  REQUIRE(run->has_value());
  CHECK((*run)->status == RunStatus::kFailed);
  CHECK((*run)->reason.find("could not be recovered") != std::string::npos);
}

TEST_CASE("after a restart, workers claim what they hold and the unclaimed is handed back",
          "[dispatcher][recovery]") {
  FakeClock clock;
  DispatcherCore core(&clock, {});
  DispatcherOutput out;
  AdoptRunning adopt;
  adopt.claim_until = clock.Now() + kMicrosPerSecond;
  adopt.execs.push_back({"r.kept", 1, "w1", 100});
  adopt.execs.push_back({"r.reported", 2, "w1", 100});
  adopt.execs.push_back({"r.lost", 3, "w9", 100});
  core.OnAdopt(adopt);

  // w1 rejoins holding r.kept: it keeps it, no CANCEL.
  std::string h = HelloFrame("w1", 2, "default", {{"r.kept", 1}}), c = CreditFrame(1);
  core.OnWorkerFrame("w1", h.data(), h.size(), &out);
  core.OnWorkerFrame("w1", c.data(), c.size(), &out);
  for (const auto& [id, frame] : out.to_workers) {
    auto env = transport::DecodeEnvelope(frame.data(), frame.size());
    REQUIRE(env.ok());
    CHECK(env->type != static_cast<uint16_t>(transport::MsgType::kCancel));
  }
  // r.reported finished while the coordinator was down: its resent result
  // claims it (and goes on to the scheduler).
  transport::ResultMsg result;
  result.exec_id = "r.reported";
  result.attempt = 2;
  std::string rf = transport::EncodeToString(transport::MsgType::kResult, result);
  core.OnWorkerFrame("w1", rf.data(), rf.size(), &out);
  REQUIRE(out.results.items.size() == 1);
  CHECK(core.unclaimed() == 1);

  // The window closes: r.lost goes back to the scheduler.
  clock.Advance(2 * kMicrosPerSecond);
  out.Clear();
  core.Place(&out);
  REQUIRE(out.gone.size() == 1);
  CHECK(out.gone[0].execs.size() == 1);
  CHECK(out.gone[0].execs[0].exec_id == "r.lost");
  CHECK(out.gone[0].execs[0].attempt == 3);
  CHECK(out.gone[0].reason.find("no worker claimed it") != std::string::npos);
  CHECK(core.unclaimed() == 0);
}

TEST_CASE("a DISPATCH leaves only once its placement is journaled", "[dispatcher]") {
  FakeClock clock;
  DispatcherCore core(&clock, {});
  DispatcherOutput out;
  std::string h = HelloFrame("w1", 1), c = CreditFrame(1);
  core.OnWorkerFrame("w1", h.data(), h.size(), &out);
  core.OnWorkerFrame("w1", c.data(), c.size(), &out);
  auto dispatches = [&] {
    size_t n = 0;
    for (const auto& [id, frame] : out.to_workers) {
      auto env = transport::DecodeEnvelope(frame.data(), frame.size());
      REQUIRE(env.ok());
      n += env->type == static_cast<uint16_t>(transport::MsgType::kDispatch) ? 1 : 0;
    }
    return n;
  };
  Enqueue e;
  e.execs.push_back(Exec("r.a"));
  core.OnEnqueue(std::move(e));
  out.Clear();
  core.Place(&out);
  CHECK(out.placed.placed.size() == 1);  // the scheduler is told...
  CHECK(dispatches() == 0);              // ...but nothing is sent yet
  CHECK(core.reserved() == 1);
  core.OnRelease({{{"r.a", 1}}}, &out);
  CHECK(dispatches() == 1);
  CHECK(core.reserved() == 0);

  // A placement the scheduler refuses (its run was canceled meanwhile) frees
  // the slot without anything reaching the worker.
  std::string more = CreditFrame(1);
  transport::ResultMsg done;
  done.exec_id = "r.a";
  done.attempt = 1;
  std::string rf = transport::EncodeToString(transport::MsgType::kResult, done);
  core.OnWorkerFrame("w1", rf.data(), rf.size(), &out);
  core.OnWorkerFrame("w1", more.data(), more.size(), &out);
  Enqueue next;
  next.execs.push_back(Exec("r.b"));
  core.OnEnqueue(std::move(next));
  out.Clear();
  core.Place(&out);
  REQUIRE(out.placed.placed.size() == 1);
  CancelExecs refuse;
  refuse.execs.push_back({"r.b", 1});
  core.OnCancel(refuse, &out);
  CHECK(dispatches() == 0);
  CHECK(out.to_workers.empty());  // no CANCEL either: the worker never had it
  CHECK(core.reserved() == 0);
  Enqueue again;
  again.execs.push_back(Exec("r.c"));
  core.OnEnqueue(std::move(again));
  out.Clear();
  core.Place(&out);
  CHECK(out.placed.placed.size() == 1);  // the slot was usable again
}

TEST_CASE("the scheduler releases a placement with its RUNNING commit, or refuses it",
          "[scheduler]") {
  SchedulerFixture f;
  auto run_id = f.core->Submit(Submission({Task("a"), Task("b")}));
  REQUIRE(run_id.ok());
  f.Flush();
  f.core->OnPlaced({{{"w1", *run_id + ".a", 1}, {"w1", *run_id + ".b", 7}}, f.clock.Now()});
  f.Flush();
  REQUIRE(f.out.release.execs.size() == 1);
  CHECK(f.out.release.execs[0].exec_id == *run_id + ".a");
  REQUIRE(f.out.cancels.execs.size() == 1);  // attempt 7 is not b's current attempt
  CHECK(f.out.cancels.execs[0].exec_id == *run_id + ".b");
  auto history = f.journal->HistoryOfExecution(*run_id + ".a");
  REQUIRE(history.ok());
  CHECK(history->back().to == TaskState::kRunning);
}

TEST_CASE("a rejoining worker is asked before its unlisted executions are handed back",
          "[dispatcher]") {
  FakeClock clock;
  DispatcherCore core(&clock, {});
  DispatcherOutput out;
  std::string h = HelloFrame("w1", 2), c = CreditFrame(2);
  core.OnWorkerFrame("w1", h.data(), h.size(), &out);
  core.OnWorkerFrame("w1", c.data(), c.size(), &out);
  Enqueue e;
  e.execs.push_back(Exec("r.inflight"));
  e.execs.push_back(Exec("r.gone"));
  core.OnEnqueue(std::move(e));
  core.Place(&out);
  REQUIRE(out.placed.placed.size() == 2);
  core.OnRelease({{{"r.inflight", 1}, {"r.gone", 1}}}, &out);
  // w1 restarts; its HELLO crossed our DISPATCHes and lists neither.
  out.Clear();
  core.OnWorkerFrame("w1", h.data(), h.size(), &out);
  CHECK(out.gone.empty());
  bool probed = false;
  for (const auto& [id, frame] : out.to_workers) {
    auto env = transport::DecodeEnvelope(frame.data(), frame.size());
    REQUIRE(env.ok());
    probed = probed || env->type == static_cast<uint16_t>(transport::MsgType::kProbe);
  }
  CHECK(probed);
  // The PROBE arrives behind the DISPATCH: one was received, one was lost.
  transport::ProbeReply reply;
  reply.states.push_back({"r.inflight", 1, 1});
  reply.states.push_back({"r.gone", 1, 0});
  std::string frame = transport::EncodeToString(transport::MsgType::kProbeReply, reply);
  out.Clear();
  core.OnWorkerFrame("w1", frame.data(), frame.size(), &out);
  REQUIRE(out.gone.size() == 1);
  REQUIRE(out.gone[0].execs.size() == 1);
  CHECK(out.gone[0].execs[0].exec_id == "r.gone");
  CHECK(out.gone[0].reason == "worker w1 rejoined without it (restarted)");
  auto snapshot = core.Snapshot();
  REQUIRE(snapshot.size() == 1);
  CHECK(snapshot[0].running == 1);
}

// ---- a new leader and the workers that watch it (issue 36) ----------------

namespace {

std::string WatchFrame(const std::string& worker_id, uint64_t epoch_seen) {
  return transport::EncodeToString(transport::MsgType::kWatch,
                                   transport::Watch{worker_id, epoch_seen});
}

// The HEARTBEATs among `out`'s frames, by route.
std::map<std::string, transport::Heartbeat> HeartbeatsIn(const DispatcherOutput& out) {
  std::map<std::string, transport::Heartbeat> beats;
  for (const auto& [route, frame] : out.to_workers) {
    auto env = transport::DecodeEnvelope(frame.data(), frame.size());
    REQUIRE(env.ok());
    if (env->type != transport::ToWire(transport::MsgType::kHeartbeat)) continue;
    auto hb = transport::BodyAs<transport::Heartbeat>(*env);
    REQUIRE(hb.ok());
    beats[route] = *hb;
  }
  return beats;
}

}  // namespace

TEST_CASE("Watchers keeps each worker's newest route, and makes room by age",
          "[dispatcher][watch]") {
  Watchers w;
  w.Heard("w1", "w1/a", 10);
  w.Heard("w2", "w2/a", 20);
  w.Heard("w1", "w1/b", 30);  // reconnected from a new process
  CHECK(w.size() == 2);
  CHECK(w.RoutesHeardSince(0) == std::vector<std::string>{"w1/b", "w2/a"});
  CHECK(w.RoutesHeardSince(25) == std::vector<std::string>{"w1/b"});
  w.Forget("w1");
  CHECK(w.RoutesHeardSince(0) == std::vector<std::string>{"w2/a"});
  for (size_t i = 0; i < Watchers::kMaxWatchers + 5; ++i) {
    w.Heard("x" + std::to_string(i), "r", 100 + static_cast<Micros>(i));
  }
  CHECK(w.size() == Watchers::kMaxWatchers);
  CHECK(w.RoutesHeardSince(0).size() == Watchers::kMaxWatchers);
  CHECK(w.RoutesHeardSince(100 + 5).size() == Watchers::kMaxWatchers);  // the oldest went
}

TEST_CASE("a leader answers a watching worker with its term, a standby only remembers it",
          "[dispatcher][watch]") {
  FakeClock clock;
  Watchers watchers;
  DispatcherOptions options;
  options.watchers = &watchers;
  options.epoch = 7;
  options.standby = true;
  DispatcherOutput out;
  {
    DispatcherCore standby(&clock, options);
    const std::string f = WatchFrame("w1", 6);
    standby.OnWorkerFrame("w1/route", f.data(), f.size(), &out);
    CHECK(out.to_workers.empty());  // no refusal, no "not the leader" flood
    CHECK(watchers.RoutesHeardSince(0) == std::vector<std::string>{"w1/route"});
  }
  options.standby = false;
  DispatcherCore leader(&clock, options);
  std::string f = WatchFrame("w2", 6);
  leader.OnWorkerFrame("w2/route", f.data(), f.size(), &out);
  auto beats = HeartbeatsIn(out);
  REQUIRE(beats.count("w2/route") == 1);
  CHECK(beats["w2/route"].epoch == 7);  // a newer term: the worker says HELLO
  CHECK(beats["w2/route"].registered);  // not "forgotten": it keeps its queue
  // A worker that has seen a newer term is not called back to this one.
  out.Clear();
  f = WatchFrame("w3", 8);
  leader.OnWorkerFrame("w3/route", f.data(), f.size(), &out);
  CHECK(out.to_workers.empty());
  // Garbage in a WATCH is dropped and counted, never remembered.
  f = WatchFrame("bad id\n", 1);
  leader.OnWorkerFrame("x", f.data(), f.size(), &out);
  CHECK(out.to_workers.empty());
  CHECK(watchers.size() == 3);
  CHECK(leader.dropped_frames() == 1);
}

// Issue 36: the dispatcher loop polls until NextWake; a new leader that
// waited for its first frame or heartbeat announced its term up to a second
// (the WATCH interval) after its election.
TEST_CASE("a new leader's dispatcher turn wakes at once to announce its term, then sleeps",
          "[dispatcher][watch]") {
  struct NoLink final : WorkerLink {
    bool Send(const std::string&, const std::string&) override { return true; }
  } link;
  FakeClock clock;
  Watchers watchers;
  DispatcherOptions options;
  options.watchers = &watchers;
  options.epoch = 4;
  DispatcherTurn turn(&clock, options, {Millis(10000), Millis(30000)});
  CHECK(turn.NextWake() == clock.Steady());
  DispatcherFrames out;
  turn.End(link, &out);
  CHECK(turn.NextWake() > clock.Steady());
}

TEST_CASE("a new leader announces its term to the workers that watched it, once reconnected",
          "[dispatcher][watch]") {
  FakeClock clock;
  Watchers watchers;
  watchers.Heard("w1", "w1/r", clock.Steady());
  watchers.Heard("w2", "w2/r", clock.Steady());
  watchers.Heard("old", "old/r", clock.Steady() - 60 * kMicrosPerSecond);
  std::set<std::string> up = {"w1/r"};
  std::vector<std::string> probed;
  DispatcherOptions options;
  options.watchers = &watchers;
  options.epoch = 9;
  options.connected = [&](const std::string& route) {
    probed.push_back(route);  // the probe is a HEARTBEAT of the term
    return up.count(route) > 0;
  };
  DispatcherCore core(&clock, options);
  DispatcherOutput out;
  core.StartAnnouncing(clock.Steady() - 30 * kMicrosPerSecond, clock.Steady() + kMicrosPerSecond);
  REQUIRE(core.announcing());
  core.Announce(clock.Steady(), &out);
  CHECK(probed == std::vector<std::string>{"w1/r", "w2/r"});  // not the one heard long ago
  CHECK(core.announcing());                                   // w2 has not reconnected yet
  probed.clear();
  up.insert("w2/r");
  clock.Advance(20 * kMicrosPerMilli);
  core.Announce(clock.Steady(), &out);
  CHECK(probed == std::vector<std::string>{"w2/r"});
  CHECK_FALSE(core.announcing());
  // Without the probe (no sockets), the announcement is a frame of the output.
  options.connected = nullptr;
  DispatcherCore bare(&clock, options);
  bare.StartAnnouncing(0, clock.Steady() + kMicrosPerSecond);
  bare.Announce(clock.Steady(), &out);
  auto beats = HeartbeatsIn(out);
  CHECK(beats.size() == 3);
  CHECK(beats["w1/r"].epoch == 9);
  CHECK(beats["w1/r"].registered);
  // Past its deadline a watcher that never came back is given up.
  DispatcherCore late(&clock, options);
  late.StartAnnouncing(0, clock.Steady());
  clock.Advance(1);
  late.Announce(clock.Steady(), &out);
  CHECK_FALSE(late.announcing());
}

TEST_CASE("a HELLO listing every attempt its worker holds hands back at once what it lacks",
          "[dispatcher][recovery][watch]") {
  FakeClock clock;
  Watchers watchers;
  watchers.Heard("w1", "w1", clock.Steady());
  DispatcherOptions options;
  options.watchers = &watchers;
  DispatcherCore core(&clock, options);
  DispatcherOutput out;
  AdoptRunning adopt;
  adopt.claim_until = clock.Now() + 30 * kMicrosPerSecond;
  adopt.execs.push_back({"r.running", 1, "w1", 100});
  adopt.execs.push_back({"r.finished", 1, "w1", 100});  // its RESULT is not acknowledged
  adopt.execs.push_back({"r.lost", 1, "w1", 100});      // its DISPATCH died with the old leader
  adopt.execs.push_back({"r.other", 1, "w2", 100});
  core.OnAdopt(adopt);
  transport::Hello h;
  h.worker_id = "w1";
  h.slots = 2;
  h.running = {{"r.running", 1}};
  h.finished = {{"r.finished", 1}};
  h.lists_finished = true;
  const std::string frame = transport::EncodeToString(transport::MsgType::kHello, h);
  core.OnWorkerFrame("w1", frame.data(), frame.size(), &out);
  REQUIRE(out.gone.size() == 1);
  REQUIRE(out.gone[0].execs.size() == 1);
  CHECK(out.gone[0].execs[0].exec_id == "r.lost");
  CHECK(out.gone[0].reason.find("does not hold it") != std::string::npos);
  // r.finished waits for its RESULT (it takes no slot meanwhile), r.other
  // for w2 or the window.
  CHECK(core.unclaimed() == 2);
  CHECK(watchers.size() == 0);  // w1 joined: it no longer watches
  // Its RESULT claims r.finished; the free slot takes new work at once.
  transport::ResultMsg result;
  result.exec_id = "r.finished";
  result.attempt = 1;
  const std::string rf = transport::EncodeToString(transport::MsgType::kResult, result);
  const std::string credit = CreditFrame(1);
  out.Clear();
  core.OnWorkerFrame("w1", rf.data(), rf.size(), &out);
  core.OnWorkerFrame("w1", credit.data(), credit.size(), &out);
  CHECK(out.results.items.size() == 1);
  CHECK(core.unclaimed() == 1);
  Enqueue e;
  e.execs.push_back(Exec("r.next"));
  core.OnEnqueue(std::move(e));
  core.Place(&out);
  CHECK(out.placed.placed.size() == 1);
  // The older HELLO (no lists_finished) hands back nothing early: its
  // finished attempts are claimed by their RESULTs.
  DispatcherCore old(&clock, {});
  old.OnAdopt(adopt);
  h.lists_finished = false;
  h.finished.clear();
  const std::string older = transport::EncodeToString(transport::MsgType::kHello, h);
  DispatcherOutput out2;
  old.OnWorkerFrame("w1", older.data(), older.size(), &out2);
  for (const WorkerGone& g : out2.gone) UNSCOPED_INFO(g.reason << " " << g.execs.size());
  CHECK(out2.gone.empty());
  CHECK(old.unclaimed() == 3);
}

TEST_CASE("a coordinator's own stall is not counted as its workers' silence", "[reconciler]") {
  ReconcilerOptions options;
  options.heartbeat = Millis(100);
  options.liveness = 3;
  ReconcilerCore core(options);
  const Micros t0 = 1'000'000'000;
  core.OnWorkersSeen({{{"w1", t0}}});
  CHECK(core.LostWorkers(t0 + 100'000).empty());
  // SIGSTOP for 5 s: when the loop runs again, w1 has 300 ms from then.
  CHECK(core.LostWorkers(t0 + 5'100'000).empty());
  CHECK(core.LostWorkers(t0 + 5'200'000).empty());
  CHECK(core.LostWorkers(t0 + 5'300'000).empty());
  auto lost = core.LostWorkers(t0 + 5'390'000);
  REQUIRE(lost.size() == 1);
  CHECK(lost[0].worker_id == "w1");
}

// ---- slow tasks and labels -------------------------------------------------

namespace {

// A fixture whose task "slow" has a P50 of 200 ms, so it is flagged after
// max(5 x 200 ms, slow_min 300 ms) = 1 s; task "fresh" has no history.
struct SlowFixture : SchedulerFixture {
  static SchedulerOptions Options() {
    SchedulerOptions o;
    o.slow_min = Millis(300);
    return o;
  }
  SlowFixture() : SchedulerFixture(Options()) {
    storage::Journal::Batch history;
    for (Micros d : {100, 200, 300}) history.RecordDuration("test.cores/slow", d * kMicrosPerMilli);
    REQUIRE(journal->Commit(history).ok());
  }
  // Submits, places every task on w1 and returns the run id.
  std::string StartRun(const std::vector<dsl::TaskSpec>& tasks) {
    auto run_id = core->Submit(Submission(tasks));
    REQUIRE(run_id.ok());
    Flush();
    Placed placed;
    placed.at = clock.Now();
    for (const QueuedExec& q : out.enqueue.execs) {
      placed.placed.push_back({"w1", q.dispatch.exec_id, q.dispatch.attempt});
    }
    core->OnPlaced(placed);
    Flush();
    std::vector<transport::ExecRef> started;
    for (const WorkerExecRef& ref : placed.placed) started.push_back({ref.exec_id, ref.attempt});
    core->OnStarted(StartedOf(started, clock.Now()));
    Flush();
    return *run_id;
  }
  void Tick(Micros delta) {
    clock.Advance(delta);
    core->OnTimers();
    Flush();
  }
  storage::ExecutionRecord Exec(const std::string& id) {
    auto e = journal->GetExecution(id);
    REQUIRE(e.ok());
    REQUIRE(e->has_value());
    return **e;
  }
  std::vector<storage::TransitionRecord> Notes(const std::string& id) {
    auto history = journal->HistoryOfExecution(id);
    REQUIRE(history.ok());
    std::vector<storage::TransitionRecord> notes;
    for (const auto& r : *history) {
      if (r.note) notes.push_back(r);
    }
    return notes;
  }
};

TEST_CASE("a submission is journaled under its own snapshot's hash, never another's",
          "[scheduler][hostile]") {
  SchedulerFixture f;
  std::vector<dsl::TaskSpec> many;  // a snapshot large enough to travel packed
  for (int i = 0; i < 2000; ++i) many.push_back(Task("a" + std::to_string(i)));
  SubmitRun a = Submission(many);
  SubmitRun b = Submission({Task("b")});
  REQUIRE(f.core->Submit(a).ok());
  f.Flush();
  // b's text named by a's hash: refused before anything is staged.
  SubmitRun forged = b;
  forged.pipeline_hash = a.pipeline_hash;
  auto refused = f.core->Submit(forged);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == StatusCode::kInvalidInput);
  CHECK(refused.status().message().find("the snapshot's hash is " + b.pipeline_hash) !=
        std::string::npos);
  // A hash that collides with a journaled one over other text (as a crafted
  // FNV-1a pair would): refused too, on the path that trusts its hash.
  auto spec = dsl::PipelineFromJsonText(b.pipeline_json);
  REQUIRE(spec.ok());
  auto collided = f.core->SubmitParsed(forged, std::move(*spec));
  REQUIRE_FALSE(collided.ok());
  CHECK(collided.status().message().find("a different pipeline snapshot is already journaled") !=
        std::string::npos);
  f.Flush();
  auto stored = f.journal->GetPipeline(a.pipeline_hash);
  REQUIRE(stored.ok());
  REQUIRE(stored->has_value());
  CHECK(**stored == a.pipeline_json);  // a's snapshot, as it was
  // The same snapshot again is a new run of it, packed or not.
  CHECK(f.core->Submit(a).ok());
  SubmitRun packed = a;
  packed.pipeline_json = storage::PackSnapshot(std::string(512, ' ') + a.pipeline_json);
  auto spec_a = dsl::PipelineFromJsonText(a.pipeline_json);
  REQUIRE(spec_a.ok());
  CHECK_FALSE(f.core->SubmitParsed(packed, *spec_a).ok());  // other bytes, same hash
  packed.pipeline_json = storage::PackSnapshot(a.pipeline_json);
  REQUIRE(storage::IsPackedSnapshot(packed.pipeline_json));
  CHECK(f.core->SubmitParsed(packed, std::move(*spec_a)).ok());
  f.Flush();
}

// `text` in the packed form (storage/snapshot_pack.cc: "\0A1z", the text's
// length little-endian, deflate) at zlib's best compression, as another
// client might pack it: other bytes than PackSnapshot's fastest level.
std::string PackedAtBestCompression(const std::string& text) {
  uLongf size = compressBound(static_cast<uLong>(text.size()));
  std::string deflated(size, '\0');
  REQUIRE(compress2(reinterpret_cast<Bytef*>(deflated.data()), &size,
                    reinterpret_cast<const Bytef*>(text.data()), static_cast<uLong>(text.size()),
                    Z_BEST_COMPRESSION) == Z_OK);
  deflated.resize(size);
  std::string out("\0A1z", 4);
  const auto n = static_cast<uint32_t>(text.size());
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  return out + deflated;
}

TEST_CASE("a snapshot that arrives packed is journaled as it arrived, not packed again",
          "[scheduler]") {
  SchedulerFixture f;
  std::vector<dsl::TaskSpec> many;
  for (int i = 0; i < 2000; ++i) many.push_back(Task("a" + std::to_string(i)));
  SubmitRun a = Submission(many);
  const std::string packed = PackedAtBestCompression(a.pipeline_json);
  REQUIRE(storage::IsPackedSnapshot(packed));
  REQUIRE(packed != storage::PackSnapshot(a.pipeline_json));
  const std::string text = a.pipeline_json;
  REQUIRE(f.core->Submit(std::move(a), packed).ok());
  f.Flush();
  auto stored = f.journal->GetPipeline(Submission(many).pipeline_hash);
  REQUIRE(stored.ok());
  REQUIRE(stored->has_value());
  CHECK(**stored == text);
  // The journal file holds the client's bytes themselves.
  f.core.reset();
  f.journal.reset();
  CHECK(f.dir.Read("journal/data.mdb").find(packed) != std::string::npos);
}

}  // namespace

TEST_CASE("an execution running past 5x its P50 is flagged, journaled and left running",
          "[scheduler][slow]") {
  SlowFixture f;
  const Micros placed_at = f.clock.Now();
  const std::string run_id = f.StartRun({Task("slow"), Task("fresh")});
  const std::string id = run_id + ".slow";
  CHECK(f.core->NextTimer() == placed_at + kMicrosPerSecond);

  f.Tick(999 * kMicrosPerMilli);
  CHECK(f.Exec(id).slow == storage::SlowFlag::kNone);
  CHECK(f.Notes(id).empty());

  f.Tick(2 * kMicrosPerMilli);
  storage::ExecutionRecord rec = f.Exec(id);
  CHECK(rec.state == TaskState::kRunning);
  CHECK(rec.slow == storage::SlowFlag::kFlagged);
  CHECK(rec.slow_reason->find("running 1s1ms, more than 5x its P50 of 200ms") != std::string::npos);
  auto notes = f.Notes(id);
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].from == TaskState::kRunning);
  CHECK(notes[0].to == TaskState::kRunning);
  CHECK(notes[0].reason.find("flagged slow") != std::string::npos);
  CHECK(notes[0].actor == "scheduler");
  // Flagging kills nothing; the run waits.
  CHECK(f.out.cancels.execs.empty());
  CHECK(f.out.finished.empty());
  CHECK(f.core->slow_flags() == 1);
  auto explain = f.core->Explain(run_id, "slow", {});
  REQUIRE(explain.ok());
  CHECK(explain->find("flagged slow and waiting for confirmation") != std::string::npos);
  CHECK(explain->find("apollo11 confirm " + id + " --kill|--keep") != std::string::npos);

  // Without history a task is never flagged, however long it runs.
  f.Tick(3600 * kMicrosPerSecond);
  CHECK(f.Exec(run_id + ".fresh").slow == storage::SlowFlag::kNone);
  CHECK(f.core->slow_flags() == 1);
  auto refused = f.core->Confirm(run_id + ".fresh", true, "user");
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == StatusCode::kInvalidInput);
  CHECK(refused.status().message().find("no duration history") != std::string::npos);

  // The flag and its note survive a restart of the journal.
  f.core.reset();
  f.journal.reset();
  auto reopened = storage::Journal::Open(f.dir.path() + "/journal", {});
  REQUIRE(reopened.ok());
  auto stored = (*reopened)->GetExecution(id);
  REQUIRE(stored.ok());
  CHECK((*stored)->slow == storage::SlowFlag::kFlagged);
  CHECK((*stored)->slow_reason == rec.slow_reason);
  CHECK((*stored)->flagged_at == rec.flagged_at);
  auto history = (*reopened)->HistoryOfExecution(id);
  REQUIRE(history.ok());
  CHECK(history->back().note);
  CHECK_FALSE(history->front().note);
}

TEST_CASE("after a restart a slow flag is still there and an unflagged attempt is watched again",
          "[scheduler][slow][recovery]") {
  SlowFixture f;
  const std::string flagged = f.StartRun({Task("slow")});
  f.Tick(1100 * kMicrosPerMilli);
  REQUIRE(f.Exec(flagged + ".slow").slow == storage::SlowFlag::kFlagged);
  const std::string watched = f.StartRun({Task("slow")});

  // The scheduler dies; a new one recovers both runs from the journal.
  f.core = std::make_unique<SchedulerCore>(f.journal.get(), &f.clock, SlowFixture::Options());
  RecoveryReport report = f.core->Recover();
  CHECK(report.runs == 2);
  f.Flush();
  auto explain = f.core->Explain(flagged, "slow", {});
  REQUIRE(explain.ok());
  CHECK(explain->find("flagged slow and waiting for confirmation") != std::string::npos);

  f.Tick(1100 * kMicrosPerMilli);
  CHECK(f.Exec(watched + ".slow").slow == storage::SlowFlag::kFlagged);
  CHECK(f.Notes(flagged + ".slow").size() == 1);  // not flagged twice
  REQUIRE(f.core->Confirm(flagged + ".slow", /*kill=*/true, "user").ok());
  f.Flush();
  CHECK(f.Exec(flagged + ".slow").state == TaskState::kFailed);
}

TEST_CASE("confirm --kill fails the flagged attempt with the operator's reason, and retries apply",
          "[scheduler][slow]") {
  SlowFixture f;
  dsl::TaskSpec slow = Task("slow");
  slow.retry = dsl::RetryPolicy{};
  slow.retry->max_retries = 1;
  slow.retry->delay = Millis(100);
  const std::string run_id = f.StartRun({slow});
  const std::string id = run_id + ".slow";
  f.Tick(1100 * kMicrosPerMilli);
  REQUIRE(f.Exec(id).slow == storage::SlowFlag::kFlagged);

  f.clock.Advance(900 * kMicrosPerMilli);
  auto done = f.core->Confirm(id, /*kill=*/true, "user");
  REQUIRE(done.ok());
  CHECK(done->find("RETRYING") != std::string::npos);
  f.Flush();
  REQUIRE(f.out.cancels.execs.size() == 1);
  CHECK(f.out.cancels.execs[0].exec_id == id);
  CHECK(f.out.cancels.execs[0].attempt == 1);
  storage::ExecutionRecord rec = f.Exec(id);
  CHECK(rec.state == TaskState::kRetrying);
  CHECK(rec.slow == storage::SlowFlag::kNone);  // the flag ended with its attempt
  CHECK(rec.error == "killed by operator after slow flag (ran 2s, P50 200ms)");
  auto history = f.journal->HistoryOfExecution(id);
  REQUIRE(history.ok());
  CHECK(history->back().to == TaskState::kRetrying);
  CHECK(history->back().actor == "user");
  CHECK(history->back().reason.find("killed by operator after slow flag (ran 2s, P50 200ms)") !=
        std::string::npos);

  // The retry is a new attempt with its own slow watch; killing it again
  // exhausts the policy and fails the run.
  f.Tick(200 * kMicrosPerMilli);
  REQUIRE(f.out.enqueue.execs.size() == 1);
  CHECK(f.out.enqueue.execs[0].dispatch.attempt == 2);
  f.core->OnPlaced({{{"w1", id, 2}}, f.clock.Now()});
  f.core->OnStarted(StartedOf({{id, 2}}, f.clock.Now()));
  f.Flush();
  f.Tick(1100 * kMicrosPerMilli);
  REQUIRE(f.Exec(id).slow == storage::SlowFlag::kFlagged);
  REQUIRE(f.core->Confirm(id, true, "user").ok());
  f.Flush();
  CHECK(f.Exec(id).state == TaskState::kFailed);
  REQUIRE(f.out.finished.size() == 1);
  CHECK(f.out.finished[0].status == static_cast<uint8_t>(RunStatus::kFailed));
}

TEST_CASE("confirm --keep clears the flag and the attempt is not flagged again",
          "[scheduler][slow]") {
  SlowFixture f;
  const std::string run_id = f.StartRun({Task("slow")});
  const std::string id = run_id + ".slow";
  f.Tick(1500 * kMicrosPerMilli);
  REQUIRE(f.Exec(id).slow == storage::SlowFlag::kFlagged);
  auto kept = f.core->Confirm(id, /*kill=*/false, "user");
  REQUIRE(kept.ok());
  f.Flush();
  CHECK(f.out.cancels.execs.empty());
  CHECK(f.Exec(id).slow == storage::SlowFlag::kKept);
  CHECK(f.Exec(id).state == TaskState::kRunning);
  auto notes = f.Notes(id);
  REQUIRE(notes.size() == 2);
  CHECK(notes[1].reason.find("operator kept it") != std::string::npos);
  CHECK(notes[1].actor == "user");
  auto explain = f.core->Explain(run_id, "slow", {});
  REQUIRE(explain.ok());
  CHECK(explain->find("kept by the operator") != std::string::npos);

  f.Tick(3600 * kMicrosPerSecond);
  CHECK(f.Notes(id).size() == 2);
  auto again = f.core->Confirm(id, true, "user");
  REQUIRE_FALSE(again.ok());
  CHECK(again.status().code() == StatusCode::kInvalidInput);
  CHECK(again.status().message().find("already kept") != std::string::npos);

  f.core->OnResults(ResultOf(id, 1, transport::Outcome::kSuccess));
  f.Flush();
  CHECK(f.Exec(id).state == TaskState::kSuccess);
  CHECK(f.Exec(id).slow == storage::SlowFlag::kNone);
  REQUIRE(f.out.finished.size() == 1);
  CHECK(f.out.finished[0].status == static_cast<uint8_t>(RunStatus::kSuccess));
}

TEST_CASE("confirm refuses unknown, unplaced, unflagged and finished executions",
          "[scheduler][slow]") {
  SlowFixture f;
  auto unknown = f.core->Confirm("nope.nothing", true, "user");
  REQUIRE_FALSE(unknown.ok());
  CHECK(unknown.status().code() == StatusCode::kNotFound);

  auto run_id = f.core->Submit(Submission({Task("slow")}));
  REQUIRE(run_id.ok());
  f.Flush();
  const std::string id = *run_id + ".slow";
  auto ready = f.core->Confirm(id, true, "user");
  REQUIRE_FALSE(ready.ok());
  CHECK(ready.status().message().find("is READY, not running") != std::string::npos);

  f.core->OnPlaced({{{"w1", id, 1}}, f.clock.Now()});
  f.Flush();
  auto early = f.core->Confirm(id, false, "user");
  REQUIRE_FALSE(early.ok());
  CHECK(early.status().message().find("not flagged slow (it would be flagged after 1s)") !=
        std::string::npos);

  f.core->OnResults(ResultOf(id, 1, transport::Outcome::kSuccess));
  f.Flush();
  auto finished = f.core->Confirm(id, true, "user");
  REQUIRE_FALSE(finished.ok());
  CHECK(finished.status().code() == StatusCode::kInvalidInput);
  CHECK(finished.status().message().find("is SUCCESS, not running") != std::string::npos);
  // A slow timer of a finished attempt flags nothing.
  f.Tick(10 * kMicrosPerSecond);
  CHECK(f.Notes(id).empty());
}

TEST_CASE("the dispatcher places a labelled execution only on a worker with all its labels",
          "[dispatcher][labels]") {
  FakeClock clock;
  DispatcherCore core(&clock, {});
  DispatcherOutput out;
  auto hello = [](const std::string& /*id*/, std::vector<std::string> labels) {
    transport::Hello h;
    h.group = "default";
    h.slots = 4;
    h.labels = std::move(labels);
    return transport::EncodeToString(transport::MsgType::kHello, h);
  };
  const std::vector<std::pair<std::string, std::vector<std::string>>> workers = {
      {"plain", {}}, {"gpu1", {"gpu"}}, {"gpu_ssd", {"ssd", "gpu"}}};
  for (const auto& [id, labels] : workers) {
    std::string h = hello(id, labels), c = CreditFrame(4);
    core.OnWorkerFrame(id, h.data(), h.size(), &out);
    core.OnWorkerFrame(id, c.data(), c.size(), &out);
  }
  Enqueue e;
  e.execs.push_back(Exec("r.tpu"));
  e.execs.back().labels = {"tpu"};  // nobody has it: waits
  e.execs.back().priority = 9;      // first in line, yet it blocks no one
  e.execs.push_back(Exec("r.both"));
  e.execs.back().labels = {"gpu", "ssd"};
  e.execs.push_back(Exec("r.gpu"));
  e.execs.back().labels = {"gpu"};
  e.execs.push_back(Exec("r.any"));
  core.OnEnqueue(std::move(e));
  out.Clear();
  core.Place(&out);
  std::map<std::string, std::string> where;
  for (const WorkerExecRef& p : out.placed.placed) where[p.exec_id] = p.worker_id;
  CHECK(where.size() == 3);
  CHECK(where["r.both"] == "gpu_ssd");
  CHECK((where["r.gpu"] == "gpu1" || where["r.gpu"] == "gpu_ssd"));
  CHECK(where.count("r.tpu") == 0);
  CHECK(core.queued() == 1);
  auto snapshot = core.Snapshot();
  for (const WorkerSnapshot& w : snapshot) {
    if (w.id == "gpu_ssd") CHECK(w.labels == std::vector<std::string>{"gpu", "ssd"});
  }
}

TEST_CASE("explain says when no connected worker has a task's labels", "[scheduler][labels]") {
  SchedulerFixture f;
  dsl::TaskSpec gpu = Task("train");
  gpu.labels = {"gpu", "ssd"};
  auto run_id = f.core->Submit(Submission({gpu}));
  REQUIRE(run_id.ok());
  f.Flush();
  REQUIRE(f.out.enqueue.execs.size() == 1);
  CHECK(f.out.enqueue.execs[0].labels == std::vector<std::string>{"gpu", "ssd"});
  WorkersSnapshot workers;
  WorkerInfo w;
  w.id = "w1";
  w.group = "default";
  w.credits = 1;
  w.labels = {"gpu"};
  workers.workers.push_back(w);
  auto text = f.core->Explain(*run_id, "train", workers);
  REQUIRE(text.ok());
  CHECK(text->find("no connected worker of group 'default' has all the labels [gpu, ssd]") !=
        std::string::npos);
  workers.workers[0].labels = {"gpu", "ssd"};
  text = f.core->Explain(*run_id, "train", workers);
  REQUIRE(text.ok());
  CHECK(text->find("being placed") != std::string::npos);
}

TEST_CASE("a large Enqueue goes to the dispatcher in frames within the internal link's limit",
          "[scheduler][limits]") {
  Enqueue enqueue;
  enqueue.ticket = 7;
  for (int i = 0; i < 10; ++i) {
    QueuedExec q;
    q.dispatch.exec_id = "r.t" + std::to_string(i);
    q.dispatch.task.inputs.push_back({1, "up", std::string(1 << 20, 'o')});
    enqueue.execs.push_back(std::move(q));
  }
  std::vector<std::string> frames;
  TurnCommit::AddEnqueue(&frames, &enqueue, size_t{3} << 20);
  CHECK(enqueue.execs.empty());
  REQUIRE(frames.size() == 5);  // two per frame: a third would pass 3 MiB by its overhead
  std::vector<std::string> order;
  for (size_t i = 0; i < frames.size(); ++i) {
    CHECK(frames[i].size() <= (size_t{3} << 20) + 4096);
    auto env = transport::DecodeEnvelope(frames[i].data(), frames[i].size(), InternalLimits());
    REQUIRE(env.ok());
    auto body = transport::BodyAs<Enqueue>(*env);
    REQUIRE(body.ok());
    CHECK(body->ticket == (i + 1 == frames.size() ? 7u : 0u));  // the ticket comes last
    for (const QueuedExec& q : body->execs) order.push_back(q.dispatch.exec_id);
  }
  REQUIRE(order.size() == 10);
  for (int i = 0; i < 10; ++i) CHECK(order[i] == "r.t" + std::to_string(i));
  // A small batch stays one frame.
  Enqueue small;
  small.execs.resize(3);
  frames.clear();
  TurnCommit::AddEnqueue(&frames, &small, TurnCommit::EnqueueBudget());
  CHECK(frames.size() == 1);
}
