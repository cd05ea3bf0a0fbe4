// One contract, two stores: the LMDB journal and the in-memory twin the tests
// and the simulator use must read back the same things in the same order.

#include <catch2/catch.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "storage/faulty_run_store.h"
#include "storage/journal.h"
#include "storage/memory_run_store.h"
#include "storage/run_batch.h"
#include "tests/storage/storage_test_util.h"

namespace apollo11::storage {
namespace {

RunRecord Run(const std::string& id, RunStatus status, Micros created_at) {
  RunRecord r;
  r.run_id = id;
  r.pipeline_name = "p";
  r.pipeline_hash = "sha256:p";
  r.status = status;
  r.created_at = created_at;
  return r;
}

TransitionRecord Tr(const std::string& run, const std::string& task, TaskState to) {
  TransitionRecord t;
  t.run_id = run;
  t.task_id = task;
  t.from = TaskState::kPending;
  t.to = to;
  return t;
}

void CheckContract(RunLog& log, RunReader& store) {
  RunBatch batch;
  batch.Append(Tr("r1", "a", TaskState::kReady));
  batch.Append(Tr("r2", "a", TaskState::kReady));
  batch.Append(Tr("r1", "b", TaskState::kReady));
  for (const char* id : {"r1.b", "r1.a", "r2.a", "r10.a"}) {
    ExecutionRecord x;
    x.exec_id = id;
    x.run_id = std::string(id).substr(0, std::string(id).find('.'));
    x.state = TaskState::kReady;
    batch.PutExecution(x);
  }
  batch.PutRun(Run("r2", RunStatus::kRunning, 200));
  batch.PutRun(Run("r1", RunStatus::kSuccess, 100));
  batch.PutRun(Run("r3", RunStatus::kRunning, 300));
  batch.PutPipeline("sha256:p", "{}");
  for (Micros d : {40, 10, 30, 20}) batch.RecordDuration("p/a", d);
  REQUIRE(log.Commit(batch).ok());
  CHECK(batch.empty());
  CHECK(log.last_seq() == 3);

  auto history = store.HistoryOfRun("r1");
  REQUIRE(history.ok());
  REQUIRE(history->size() == 2);
  CHECK((*history)[0].seq == 1);
  CHECK((*history)[1].seq == 3);
  CHECK((*history)[1].exec_id == "r1.b");
  auto of_exec = store.HistoryOfExecution("r2.a");
  REQUIRE(of_exec.ok());
  REQUIRE(of_exec->size() == 1);
  CHECK((*of_exec)[0].seq == 2);

  auto execs = store.ExecutionsOfRun("r1");
  REQUIRE(execs.ok());
  REQUIRE(execs->size() == 2);
  CHECK((*execs)[0].exec_id == "r1.a");
  CHECK((*execs)[1].exec_id == "r1.b");
  // By run id, not by prefix: "r1" has records, "r" and "r3" none (r10's
  // and r1's keys follow "r." and "r3." without matching them).
  CHECK(*store.HasExecutionsOf("r1"));
  CHECK(*store.HasExecutionsOf("r10"));
  CHECK_FALSE(*store.HasExecutionsOf("r"));
  CHECK_FALSE(*store.HasExecutionsOf("r3"));
  CHECK_FALSE(*store.HasExecutionsOf("r9"));

  auto listed = store.ListRuns(2);
  REQUIRE(listed.ok());
  REQUIRE(listed->size() == 2);
  CHECK((*listed)[0].run_id == "r3");
  CHECK((*listed)[1].run_id == "r2");
  auto unfinished = store.UnfinishedRuns();
  REQUIRE(unfinished.ok());
  REQUIRE(unfinished->size() == 2);
  CHECK((*unfinished)[0].run_id == "r2");
  CHECK((*unfinished)[1].run_id == "r3");

  auto p50 = store.DurationP50("p/a");
  REQUIRE(p50.ok());
  CHECK(**p50 == 25);  // mean of the two middle ones
  auto none = store.DurationP50("p/none");
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
  auto snapshot = store.GetPipeline("sha256:p");
  REQUIRE(snapshot.ok());
  CHECK(**snapshot == "{}");
  auto missing = store.GetExecution("r9.a");
  REQUIRE(missing.ok());
  CHECK_FALSE(missing->has_value());

  // A run that ends leaves the unfinished list.
  batch.PutRun(Run("r2", RunStatus::kFailed, 200));
  REQUIRE(log.Commit(batch).ok());
  CHECK(log.last_seq() == 3);
  unfinished = store.UnfinishedRuns();
  REQUIRE(unfinished.ok());
  REQUIRE(unfinished->size() == 1);
  CHECK((*unfinished)[0].run_id == "r3");

  auto epoch = log.Epoch();
  REQUIRE(epoch.ok());
  CHECK(*epoch == 0);
  CHECK(*log.BumpEpoch() == 1);
  CHECK(*log.BumpEpoch() == 2);
  CHECK(*log.Epoch() == 2);

  // election: an HA term's epoch must be above every earlier one.
  auto term = log.BeginTerm(40);
  REQUIRE(term.ok());
  CHECK(*term == 40);
  CHECK(*log.Epoch() == 40);
  CHECK(log.BeginTerm(40).status().code() == StatusCode::kInvalidInput);
  CHECK(log.BeginTerm(7).status().code() == StatusCode::kInvalidInput);
  CHECK(*log.Epoch() == 40);
  CHECK(*log.BumpEpoch() == 41);
}

// A created run is never overwritten by another run with the same id: the
// whole commit is refused and nothing of it applied.
void CheckCreateRefusesOverwrite(RunStore& store) {
  CHECK(*store.LastCreatedRunId() == "");
  RunBatch batch;
  batch.CreateRun(Run("r1", RunStatus::kSuccess, 100));
  REQUIRE(store.Commit(batch).ok());
  CHECK(*store.LastCreatedRunId() == "r1");

  batch.Append(Tr("r1", "a", TaskState::kReady));
  batch.CreateRun(Run("r1", RunStatus::kRunning, 900));
  Status refused = store.Commit(batch);
  CHECK(refused.code() == StatusCode::kInvalidInput);
  CHECK(refused.message().find("r1") != std::string::npos);
  CHECK(refused.message().find("overwrit") != std::string::npos);
  CHECK(batch.transitions() == 1);  // kept, as after any failed commit
  CHECK(store.last_seq() == 0);
  auto kept = store.GetRun("r1");
  REQUIRE(kept.ok());
  REQUIRE(kept->has_value());
  CHECK((*kept)->status == RunStatus::kSuccess);
  CHECK((*kept)->created_at == 100);
  auto runs = store.ListRuns(10);
  REQUIRE(runs.ok());
  CHECK(runs->size() == 1);
  batch.Clear();

  // Two new runs with one id in one batch: refused as well.
  batch.CreateRun(Run("r2", RunStatus::kRunning, 200));
  batch.CreateRun(Run("r2", RunStatus::kRunning, 201));
  CHECK(store.Commit(batch).code() == StatusCode::kInvalidInput);
  CHECK_FALSE(store.GetRun("r2")->has_value());
  batch.Clear();

  // An update of an existing run (PutRun) still replaces it.
  batch.PutRun(Run("r1", RunStatus::kFailed, 100));
  REQUIRE(store.Commit(batch).ok());
  CHECK((*store.GetRun("r1"))->status == RunStatus::kFailed);
  CHECK(*store.LastCreatedRunId() == "r1");
}

TEST_CASE("a second run record with the same id is refused by the journal",
          "[storage][run_store]") {
  testing::TempDir tmp;
  {
    auto journal = Journal::Open(tmp.path(), {});
    REQUIRE(journal.ok());
    CheckCreateRefusesOverwrite(**journal);
  }
  // The last created id survives a reopen.
  auto reopened = Journal::Open(tmp.path(), {});
  REQUIRE(reopened.ok());
  CHECK(*(*reopened)->LastCreatedRunId() == "r1");
}

TEST_CASE("a second run record with the same id is refused by the in-memory store",
          "[storage][run_store]") {
  MemoryRunStore store;
  CheckCreateRefusesOverwrite(store);
}

TEST_CASE("the journal keeps the RunStore contract", "[storage][run_store]") {
  testing::TempDir tmp;
  auto journal = Journal::Open(tmp.path(), {});
  REQUIRE(journal.ok());
  CheckContract(**journal, **journal);
}

TEST_CASE("the in-memory store keeps the RunStore contract", "[storage][run_store]") {
  MemoryRunStore store;
  CheckContract(store, store);
  MemoryRunStore base;
  FaultyRunStore faulty(&base);  // while no fault is injected, it is its base
  CheckContract(faulty, faulty);
}

// registry: versions, states and trigger keys read back the same from both
// stores; a version and a trigger key keep their first value.
void CheckRegistryContract(RunLog& log, RegistryStore& store) {
  CHECK(store.ListPipelineStates()->empty());
  CHECK_FALSE(store.GetPipelineState("etl.daily")->has_value());
  CHECK(store.PipelineVersions("etl.daily")->empty());
  CHECK_FALSE(store.RunOfTriggerKey("etl.daily", "k1")->has_value());

  RunBatch batch;
  for (uint32_t v : {2u, 1u}) {
    PipelineVersionRecord r{"etl.daily", v, "sha256:h" + std::to_string(v), 10 * v, "cli"};
    batch.PutPipelineVersion(r);
  }
  batch.PutPipelineVersion({"etl", 1, "sha256:other", 5, "http"});
  batch.PutPipelineState({"etl.daily", 2, 2, false, 20, ""});
  batch.PutPipelineState({"etl", 1, 1, true, 30, "user"});
  batch.PutTriggerKey({"etl.daily", "k1", "run-1", 40});
  REQUIRE(log.Commit(batch).ok());
  CHECK(batch.empty());
  CHECK(log.last_seq() == 0);  // registry entries are not transitions

  auto versions = store.PipelineVersions("etl.daily");
  REQUIRE(versions.ok());
  REQUIRE(versions->size() == 2);
  CHECK((*versions)[0].version == 1);
  CHECK((*versions)[1].version == 2);
  CHECK((*versions)[1].hash == "sha256:h2");
  CHECK((*versions)[1].added_at == 20);
  CHECK((*versions)[1].added_by == "cli");
  CHECK(store.PipelineVersions("etl")->size() == 1);
  CHECK(store.PipelineVersions("et")->empty());

  auto states = store.ListPipelineStates();
  REQUIRE(states.ok());
  REQUIRE(states->size() == 2);
  CHECK((*states)[0].name == "etl");
  CHECK((*states)[0].paused);
  CHECK((*states)[0].paused_by == "user");
  CHECK((*states)[1].name == "etl.daily");
  CHECK((*states)[1].active == 2);

  batch.PutPipelineVersion({"etl.daily", 1, "sha256:changed", 99, "x"});
  batch.PutTriggerKey({"etl.daily", "k1", "run-2", 50});
  batch.PutTriggerKey({"etl", "k1", "run-3", 50});
  batch.PutPipelineState({"etl.daily", 0, 2, true, 60, "ops"});
  REQUIRE(log.Commit(batch).ok());
  CHECK((*store.PipelineVersions("etl.daily"))[0].hash == "sha256:h1");
  CHECK(**store.RunOfTriggerKey("etl.daily", "k1") == "run-1");
  CHECK(**store.RunOfTriggerKey("etl", "k1") == "run-3");
  auto state = store.GetPipelineState("etl.daily");
  REQUIRE(state.ok());
  REQUIRE(state->has_value());
  CHECK((*state)->active == 0);
  CHECK((*state)->latest == 2);
  CHECK((*state)->paused);
  CHECK((*state)->changed_at == 60);
}

TEST_CASE("the journal keeps the registry contract, also after a reopen",
          "[storage][run_store][registry]") {
  testing::TempDir tmp;
  {
    auto journal = Journal::Open(tmp.path(), {});
    REQUIRE(journal.ok());
    CheckRegistryContract(**journal, **journal);
  }
  auto reopened = Journal::Open(tmp.path(), {});
  REQUIRE(reopened.ok());
  CHECK((*reopened)->PipelineVersions("etl.daily")->size() == 2);
  CHECK(**(*reopened)->RunOfTriggerKey("etl.daily", "k1") == "run-1");
}

TEST_CASE("the in-memory store keeps the registry contract", "[storage][run_store][registry]") {
  MemoryRunStore store;
  CheckRegistryContract(store, store);
  MemoryRunStore base;
  FaultyRunStore faulty(&base);
  CheckRegistryContract(faulty, faulty);
}

TEST_CASE("a run record keeps its pinned pipeline version", "[storage][run_store][registry]") {
  testing::TempDir tmp;
  auto journal = Journal::Open(tmp.path(), {});
  REQUIRE(journal.ok());
  RunRecord r = Run("r1", RunStatus::kRunning, 1);
  r.pipeline_version = 7;
  RunBatch batch;
  batch.CreateRun(r);
  REQUIRE((*journal)->Commit(batch).ok());
  CHECK((*(*journal)->GetRun("r1"))->pipeline_version == 7);
}

TEST_CASE("an injected commit failure applies nothing and keeps the batch",
          "[storage][run_store]") {
  MemoryRunStore memory;
  FaultyRunStore store(&memory);
  store.FailNextCommits(2);
  RunBatch batch;
  batch.Append(Tr("r1", "a", TaskState::kReady));
  batch.PutRun(Run("r1", RunStatus::kRunning, 1));
  for (int i = 0; i < 2; ++i) {
    Status s = store.Commit(batch);
    CHECK(s.code() == StatusCode::kFull);
    CHECK(batch.transitions() == 1);
    CHECK(store.last_seq() == 0);
    CHECK_FALSE(memory.GetRun("r1")->has_value());
  }
  REQUIRE(store.Commit(batch).ok());
  CHECK(store.last_seq() == 1);
  CHECK(memory.GetRun("r1")->has_value());
  CHECK(store.failed_commits() == 2);

  store.FailCommits(Status::Io("EIO (injected)"));
  batch.Append(Tr("r1", "b", TaskState::kReady));
  CHECK(store.Commit(batch).code() == StatusCode::kIo);
  CHECK(store.Commit(batch).code() == StatusCode::kIo);
  store.Heal();
  REQUIRE(store.Commit(batch).ok());
  CHECK(store.last_seq() == 2);
}

// Commits three batches on `leader` (the second without transitions) and
// ships each to `replica` with ApplyReplicated, checking the refusals on the
// way: the replica ends equal to the leader.
void CheckReplicatedApply(RunStore& leader, RunStore& replica) {
  std::vector<RunBatch> shipped(3);
  std::vector<uint64_t> first_seqs;
  shipped[0].Append(Tr("r1", "a", TaskState::kReady));
  shipped[0].Append(Tr("r1", "b", TaskState::kReady));
  shipped[0].CreateRun(Run("r1", RunStatus::kRunning, 10));
  shipped[1].PutRun(Run("r1", RunStatus::kRunning, 10));
  shipped[1].RecordDuration("p/a", 5);
  shipped[2].Append(Tr("r1", "a", TaskState::kSuccess));
  shipped[2].PutRun(Run("r1", RunStatus::kSuccess, 10));
  REQUIRE(leader.BeginTerm(7).ok());  // the leader's batches carry its epoch
  for (RunBatch& b : shipped) {
    first_seqs.push_back(leader.last_seq() + 1);
    RunBatch copy = b;
    REQUIRE(leader.Commit(copy).ok());
  }
  CHECK(leader.last_batch() == 3);
  CHECK(leader.last_seq() == 3);
  CHECK(leader.last_batch_epoch() == 7);

  // Batch 2 before batch 1: a gap, refused, nothing applied, batch kept.
  RunBatch second = shipped[1];
  CHECK(replica.ApplyReplicated(2, first_seqs[1], 7, second).code() == StatusCode::kInvalidInput);
  CHECK_FALSE(second.empty());
  CHECK(replica.last_batch() == 0);
  CHECK_FALSE(replica.GetRun("r1")->has_value());
  // A first seq that does not follow the replica's: refused.
  RunBatch first = shipped[0];
  CHECK(replica.ApplyReplicated(1, 7, 7, first).code() == StatusCode::kInvalidInput);
  CHECK(replica.last_seq() == 0);
  for (size_t i = 0; i < shipped.size(); ++i) {
    RunBatch b = shipped[i];
    REQUIRE(replica.ApplyReplicated(i + 1, first_seqs[i], 7, b).ok());
    CHECK(b.empty());
  }
  // A replay of an applied batch: refused.
  RunBatch replay = shipped[2];
  CHECK(replica.ApplyReplicated(3, first_seqs[2], 7, replay).code() == StatusCode::kInvalidInput);
  CHECK(replica.last_batch() == 3);
  CHECK(replica.last_seq() == 3);
  CHECK(replica.last_batch_epoch() == 7);
  CHECK(*replica.Epoch() == 0);  // applying is not a term of the replica's
  auto mine = leader.HistoryOfRun("r1");
  auto theirs = replica.HistoryOfRun("r1");
  REQUIRE(mine.ok());
  REQUIRE(theirs.ok());
  REQUIRE(mine->size() == theirs->size());
  for (size_t i = 0; i < mine->size(); ++i) {
    CHECK((*mine)[i].seq == (*theirs)[i].seq);
    CHECK((*mine)[i].exec_id == (*theirs)[i].exec_id);
    CHECK((*mine)[i].to == (*theirs)[i].to);
  }
  CHECK((*replica.GetRun("r1"))->status == RunStatus::kSuccess);
  CHECK(*replica.LastCreatedRunId() == "r1");
  CHECK(**replica.DurationP50("p/a") == 5);
  // The replica, once promoted, numbers its own commits after the leader's,
  // in its own term.
  REQUIRE(replica.BeginTerm(9).ok());
  RunBatch own;
  own.Append(Tr("r1", "c", TaskState::kReady));
  REQUIRE(replica.Commit(own).ok());
  CHECK(replica.last_seq() == 4);
  CHECK(replica.last_batch() == 4);
  CHECK(replica.last_batch_epoch() == 9);
}

TEST_CASE("a replicated batch is applied by the journal with the leader's numbering",
          "[storage][run_store][replication]") {
  testing::TempDir a, b;
  {
    auto leader = Journal::Open(a.path(), {});
    auto replica = Journal::Open(b.path(), {});
    REQUIRE(leader.ok());
    REQUIRE(replica.ok());
    CheckReplicatedApply(**leader, **replica);
  }
  // The batch count survives a reopen.
  auto reopened = Journal::Open(b.path(), {});
  REQUIRE(reopened.ok());
  CHECK((*reopened)->last_batch() == 4);
  CHECK((*reopened)->last_seq() == 4);
  CHECK((*reopened)->last_batch_epoch() == 9);
}

TEST_CASE("a replicated batch is applied by the in-memory store with the leader's numbering",
          "[storage][run_store][replication]") {
  MemoryRunStore leader, replica;
  CheckReplicatedApply(leader, replica);
}

TEST_CASE("the journal and the in-memory store replicate to each other",
          "[storage][run_store][replication]") {
  testing::TempDir a;
  auto journal = Journal::Open(a.path(), {});
  REQUIRE(journal.ok());
  MemoryRunStore memory;
  CheckReplicatedApply(**journal, memory);
}

TEST_CASE("an injected failure refuses a replicated batch and keeps it",
          "[storage][run_store][replication]") {
  MemoryRunStore memory;
  FaultyRunStore store(&memory);
  store.FailNextCommits(1);
  RunBatch batch;
  batch.Append(Tr("r1", "a", TaskState::kReady));
  CHECK(store.ApplyReplicated(1, 1, 3, batch).code() == StatusCode::kFull);
  CHECK(batch.transitions() == 1);
  CHECK(store.last_batch() == 0);
  REQUIRE(store.ApplyReplicated(1, 1, 3, batch).ok());
  CHECK(store.last_batch() == 1);
  CHECK(store.last_batch_epoch() == 3);
  CHECK(store.last_seq() == 1);
}

TEST_CASE("a journal copy holds a consistent position and takes the stream after it",
          "[storage][run_store][replication]") {
  testing::TempDir a, b;
  auto leader = Journal::Open(a.path(), {});
  REQUIRE(leader.ok());
  REQUIRE((*leader)->BeginTerm(4).ok());
  RunBatch batch;
  batch.Append(Tr("r1", "a", TaskState::kReady));
  batch.CreateRun(Run("r1", RunStatus::kRunning, 10));
  REQUIRE((*leader)->Commit(batch).ok());
  batch.PutRun(Run("r1", RunStatus::kRunning, 10));
  REQUIRE((*leader)->Commit(batch).ok());
  auto position = (*leader)->CopyTo(b.path() + "/copy");
  REQUIRE(position.ok());
  CHECK(position->batch == 2);
  CHECK(position->seq == 1);
  CHECK(position->batch_epoch == 4);
  auto copy = Journal::Open(b.path() + "/copy", {});
  REQUIRE(copy.ok());
  CHECK((*copy)->last_batch() == 2);
  CHECK((*copy)->GetRun("r1")->has_value());
  batch.Append(Tr("r1", "a", TaskState::kSuccess));
  RunBatch shipped = batch;
  REQUIRE((*leader)->Commit(batch).ok());
  REQUIRE((*copy)->ApplyReplicated(3, 2, 4, shipped).ok());
  CHECK((*copy)->HistoryOfRun("r1")->size() == 2);
}

TEST_CASE("a journal copy installed over a journal keeps the journal's newer term",
          "[storage][run_store][replication]") {
  testing::TempDir a, b;
  auto leader = Journal::Open(a.path(), {});
  auto standby = Journal::Open(b.path() + "/journal", {});
  REQUIRE(leader.ok());
  REQUIRE(standby.ok());
  REQUIRE((*leader)->BeginTerm(4).ok());
  RunBatch batch;
  batch.Append(Tr("r1", "a", TaskState::kReady));
  REQUIRE((*leader)->Commit(batch).ok());
  // The standby began a term (it won an election) while a copy from the old
  // leader was on its way: the copy's data, the standby's epoch.
  REQUIRE((*standby)->BeginTerm(6).ok());
  REQUIRE((*leader)->CopyTo(b.path() + "/copy").ok());
  REQUIRE((*standby)->InstallCopy(b.path() + "/copy/data.mdb").ok());
  CHECK((*standby)->last_batch() == 1);
  CHECK((*standby)->last_batch_epoch() == 4);
  CHECK(*(*standby)->Epoch() == 6);
  CHECK((*standby)->BeginTerm(6).status().code() == StatusCode::kInvalidInput);
  // A copy from a newer term than the journal's raises it.
  REQUIRE((*leader)->BeginTerm(8).ok());
  REQUIRE((*leader)->CopyTo(b.path() + "/copy2").ok());
  REQUIRE((*standby)->InstallCopy(b.path() + "/copy2/data.mdb").ok());
  CHECK(*(*standby)->Epoch() == 8);
}

}  // namespace
}  // namespace apollo11::storage

namespace apollo11::storage {
namespace {

FireRecord Fire(const std::string& pipeline, Micros at, FireState state) {
  FireRecord f;
  f.pipeline = pipeline;
  f.scheduled_at = at;
  f.state = state;
  f.run_id = state == FireState::kStarted ? pipeline + "-run" : "";
  f.origin = "schedule";
  return f;
}

// Schedules and fires (sched): stored, replaced, listed by time.
void CheckScheduleContract(RunLog& log, ScheduleStore& store) {
  CHECK(store.Schedules()->empty());
  CHECK_FALSE(store.LastFire("a.p")->has_value());
  RunBatch batch;
  batch.PutSchedule(ScheduleRecord{"a.p", "h1", "{}", 5});
  batch.PutSchedule(ScheduleRecord{"a.o", "h2", "{}", 6});
  batch.PutFire(Fire("a.p", -10, FireState::kSkipped));
  batch.PutFire(Fire("a.p", 20, FireState::kQueued));
  batch.PutFire(Fire("a.p", 300, FireState::kStarted));
  batch.PutFire(Fire("a.o", 1, FireState::kStarted));
  batch.PutFire(Fire("a.pp", 1000, FireState::kStarted));
  REQUIRE(log.Commit(batch).ok());
  RunBatch replace;
  replace.PutSchedule(ScheduleRecord{"a.p", "h3", "{\"x\":1}", 7});
  replace.PutFire(Fire("a.p", 20, FireState::kStarted));
  REQUIRE(log.Commit(replace).ok());

  auto schedules = store.Schedules();
  REQUIRE(schedules.ok());
  REQUIRE(schedules->size() == 2);
  CHECK((*schedules)[0] == ScheduleRecord{"a.o", "h2", "{}", 6});
  CHECK((*schedules)[1] == ScheduleRecord{"a.p", "h3", "{\"x\":1}", 7});
  auto fires = store.Fires("a.p", -100, 1000);
  REQUIRE(fires.ok());
  REQUIRE(fires->size() == 3);
  CHECK((*fires)[0] == Fire("a.p", -10, FireState::kSkipped));
  CHECK((*fires)[1] == Fire("a.p", 20, FireState::kStarted));
  CHECK((*fires)[2].scheduled_at == 300);
  CHECK(store.Fires("a.p", 0, 299)->size() == 1);
  CHECK(**store.LastFire("a.p") == Fire("a.p", 300, FireState::kStarted));
  CHECK((*store.LastFire("a.pp"))->scheduled_at == 1000);
  CHECK_FALSE(store.LastFire("a")->has_value());
}

TEST_CASE("schedules and fires are kept by the journal and the in-memory store",
          "[storage][run_store]") {
  MemoryRunStore memory;
  CheckScheduleContract(memory, memory);
  testing::TempDir tmp;
  {
    auto journal = Journal::Open(tmp.path(), {});
    REQUIRE(journal.ok());
    CheckScheduleContract(**journal, **journal);
  }
  auto reopened = Journal::Open(tmp.path(), {});
  REQUIRE(reopened.ok());
  CHECK((*(*reopened)->LastFire("a.p"))->scheduled_at == 300);
  MemoryRunStore base;
  FaultyRunStore faulty(&base);
  CheckScheduleContract(faulty, faulty);
}

// A record is encoded when it is put: what the writer changes afterwards (the
// scheduler keeps updating its records while a failed commit is retried) is
// not in the batch until it is put again, and the last put wins.
void CheckPutEncodesNow(RunStore& store) {
  RunBatch batch;
  ExecutionRecord x;
  x.exec_id = "r1.a";
  x.run_id = "r1";
  x.task_id = "a";
  x.state = TaskState::kReady;
  batch.PutExecution(x);
  x.state = TaskState::kRunning;
  x.worker_id = "w1";
  REQUIRE(store.Commit(batch).ok());
  auto got = store.GetExecution("r1.a");
  REQUIRE(got.ok());
  REQUIRE(got->has_value());
  CHECK((*got)->state == TaskState::kReady);
  CHECK((*got)->worker_id.empty());
  batch.PutExecution(x);
  x.state = TaskState::kSuccess;
  batch.PutExecution(x);
  REQUIRE(store.Commit(batch).ok());
  got = store.GetExecution("r1.a");
  REQUIRE(got.ok());
  CHECK((*got)->state == TaskState::kSuccess);
  CHECK((*got)->worker_id == "w1");
}

TEST_CASE("an execution record is encoded when it is put, in both stores", "[storage][run_batch]") {
  testing::TempDir tmp;
  auto journal = Journal::Open(tmp.path(), {});
  REQUIRE(journal.ok());
  CheckPutEncodesNow(**journal);
  MemoryRunStore memory;
  CheckPutEncodesNow(memory);
}

TEST_CASE("a batch grown by a burst gives its buffers back when it is cleared",
          "[storage][run_batch]") {
  RunBatch batch;
  ExecutionRecord x;
  x.run_id = "r";
  batch.ReserveExecutions(3);
  CHECK(batch.execution_records().capacity() >= 3);
  for (int i = 0; i < 3; ++i) batch.PutExecution(x);
  batch.Clear();
  CHECK(batch.execution_records().empty());
  CHECK(batch.execution_records().capacity() >= 3);  // a small buffer is kept for the next turn
  for (int i = 0; i < 20000; ++i) {
    batch.PutExecution(x);
    batch.Append(Tr("r", "t" + std::to_string(i), TaskState::kReady));
  }
  batch.Clear();
  CHECK(batch.execution_records().capacity() == 0);
  CHECK(batch.transition_records().capacity() == 0);
  CHECK(batch.empty());
}

}  // namespace
}  // namespace apollo11::storage
