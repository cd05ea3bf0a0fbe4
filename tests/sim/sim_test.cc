// The coordinator's protocol rules, shown on the deterministic simulator
// (tests/sim/simulation.h): every message stepped by hand, time moved by
// hand. Each Simulation also checks on every delivery that no DISPATCH
// leaves before its RUNNING is durable and no ACK before its result is.

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "dsl/pipeline_json.h"
#include "tests/sim/simulation.h"

using namespace apollo11;       // NOLINT: test file
using namespace apollo11::sim;  // NOLINT: test file

TEST_CASE("a worker's result is ACKed only after its transition is committed", "[sim]") {
  Simulation sim;
  SimWorker& w1 = sim.AddWorker("w1");
  const std::string run = sim.Submit({Task("a")});
  sim.RunUntilIdle();
  const std::string a = run + ".a";
  REQUIRE(w1.runner.IsRunning(a, 1));

  sim.Finish("w1", a);  // the RESULT leaves the worker
  CHECK(w1.core->unacked_results() == 1);
  sim.DispatcherTurn();  // and reaches the scheduler
  CHECK(sim.Execution(a)->state == TaskState::kRunning);
  sim.SchedulerTurn();  // committed; the ACK goes to the dispatcher only now
  CHECK(sim.Execution(a)->state == TaskState::kSuccess);
  CHECK(sim.acks_delivered() == 0);
  sim.DispatcherTurn();
  CHECK(sim.acks_delivered() == 1);
  sim.WorkerTurn("w1");
  CHECK(w1.core->unacked_results() == 0);
  sim.RunUntilIdle();
  CHECK(sim.finished_runs().at(run) == RunStatus::kSuccess);
}

TEST_CASE("a failed commit releases nothing: the result stays unacknowledged and is resent",
          "[sim]") {
  Simulation sim;
  SimWorker& w1 = sim.AddWorker("w1");
  const std::string run = sim.Submit({Task("a")});
  sim.RunUntilIdle();
  const std::string a = run + ".a";
  sim.Finish("w1", a);
  sim.DispatcherTurn();
  sim.FillStore();  // the disk is full from now on
  sim.SchedulerTurn();
  CHECK(sim.failed_commits() == 1);
  // The worker resends its RESULT every heartbeat; every commit fails.
  sim.AdvanceBy(Millis(500), Millis(100));
  CHECK(sim.failed_commits() > 1);
  CHECK(sim.acks_delivered() == 0);
  CHECK(w1.core->unacked_results() == 1);
  CHECK(sim.Execution(a)->state == TaskState::kRunning);
  CHECK(sim.finished_runs().empty());

  // Space returns: the next resend is committed once, ACKed, and the run ends.
  sim.FreeStore();
  sim.AdvanceBy(Millis(300), Millis(100));
  sim.RunUntilIdle();
  CHECK(sim.acks_delivered() == 1);
  CHECK(w1.core->unacked_results() == 0);
  CHECK(sim.Execution(a)->state == TaskState::kSuccess);
  CHECK(sim.finished_runs().at(run) == RunStatus::kSuccess);
}

TEST_CASE("a READY execution placed at once joins the turn's commit and leaves only after it",
          "[sim]") {
  Simulation sim;
  SimWorker& w1 = sim.AddWorker("w1");
  const std::string run = sim.Submit({Task("a"), Task("b", {"a"})});
  sim.RunUntilIdle();
  const std::string a = run + ".a", b = run + ".b";
  sim.Finish("w1", a);   // RESULT, and CREDIT for the freed slot
  sim.DispatcherTurn();  // both reach the dispatcher; the result goes on
  const size_t sent = sim.dispatches().size();
  // One scheduler turn: a's SUCCESS promotes b, the dispatcher places b on
  // the ticket before the commit, and the one commit holds a SUCCESS and b
  // READY -> RUNNING.
  sim.SchedulerTurn();
  CHECK(sim.failed_commits() == 0);
  CHECK(sim.Execution(a)->state == TaskState::kSuccess);
  auto rec = sim.Execution(b);
  REQUIRE(rec.has_value());
  CHECK(rec->state == TaskState::kRunning);
  CHECK(rec->worker_id == "w1");
  // b's DISPATCH was held until that commit; it leaves with the release.
  CHECK(sim.dispatches().size() == sent);
  CHECK_FALSE(w1.runner.IsRunning(b, 1));
  sim.DispatcherTurn();
  REQUIRE(sim.dispatches().size() == sent + 1);
  CHECK(sim.dispatches().back().second.exec_id == b);
  sim.WorkerTurn("w1");
  CHECK(w1.runner.IsRunning(b, 1));
}

TEST_CASE(
    "after a restart, executions claimed by their worker's HELLO are kept and unclaimed "
    "ones requeued after the claim window",
    "[sim][recovery]") {
  SimOptions options;
  options.claim_window = Millis(400);
  Simulation sim(options);
  sim.AddWorker("w1");
  sim.AddWorker("w2");
  const std::string run = sim.Submit({Task("a"), Task("b")});
  sim.RunUntilIdle();
  const std::string a = run + ".a", b = run + ".b";
  const std::string holder_a = sim.Execution(a)->worker_id;
  const std::string holder_b = sim.Execution(b)->worker_id;
  REQUIRE(holder_a != holder_b);

  sim.worker(holder_b).partitioned = true;  // b's worker never comes back
  sim.RestartCoordinator();
  sim.AddWorker("w3");  // a fresh worker with a free slot
  sim.AdvanceBy(Millis(200), Millis(50));
  // a's worker heard the new coordinator and claimed a in its HELLO.
  CHECK(sim.dispatcher().HasWorker(holder_a));
  CHECK(sim.dispatcher().unclaimed() == 1);
  auto rec_a = sim.Execution(a);
  CHECK(rec_a->state == TaskState::kRunning);
  CHECK(rec_a->attempt == 1);
  CHECK(sim.Execution(b)->attempt == 1);  // still inside the window

  sim.AdvanceBy(Millis(300), Millis(50));  // the window closes
  CHECK(sim.dispatcher().unclaimed() == 0);
  auto rec_b = sim.Execution(b);
  CHECK(rec_b->state == TaskState::kRunning);
  CHECK(rec_b->attempt == 2);
  CHECK(rec_b->worker_id == "w3");
  CHECK(rec_b->retries_used == 0);
  CHECK(sim.Execution(a)->attempt == 1);  // a was kept, not rerun

  sim.Finish(holder_a, a);
  sim.Finish("w3", b);
  sim.RunUntilIdle();
  CHECK(sim.finished_runs().at(run) == RunStatus::kSuccess);
}

TEST_CASE(
    "a silent worker is lost after liveness x heartbeat and its execution runs elsewhere "
    "without consuming a retry",
    "[sim][liveness]") {
  Simulation sim;  // heartbeat 100 ms, liveness 3
  sim.AddWorker("w1");
  const std::string run = sim.Submit({Task("a")});
  sim.RunUntilIdle();
  const std::string a = run + ".a";
  REQUIRE(sim.Execution(a)->worker_id == "w1");
  sim.AddWorker("w2");

  sim.worker("w1").partitioned = true;
  sim.AdvanceBy(Millis(250), Millis(50));
  CHECK(sim.dispatcher().HasWorker("w1"));  // silent, but not for 3 heartbeats yet
  sim.AdvanceBy(Millis(300), Millis(50));
  CHECK_FALSE(sim.dispatcher().HasWorker("w1"));
  auto rec = sim.Execution(a);
  CHECK(rec->state == TaskState::kRunning);
  CHECK(rec->worker_id == "w2");
  CHECK(rec->attempt == 2);
  CHECK(rec->retries_used == 0);
  CHECK(rec->requeues == 1);

  sim.Finish("w2", a);
  sim.RunUntilIdle();
  CHECK(sim.finished_runs().at(run) == RunStatus::kSuccess);
}

TEST_CASE("a wall-clock step does not make a live worker look silent", "[sim][liveness]") {
  Simulation sim;
  sim.AddWorker("w1");
  sim.RunUntilIdle();
  sim.clock().StepWall(3600 * kMicrosPerSecond);  // NTP jumps an hour ahead
  sim.AdvanceBy(Millis(100), Millis(50));
  CHECK(sim.dispatcher().HasWorker("w1"));
}

TEST_CASE("the reconciler's PROBE finds an execution its worker does not hold, and it is repaired",
          "[sim][reconcile]") {
  SimOptions options;
  options.reconcile_interval = Millis(500);
  Simulation sim(options);
  SimWorker& w1 = sim.AddWorker("w1");
  w1.lose_dispatches = 1;  // the network loses the first DISPATCH
  const std::string run = sim.Submit({Task("a")});
  sim.RunUntilIdle();
  const std::string a = run + ".a";
  CHECK(sim.Execution(a)->state == TaskState::kRunning);  // as far as the coordinator knows
  CHECK_FALSE(w1.runner.IsRunning(a, 1));

  sim.AdvanceBy(Millis(600), Millis(100));  // PROBE; the worker answers "unknown"
  auto rec = sim.Execution(a);
  CHECK(rec->state == TaskState::kRunning);
  CHECK(rec->attempt == 2);
  CHECK(rec->retries_used == 0);
  CHECK(w1.runner.IsRunning(a, 2));

  sim.Finish("w1", a);
  sim.RunUntilIdle();
  CHECK(sim.finished_runs().at(run) == RunStatus::kSuccess);
}

TEST_CASE("a submission is answered only after the commit that holds its run", "[sim][client]") {
  Simulation sim;
  sim.AddWorker("w1");
  const std::string run = sim.Submit({Task("a")});
  REQUIRE_FALSE(run.empty());
  const std::string a = run + ".a";
  CHECK(sim.SubmitReplies().empty());  // accepted, held until the commit
  CHECK_FALSE(sim.Execution(a).has_value());

  sim.SchedulerTurn();  // one commit: the run, and a placed on w1
  auto replies = sim.SubmitReplies();
  REQUIRE(replies.size() == 1);
  CHECK(replies[0].code == 0);
  CHECK(replies[0].run_id == run);
  CHECK(sim.Execution(a)->state == TaskState::kRunning);

  sim.RunUntilIdle();
  sim.Finish("w1", a);
  sim.RunUntilIdle();
  CHECK(sim.finished_runs().at(run) == RunStatus::kSuccess);
  // The submitter follows its run to the end.
  const auto& sent = sim.client_messages();
  REQUIRE_FALSE(sent.empty());
  CHECK(sent.back().identity == "client");
  CHECK(sent.back().type == actors::ClientType::kRunFinished);
}

TEST_CASE(
    "with the store failing a held submission is answered once space is back, and new ones "
    "are refused meanwhile",
    "[sim][client]") {
  Simulation sim;
  sim.AddWorker("w1");
  sim.RunUntilIdle();
  sim.FillStore();
  // Taken before any commit failed: held, like any accepted submission.
  const std::string held = sim.Submit({Task("a")});
  REQUIRE_FALSE(held.empty());
  sim.SchedulerTurn();
  CHECK(sim.failed_commits() == 1);
  sim.AdvanceBy(Millis(500), Millis(100));  // the retries fail too
  CHECK(sim.failed_commits() > 1);
  CHECK(sim.SubmitReplies().empty());
  CHECK_FALSE(sim.Execution(held + ".a").has_value());

  // While commits fail, a new submission is refused at once (not held).
  CHECK(sim.Submit({Task("b")}, "other").empty());
  auto refused = sim.SubmitReplies("other");
  REQUIRE(refused.size() == 1);
  CHECK(refused[0].code == static_cast<uint8_t>(StatusCode::kFull));
  CHECK(refused[0].run_id.empty());
  CHECK(refused[0].error.find("cannot write its journal") != std::string::npos);
  CHECK(sim.SubmitReplies().empty());

  sim.FreeStore();
  sim.AdvanceBy(Millis(1000), Millis(100));  // the next retry commits
  auto replies = sim.SubmitReplies();
  REQUIRE(replies.size() == 1);
  CHECK(replies[0].code == 0);
  CHECK(replies[0].run_id == held);
  CHECK(sim.Execution(held + ".a")->state == TaskState::kRunning);
  sim.Finish("w1", held + ".a");
  sim.RunUntilIdle();
  CHECK(sim.finished_runs().at(held) == RunStatus::kSuccess);
  CHECK(sim.finished_runs().size() == 1);
}

TEST_CASE(
    "after one worker leaves, another that goes silent is still lost on time and its "
    "execution runs elsewhere",
    "[sim][liveness]") {
  Simulation sim;  // heartbeat 100 ms, liveness 3: lost after 300 ms of silence
  sim.AddWorker("w2");
  const std::string run = sim.Submit({Task("a")});
  sim.RunUntilIdle();
  const std::string a = run + ".a";
  REQUIRE(sim.Execution(a)->worker_id == "w2");
  sim.AddWorker("w1");
  sim.AddWorker("w3");
  sim.AdvanceBy(Millis(200), Millis(10));  // every worker heard, in the reconciler's snapshot

  sim.worker("w2").partitioned = true;
  Micros last_heard = 0;
  for (const auto& w : sim.dispatcher().Seen().workers) {
    if (w.worker_id == "w2") last_heard = w.last_seen;
  }
  REQUIRE(last_heard != 0);
  const Micros lost_after = last_heard + 300 * kMicrosPerMilli;
  while (sim.clock().Steady() + 10 * kMicrosPerMilli <= lost_after) {
    sim.AdvanceBy(Millis(10), Millis(10));
  }
  CHECK(sim.dispatcher().HasWorker("w2"));  // silent, not yet for 3 heartbeats

  // w1 says BYE in the very turn w2's silence passes the limit: the
  // reconciler forgets w1 alone and still finds w2 silent.
  sim.clock().Advance(10 * kMicrosPerMilli);
  sim.Leave("w1");
  sim.RunUntilIdle();
  CHECK_FALSE(sim.dispatcher().HasWorker("w1"));
  CHECK_FALSE(sim.dispatcher().HasWorker("w2"));
  CHECK(sim.dispatcher().HasWorker("w3"));
  auto rec = sim.Execution(a);
  CHECK(rec->state == TaskState::kRunning);
  CHECK(rec->worker_id == "w3");
  CHECK(rec->attempt == 2);
  CHECK(rec->retries_used == 0);

  sim.Finish("w3", a);
  sim.RunUntilIdle();
  CHECK(sim.finished_runs().at(run) == RunStatus::kSuccess);
}

// Stepping the coordinator's wall clock (NTP, `date -s`) by 60 s either way
// while tasks run: no worker is declared lost, no deadline fires, nothing is
// dispatched twice, and a worker that stops is still found lost on time.
TEST_CASE(
    "a wall-clock step of 60 s either way with running tasks loses no worker and runs "
    "nothing twice",
    "[sim][clock]") {
  Simulation sim;  // heartbeat 100 ms, liveness 3: lost after 300 ms of silence
  sim.AddWorker("w1", 2);
  sim.AddWorker("w2", 2);
  std::vector<dsl::TaskSpec> tasks;
  for (const char* id : {"a", "b", "c", "d"}) {
    dsl::TaskSpec t = Task(id);
    t.timeout = Millis(5'000);  // coordinator deadline: 5 s + grace + slack
    tasks.push_back(t);
  }
  const std::string run = sim.Submit(tasks);
  sim.RunUntilIdle();
  auto all_running_once = [&] {
    for (const char* id : {"a", "b", "c", "d"}) {
      auto rec = sim.Execution(run + "." + id);
      REQUIRE(rec.has_value());
      CHECK(rec->state == TaskState::kRunning);
      CHECK(rec->attempt == 1);
      CHECK(rec->requeues == 0);
    }
  };
  all_running_once();

  for (Micros step : {+60 * kMicrosPerSecond, -120 * kMicrosPerSecond}) {
    sim.clock().StepWall(step);
    sim.AdvanceBy(Millis(1'000), Millis(50));
    CHECK(sim.dispatcher().HasWorker("w1"));
    CHECK(sim.dispatcher().HasWorker("w2"));
    all_running_once();
  }

  // With the wall clock 60 s behind, a worker that stops is lost within
  // liveness (300 ms) plus one heartbeat, not 60 s later.
  sim.worker("w2").partitioned = true;
  sim.AdvanceBy(Millis(500), Millis(10));
  CHECK_FALSE(sim.dispatcher().HasWorker("w2"));
  CHECK(sim.dispatcher().HasWorker("w1"));

  sim.worker("w1").partitioned = false;
  for (const char* id : {"a", "b", "c", "d"}) {
    auto rec = sim.Execution(run + "." + id);
    if (rec->worker_id == "w1") sim.Finish("w1", run + "." + id);
  }
  sim.RunUntilIdle();
  for (const char* id : {"a", "b", "c", "d"}) {
    auto rec = sim.Execution(run + "." + id);
    if (rec->state == TaskState::kRunning) sim.Finish(rec->worker_id, run + "." + id);
  }
  sim.RunUntilIdle();
  CHECK(sim.finished_runs().at(run) == RunStatus::kSuccess);
}

TEST_CASE("after a restart, a wall-clock step does not close the claim window early",
          "[sim][clock][recovery]") {
  SimOptions options;
  options.claim_window = Millis(400);
  Simulation sim(options);
  sim.AddWorker("w1");
  sim.AddWorker("w2");
  const std::string run = sim.Submit({Task("a"), Task("b")});
  sim.RunUntilIdle();
  const std::string a = run + ".a", b = run + ".b";
  const std::string holder_b = sim.Execution(b)->worker_id;

  sim.worker(holder_b).partitioned = true;  // b's worker is slow to come back
  sim.RestartCoordinator();
  sim.clock().StepWall(+60 * kMicrosPerSecond);  // right after the restart
  sim.AdvanceBy(Millis(200), Millis(50));
  CHECK(sim.dispatcher().unclaimed() == 1);  // b's window is still open
  sim.worker(holder_b).partitioned = false;
  sim.AdvanceBy(Millis(150), Millis(50));  // it says HELLO again within the window
  CHECK(sim.dispatcher().unclaimed() == 0);
  CHECK(sim.Execution(a)->attempt == 1);
  CHECK(sim.Execution(b)->attempt == 1);  // claimed, not run a second time
  CHECK(sim.Execution(b)->worker_id == holder_b);
  sim.Finish(sim.Execution(a)->worker_id, a);
  sim.Finish(holder_b, b);
  sim.RunUntilIdle();
  CHECK(sim.finished_runs().at(run) == RunStatus::kSuccess);
}

TEST_CASE("a wall-clock step back while the journal fails does not delay the next commit attempt",
          "[sim][clock][journal]") {
  Simulation sim;  // commit retries back off from 250 ms, at most 5 s apart
  sim.AddWorker("w1");
  const std::string run = sim.Submit({Task("a")});
  sim.RunUntilIdle();
  const std::string a = run + ".a";
  sim.Finish("w1", a);
  sim.DispatcherTurn();
  sim.FillStore();
  sim.SchedulerTurn();
  REQUIRE(sim.failed_commits() == 1);
  sim.clock().StepWall(-60 * kMicrosPerSecond);
  sim.FreeStore();
  // The retry is due 250 ms after the failure on the steady clock, not 60 s.
  sim.AdvanceBy(Millis(400), Millis(50));
  sim.RunUntilIdle();
  CHECK(sim.Execution(a)->state == TaskState::kSuccess);
  CHECK(sim.finished_runs().at(run) == RunStatus::kSuccess);
}

TEST_CASE(
    "with prefetch, one commit places a worker's queue and a freed slot starts the next "
    "without a round trip",
    "[sim][queue]") {
  Simulation sim;
  SimWorker& w1 = sim.AddWorker("w1", /*slots=*/1, /*prefetch=*/3);
  const std::string run =
      sim.Submit({Task("a"), Task("b"), Task("c"), Task("d"), Task("e"), Task("f")});
  sim.RunUntilIdle();
  // Four held by w1 (one running, three queued), each RUNNING on w1 in the
  // store before its DISPATCH left (the simulator checks that on delivery).
  CHECK(sim.dispatches().size() == 4);
  CHECK(w1.runner.running() == 1);
  CHECK(w1.core->queued() == 3);
  int running_on_w1 = 0;
  for (const char* t : {"a", "b", "c", "d", "e", "f"}) {
    auto rec = sim.Execution(run + "." + t);
    if (rec && rec->state == TaskState::kRunning && rec->worker_id == "w1") ++running_on_w1;
  }
  CHECK(running_on_w1 == 4);

  // A slot frees: the next queued one starts in the same worker turn, before
  // the coordinator has even seen the result.
  const std::string first = w1.runner.launched.at(0).exec_id;
  w1.runner.Complete(first, 1);
  sim.WorkerTurn("w1");
  CHECK(w1.runner.running() == 1);
  CHECK(w1.runner.launched.size() == 2);
  CHECK(w1.core->queued() == 2);

  // Everything finishes, one at a time.
  for (int guard = 0; guard < 20 && sim.finished_runs().count(run) == 0; ++guard) {
    sim.RunUntilIdle();
    for (const auto& req : std::vector<executor::ExecRequest>(w1.runner.launched)) {
      if (w1.runner.IsRunning(req.exec_id, req.attempt)) sim.Finish("w1", req.exec_id);
    }
  }
  sim.RunUntilIdle();
  CHECK(sim.finished_runs().at(run) == RunStatus::kSuccess);
  CHECK(w1.runner.launched.size() == 6);  // each once
}

TEST_CASE("a lost worker's queued executions are requeued with its running one and run once",
          "[sim][queue]") {
  Simulation sim;
  SimWorker& w1 = sim.AddWorker("w1", /*slots=*/1, /*prefetch=*/2);
  const std::string run = sim.Submit({Task("a"), Task("b"), Task("c")});
  sim.RunUntilIdle();
  REQUIRE(w1.core->queued() == 2);
  w1.partitioned = true;  // silent from now on
  sim.AdvanceBy(Millis(600), Millis(100));
  SimWorker& w2 = sim.AddWorker("w2", /*slots=*/3);
  sim.RunUntilIdle();
  for (const char* t : {"a", "b", "c"}) {
    const std::string id = run + "." + t;
    auto rec = sim.Execution(id);
    REQUIRE(rec.has_value());
    CHECK(rec->state == TaskState::kRunning);
    CHECK(rec->worker_id == "w2");
    CHECK(rec->attempt == 2);
    sim.Finish("w2", id);
  }
  sim.RunUntilIdle();
  CHECK(sim.finished_runs().at(run) == RunStatus::kSuccess);
  CHECK(w1.runner.launched.size() == 1);  // the queued two never started on w1
  CHECK(w2.runner.launched.size() == 3);
}

TEST_CASE("results that arrive together are journaled in one commit with what they release",
          "[sim][queue][group-commit]") {
  Simulation sim;
  SimWorker& w1 = sim.AddWorker("w1", /*slots=*/4, /*prefetch=*/4);
  const std::string run =
      sim.Submit({Task("a"), Task("b"), Task("c"), Task("d"), Task("e", {"a", "b", "c", "d"})});
  sim.RunUntilIdle();
  REQUIRE(w1.runner.running() == 4);
  for (const char* t : {"a", "b", "c", "d"}) REQUIRE(w1.runner.Complete(run + "." + t, 1));
  sim.WorkerTurn("w1");  // four RESULTs
  sim.DispatcherTurn();  // one batch to the scheduler
  const uint64_t before = sim.commits();
  sim.SchedulerTurn();  // four SUCCESS, e READY and placed: one commit
  CHECK(sim.commits() == before + 1);
  for (const char* t : {"a", "b", "c", "d"}) {
    CHECK(sim.Execution(run + "." + t)->state == TaskState::kSuccess);
  }
  CHECK(sim.Execution(run + ".e")->state == TaskState::kRunning);
}

// ---- clients through the scheduler's gate ------------------------------------

namespace {

// A pipeline `name` of shell tasks, as a registry kAdd request.
actors::RegistryRequest AddRequest(const std::string& name,
                                   const std::vector<dsl::TaskSpec>& tasks) {
  dsl::PipelineSpec spec;
  spec.version = "1.0";
  spec.name = name;
  spec.tasks = tasks;
  actors::RegistryRequest r;
  r.op = static_cast<uint8_t>(actors::RegistryOp::kAdd);
  r.name = name;
  r.pipeline_json = dsl::CanonicalJson(spec);
  r.pipeline_hash = dsl::ContentHash(spec);
  r.actor = "sim";
  return r;
}

}  // namespace

TEST_CASE("a query through the gate sees the committed state of a run", "[sim][client]") {
  Simulation sim;
  sim.AddWorker("w1");
  const std::string run = sim.Submit({Task("a")});
  // Not committed yet: the journal does not know it, and neither does a reader.
  auto before = sim.Query(actors::QueryKind::kRun, run);
  CHECK(before.code == static_cast<uint8_t>(StatusCode::kNotFound));
  sim.RunUntilIdle();
  auto status = sim.Query(actors::QueryKind::kStatus, run);
  REQUIRE(status.code == 0);
  auto doc = nlohmann::json::parse(status.json);
  CHECK(doc["run_id"] == run);
  CHECK(doc["tasks"]["a"]["state"] == "RUNNING");
  auto workers = nlohmann::json::parse(sim.Query(actors::QueryKind::kWorkers, "").json);
  REQUIRE(workers.is_array());
  REQUIRE(workers.size() == 1);
  CHECK(workers[0]["id"] == "w1");
}

TEST_CASE("a cancel through the gate ends the run and kills its running task on the worker",
          "[sim][client]") {
  Simulation sim;
  SimWorker& w1 = sim.AddWorker("w1");
  const std::string run = sim.Submit({Task("a"), Task("b", {"a"})});
  sim.RunUntilIdle();
  REQUIRE(w1.runner.IsRunning(run + ".a", 1));
  sim.Send(actors::ClientType::kCancelRun, actors::CancelRun(run, "not needed"));
  sim.RunUntilIdle();
  CHECK(sim.finished_runs().at(run) == RunStatus::kCanceled);
  CHECK(sim.Execution(run + ".b")->state == TaskState::kCanceled);
  CHECK_FALSE(w1.runner.IsRunning(run + ".a", 1));  // canceled on the worker
}

TEST_CASE("a registered pipeline's trigger is answered only once its run is durable",
          "[sim][client][registry]") {
  Simulation sim;
  sim.AddWorker("w1");
  sim.Send(actors::ClientType::kRegistry, AddRequest("sim.reg", {Task("a")}));
  CHECK(sim.Replies<actors::RegistryReply>(actors::ClientType::kRegistryReply).empty());
  sim.RunUntilIdle();
  auto added = sim.Replies<actors::RegistryReply>(actors::ClientType::kRegistryReply);
  REQUIRE(added.size() == 1);
  REQUIRE(added[0].code == 0);

  actors::RegistryRequest trigger;
  trigger.op = static_cast<uint8_t>(actors::RegistryOp::kTrigger);
  trigger.name = "sim.reg";
  trigger.key = "once";
  sim.Send(actors::ClientType::kRegistry, trigger);
  sim.Send(actors::ClientType::kRegistry, trigger);  // the same key: the same run
  sim.RunUntilIdle();
  auto replies = sim.Replies<actors::RegistryReply>(actors::ClientType::kRegistryReply);
  REQUIRE(replies.size() == 3);
  auto first = nlohmann::json::parse(replies[1].json),
       second = nlohmann::json::parse(replies[2].json);
  CHECK(first["run_id"] == second["run_id"]);
  const std::string run = first["run_id"];
  sim.Finish("w1", run + ".a");
  sim.RunUntilIdle();
  CHECK(sim.finished_runs().at(run) == RunStatus::kSuccess);
  CHECK(sim.finished_runs().size() == 1);
}

TEST_CASE("a trigger that follows its run gets the run's end pushed, as a submitter does",
          "[sim][registry][client]") {
  Simulation sim;
  sim.AddWorker("w1");
  sim.Send(actors::ClientType::kRegistry, AddRequest("sim.follow", {Task("a")}));
  sim.RunUntilIdle();
  auto start = [&](bool follow, const std::string& key) {
    actors::RegistryRequest trigger;
    trigger.op = static_cast<uint8_t>(actors::RegistryOp::kTrigger);
    trigger.name = "sim.follow";
    trigger.key = key;
    trigger.follow = follow;
    sim.Send(actors::ClientType::kRegistry, trigger);
    sim.RunUntilIdle();
    auto replies = sim.Replies<actors::RegistryReply>(actors::ClientType::kRegistryReply);
    return nlohmann::json::parse(replies.back().json)["run_id"].get<std::string>();
  };
  const std::string followed = start(true, "k1");
  const std::string unfollowed = start(false, "k2");
  sim.Finish("w1", followed + ".a");
  sim.RunUntilIdle();  // the worker's one slot then takes the other run's task
  sim.Finish("w1", unfollowed + ".a");
  sim.RunUntilIdle();
  CHECK(sim.finished_runs().size() == 2);
  std::vector<std::string> ends;
  for (const auto& f : sim.Replies<actors::RunFinished>(actors::ClientType::kRunFinished)) {
    ends.push_back(f.run_id);
  }
  CHECK(ends == std::vector<std::string>{followed});
  // The same key again finds the run, over already: nothing is subscribed.
  CHECK(start(true, "k1") == followed);
  CHECK(sim.Replies<actors::RunFinished>(actors::ClientType::kRunFinished).size() == 1);
}

TEST_CASE("garbage and another protocol version from a client get a refusal and change nothing",
          "[sim][client]") {
  Simulation sim;
  sim.AddWorker("w1");
  sim.RunUntilIdle();
  const uint64_t commits = sim.commits();
  sim.SendBytes(std::string("\x93\xff\x00garbage", 10), "hostile");
  auto refused = sim.SubmitReplies("hostile");
  REQUIRE(refused.size() == 1);
  CHECK(refused[0].code == static_cast<uint8_t>(StatusCode::kInvalidInput));

  actors::Query old;
  old.version = actors::kClientProtocolVersion + 1;
  sim.Send(actors::ClientType::kQuery, old, "newer");
  auto answer = sim.Replies<actors::QueryReply>(actors::ClientType::kQueryReply, "newer");
  REQUIRE(answer.size() == 1);
  CHECK(answer[0].code == static_cast<uint8_t>(StatusCode::kUnsupported));
  CHECK(answer[0].error.find("client protocol version") != std::string::npos);
  sim.RunUntilIdle();
  CHECK(sim.commits() == commits);
  CHECK(sim.scheduler().active_runs() == 0);
}
