#include "storage/journal.h"

#include <lmdb.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "common/ids.h"
#include "storage/record_codec.h"
#include "tests/storage/storage_test_util.h"

namespace apollo11::storage {
namespace {

using testing::MakeTransition;
using testing::TempDir;

std::unique_ptr<Journal> OpenOrDie(const std::string& dir, JournalOptions options = {}) {
  auto journal = Journal::Open(dir, options);
  INFO(journal.status().ToString());
  REQUIRE(journal.ok());
  return std::move(journal).value();
}

ExecutionRecord SampleExecution() {
  ExecutionRecord x;
  x.exec_id = "r1.fetch";
  x.run_id = "r1";
  x.task_id = "fetch";
  x.attempt = 3;
  x.state = TaskState::kRetrying;
  x.worker_id = "w7";
  x.exit_code = -9;
  x.ready_at = 10;
  x.started_at = 20;
  x.finished_at = 30;
  x.next_retry_at = 40;
  x.deadline = -50;
  x.retries_used = 2;
  x.requeues = 1;
  x.error = "exit code 137";
  x.output = std::string("binary\0tail", 11);
  x.trace_id = "00ff00ff00ff00ff";
  return x;
}

RunRecord SampleRun(const std::string& id, RunStatus status, Micros created_at) {
  RunRecord r;
  r.run_id = id;
  r.pipeline_name = "order.sync";
  r.pipeline_hash = "sha256:abc";
  r.status = status;
  r.created_at = created_at;
  r.started_at = created_at + 1;
  r.finished_at = IsFinal(status) ? created_at + 2 : 0;
  r.task_count = 3;
  r.reason = IsFinal(status) ? "all tasks finished" : "";
  r.params = {{"date", "2026-11-29"}, {"region", "eu"}};
  return r;
}

TEST_CASE("every record reads back exactly as committed", "[storage]") {
  TempDir tmp;
  auto journal = OpenOrDie(tmp.path());
  Journal::Batch batch;
  TransitionRecord t = MakeTransition("r1", "fetch", TaskState::kRunning, TaskState::kFailed, 123);
  t.attempt = 2;
  t.reason = "exit code 1";
  t.actor = "worker w1";
  batch.Append(t);
  TransitionRecord odd = t;  // an exec id that is not "<run>.<task>" survives too
  odd.exec_id = "custom-exec";
  batch.Append(odd);
  batch.PutExecution(SampleExecution());
  batch.PutRun(SampleRun("r1", RunStatus::kRunning, 1000));
  batch.PutPipeline("sha256:abc", R"({"name":"order.sync"})");
  REQUIRE(batch.transitions() == 2);
  REQUIRE(journal->Commit(batch).ok());
  CHECK(batch.empty());

  auto history = journal->HistoryOfRun("r1");
  REQUIRE(history.ok());
  REQUIRE(history->size() == 2);
  const TransitionRecord& got = (*history)[0];
  CHECK(got.seq == 1);
  CHECK(got.ts == 123);
  CHECK(got.run_id == "r1");
  CHECK(got.task_id == "fetch");
  CHECK(got.exec_id == "r1.fetch");
  CHECK(got.attempt == 2);
  CHECK(got.from == TaskState::kRunning);
  CHECK(got.to == TaskState::kFailed);
  CHECK(got.reason == "exit code 1");
  CHECK(got.actor == "worker w1");
  CHECK((*history)[1].exec_id == "custom-exec");
  CHECK((*history)[1].seq == 2);

  auto exec = journal->GetExecution("r1.fetch");
  REQUIRE(exec.ok());
  REQUIRE(exec->has_value());
  const ExecutionRecord want = SampleExecution();
  const ExecutionRecord& x = **exec;
  CHECK(x.exec_id == want.exec_id);
  CHECK(x.run_id == want.run_id);
  CHECK(x.task_id == want.task_id);
  CHECK(x.attempt == want.attempt);
  CHECK(x.state == want.state);
  CHECK(x.worker_id == want.worker_id);
  CHECK(x.exit_code == want.exit_code);
  CHECK(x.ready_at == want.ready_at);
  CHECK(x.started_at == want.started_at);
  CHECK(x.finished_at == want.finished_at);
  CHECK(x.next_retry_at == want.next_retry_at);
  CHECK(x.deadline == want.deadline);
  CHECK(x.retries_used == want.retries_used);
  CHECK(x.requeues == want.requeues);
  CHECK(x.error == want.error);
  CHECK(x.output == want.output);
  CHECK(x.trace_id == want.trace_id);

  auto run = journal->GetRun("r1");
  REQUIRE(run.ok());
  REQUIRE(run->has_value());
  const RunRecord want_run = SampleRun("r1", RunStatus::kRunning, 1000);
  CHECK((*run)->run_id == "r1");
  CHECK((*run)->pipeline_name == want_run.pipeline_name);
  CHECK((*run)->pipeline_hash == want_run.pipeline_hash);
  CHECK((*run)->status == RunStatus::kRunning);
  CHECK((*run)->created_at == 1000);
  CHECK((*run)->started_at == 1001);
  CHECK((*run)->task_count == 3);
  CHECK((*run)->params == want_run.params);

  auto pipeline = journal->GetPipeline("sha256:abc");
  REQUIRE(pipeline.ok());
  CHECK(pipeline->value_or("") == R"({"name":"order.sync"})");

  CHECK(journal->GetRun("nope")->has_value() == false);
  CHECK(journal->GetExecution("r1.nope")->has_value() == false);
  CHECK(journal->GetPipeline("nope")->has_value() == false);
  CHECK(journal->HistoryOfRun("nope")->empty());
  CHECK(journal->HistoryOfRun("")->empty());
}

TEST_CASE("a pipeline snapshot is immutable once stored", "[storage]") {
  TempDir tmp;
  auto journal = OpenOrDie(tmp.path());
  Journal::Batch batch;
  batch.PutPipeline("h1", "first");
  REQUIRE(journal->Commit(batch).ok());
  batch.PutPipeline("h1", "second");
  REQUIRE(journal->Commit(batch).ok());
  CHECK(journal->GetPipeline("h1")->value_or("") == "first");
}

TEST_CASE("seq numbers are gap-free across batches and across reopen", "[storage]") {
  TempDir tmp;
  {
    auto journal = OpenOrDie(tmp.path());
    CHECK(journal->last_seq() == 0);
    for (int b = 0; b < 50; ++b) {
      Journal::Batch batch;
      for (int i = 0; i <= b % 7; ++i) {
        batch.Append(MakeTransition("r" + std::to_string(b % 3), "t" + std::to_string(i),
                                    TaskState::kPending, TaskState::kReady));
      }
      REQUIRE(journal->Commit(batch).ok());
    }
    Journal::Batch no_transitions;
    no_transitions.RecordDuration("k", 5);
    REQUIRE(journal->Commit(no_transitions).ok());
  }
  auto journal = OpenOrDie(tmp.path());
  const uint64_t before = journal->last_seq();
  Journal::Batch batch;
  batch.Append(MakeTransition("r0", "x", TaskState::kPending, TaskState::kReady));
  REQUIRE(journal->Commit(batch).ok());
  CHECK(journal->last_seq() == before + 1);

  std::vector<uint64_t> seqs;
  for (const char* run : {"r0", "r1", "r2"}) {
    auto history = journal->HistoryOfRun(run);
    REQUIRE(history.ok());
    for (const auto& t : *history) seqs.push_back(t.seq);
  }
  std::sort(seqs.begin(), seqs.end());
  REQUIRE(seqs.size() == journal->last_seq());
  for (size_t i = 0; i < seqs.size(); ++i) CHECK(seqs[i] == i + 1);
}

TEST_CASE("indexes return only the asked run or execution, in seq order", "[storage]") {
  TempDir tmp;
  auto journal = OpenOrDie(tmp.path());
  // "r1" is a prefix of "r10" and "r1.a" of "r1.ab": neither may leak in.
  for (int round = 0; round < 3; ++round) {
    Journal::Batch batch;
    for (const char* run : {"r1", "r10", "r2"}) {
      for (const char* task : {"a", "ab"}) {
        batch.Append(
            MakeTransition(run, task, TaskState::kPending, TaskState::kReady, round * 100));
      }
    }
    REQUIRE(journal->Commit(batch).ok());
  }
  auto run = journal->HistoryOfRun("r1");
  REQUIRE(run.ok());
  REQUIRE(run->size() == 6);
  for (size_t i = 0; i < run->size(); ++i) {
    CHECK((*run)[i].run_id == "r1");
    if (i > 0) CHECK((*run)[i].seq > (*run)[i - 1].seq);
  }
  auto exec = journal->HistoryOfExecution("r1.a");
  REQUIRE(exec.ok());
  REQUIRE(exec->size() == 3);
  CHECK((*exec)[0].seq == 1);
  CHECK((*exec)[1].seq == 7);
  CHECK((*exec)[2].seq == 13);
  for (const auto& t : *exec) CHECK(t.exec_id == "r1.a");

  Journal::Batch states;
  for (const char* id : {"r1.a", "r1.ab", "r10.a", "r2.a"}) {
    ExecutionRecord x;
    x.exec_id = id;
    x.run_id = std::string(RunIdOfExec(id));
    states.PutExecution(x);
  }
  REQUIRE(journal->Commit(states).ok());
  auto executions = journal->ExecutionsOfRun("r1");
  REQUIRE(executions.ok());
  REQUIRE(executions->size() == 2);
  CHECK((*executions)[0].exec_id == "r1.a");
  CHECK((*executions)[1].exec_id == "r1.ab");
}

TEST_CASE("a batch that fails part-way leaves nothing behind and consumes no seq", "[storage]") {
  TempDir tmp;
  auto journal = OpenOrDie(tmp.path());
  Journal::Batch good;
  good.Append(MakeTransition("r1", "a", TaskState::kPending, TaskState::kReady));
  REQUIRE(journal->Commit(good).ok());

  Journal::Batch bad;
  bad.Append(MakeTransition("r1", "b", TaskState::kPending, TaskState::kReady));
  bad.PutRun(SampleRun("r1", RunStatus::kRunning, 5));
  ExecutionRecord fine;
  fine.exec_id = "r1.b";
  bad.PutExecution(fine);
  ExecutionRecord poison;  // LMDB refuses a key longer than 511 bytes, after the rest is put
  poison.exec_id = std::string(600, 'x');
  bad.PutExecution(poison);
  Status s = journal->Commit(bad);
  INFO(s.ToString());
  REQUIRE(s.code() == StatusCode::kInvalidInput);
  CHECK(bad.transitions() == 1);  // kept for the caller
  CHECK(journal->last_seq() == 1);
  CHECK(journal->HistoryOfRun("r1")->size() == 1);
  CHECK_FALSE(journal->GetRun("r1")->has_value());
  CHECK_FALSE(journal->GetExecution("r1.b")->has_value());
  CHECK(journal->UnfinishedRuns()->empty());

  Journal::Batch next;
  next.Append(MakeTransition("r1", "c", TaskState::kPending, TaskState::kReady));
  REQUIRE(journal->Commit(next).ok());
  CHECK(journal->last_seq() == 2);
  CHECK(journal->HistoryOfRun("r1")->back().task_id == "c");
}

TEST_CASE("the map grows from 1 MiB to hold 100k transitions, all readable", "[storage]") {
  TempDir tmp;
  JournalOptions options;
  options.initial_map_size = 1 << 20;
  options.sync = JournalOptions::Sync::kNone;  // the test is about growth, not fsync
  auto journal = OpenOrDie(tmp.path(), options);
  const size_t initial = journal->map_size();
  CHECK(initial == (1u << 20));
  constexpr int kBatches = 400, kPerBatch = 250;
  for (int b = 0; b < kBatches; ++b) {
    Journal::Batch batch;
    for (int i = 0; i < kPerBatch; ++i) {
      batch.Append(MakeTransition("r" + std::to_string(b % 10), "t" + std::to_string(i),
                                  TaskState::kReady, TaskState::kRunning, b));
    }
    Status s = journal->Commit(batch);
    INFO(s.ToString());
    REQUIRE(s.ok());
  }
  CHECK(journal->last_seq() == kBatches * kPerBatch);
  CHECK(journal->map_size() > initial);
  size_t total = 0;
  for (int r = 0; r < 10; ++r) {
    auto history = journal->HistoryOfRun("r" + std::to_string(r));
    REQUIRE(history.ok());
    total += history->size();
  }
  CHECK(total == 100000);
  auto one = journal->HistoryOfExecution("r3.t17");
  REQUIRE(one.ok());
  CHECK(one->size() == kBatches / 10);
}

TEST_CASE("a commit that hits MAP_FULL grows the map, more than once if needed, losing nothing",
          "[storage]") {
  TempDir tmp;
  JournalOptions options;
  options.initial_map_size = 128 << 10;  // far too small for the batch below
  options.sync = JournalOptions::Sync::kNone;
  constexpr int kTasks = 3000;
  const std::string long_reason(200, 'r');
  {
    auto journal = OpenOrDie(tmp.path(), options);
    Journal::Batch batch;
    for (int i = 0; i < kTasks; ++i) {
      TransitionRecord t =
          MakeTransition("r1", "t" + std::to_string(i), TaskState::kReady, TaskState::kRunning);
      t.reason = long_reason + std::to_string(i);
      batch.Append(t);
      ExecutionRecord x = SampleExecution();
      x.exec_id = "r1.t" + std::to_string(i);
      x.task_id = "t" + std::to_string(i);
      batch.PutExecution(x);
    }
    batch.PutRun(SampleRun("r1", RunStatus::kRunning, 5));
    Status s = journal->Commit(batch);
    INFO(s.ToString());
    REQUIRE(s.ok());
    CHECK(batch.empty());
    CHECK(journal->map_growths() >= 3);  // 128 KiB -> at least 1 MiB
    CHECK(journal->map_size() >= (1u << 20));
    CHECK(journal->last_seq() == kTasks);
  }
  auto journal = OpenOrDie(tmp.path(), options);  // durable, not just in this process
  auto history = journal->HistoryOfRun("r1");
  REQUIRE(history.ok());
  REQUIRE(history->size() == kTasks);
  for (int i = 0; i < kTasks; ++i) {
    REQUIRE((*history)[i].seq == static_cast<uint64_t>(i + 1));
    REQUIRE((*history)[i].reason == long_reason + std::to_string(i));
  }
  CHECK(journal->ExecutionsOfRun("r1")->size() == kTasks);
  CHECK(journal->GetRun("r1")->has_value());
}

// MDB_MAP_FULL can also come from mdb_txn_commit itself: the puts fit, but
// saving the pages they freed needs one more. LMDB has freed the txn by then,
// so the journal must replay the whole batch in a bigger map. Batches that
// rewrite many records (freeing their old pages) at slowly growing sizes hit
// that case; each journal here starts from the same small map.
TEST_CASE("MAP_FULL from mdb_txn_commit itself grows the map and the batch commits whole",
          "[storage]") {
  uint64_t at_commit = 0;
  int attempts = 0;
  for (int n = 200; n < 2000 && at_commit == 0; n += 7, ++attempts) {
    TempDir tmp;
    JournalOptions options;
    options.initial_map_size = 256 << 10;
    options.sync = JournalOptions::Sync::kNone;
    auto journal = OpenOrDie(tmp.path(), options);
    for (int round = 0; round < 3; ++round) {
      Journal::Batch batch;
      for (int i = 0; i < n; ++i) {
        ExecutionRecord x = SampleExecution();
        x.exec_id = "r1.t" + std::to_string(i);
        x.task_id = "t" + std::to_string(i);
        x.output = std::string(64, static_cast<char>('a' + round));
        batch.PutExecution(x);
        batch.Append(MakeTransition("r1", x.task_id, TaskState::kReady, TaskState::kRunning));
      }
      Status s = journal->Commit(batch);
      INFO(s.ToString());
      REQUIRE(s.ok());
    }
    at_commit = journal->map_full_at_commit();
    if (at_commit == 0) continue;
    // The batch that failed at commit was replayed whole.
    CHECK(journal->last_seq() == static_cast<uint64_t>(3 * n));
    auto execs = journal->ExecutionsOfRun("r1");
    REQUIRE(execs.ok());
    REQUIRE(execs->size() == static_cast<size_t>(n));
    for (const ExecutionRecord& x : *execs) CHECK(x.output == std::string(64, 'c'));
    CHECK(journal->HistoryOfRun("r1")->size() == static_cast<size_t>(3 * n));
  }
  INFO("batch sizes tried: " << attempts);
  CHECK(at_commit > 0);
}

TEST_CASE("a map at its maximum size is a Full error, not a crash", "[storage]") {
  TempDir tmp;
  JournalOptions options;
  options.initial_map_size = 256 << 10;
  options.max_map_size = 512 << 10;
  options.sync = JournalOptions::Sync::kNone;
  auto journal = OpenOrDie(tmp.path(), options);
  Journal::Batch batch;
  for (int i = 0; i < 20000; ++i) {
    batch.Append(
        MakeTransition("r1", "t" + std::to_string(i), TaskState::kReady, TaskState::kRunning));
  }
  Status s = journal->Commit(batch);
  INFO(s.ToString());
  CHECK(s.code() == StatusCode::kFull);
  CHECK(journal->last_seq() == 0);
  CHECK(batch.transitions() == 20000);
  CHECK(journal->map_size() == (512u << 10));
}

TEST_CASE("DurationP50 is the median of the last 64 durations", "[storage]") {
  TempDir tmp;
  auto journal = OpenOrDie(tmp.path());
  CHECK_FALSE(journal->DurationP50("order.sync/fetch")->has_value());
  Journal::Batch batch;
  for (Micros d : {30, 10, 20}) batch.RecordDuration("order.sync/fetch", d);
  REQUIRE(journal->Commit(batch).ok());
  CHECK(journal->DurationP50("order.sync/fetch")->value_or(-1) == 20);
  batch.RecordDuration("order.sync/fetch", 40);
  REQUIRE(journal->Commit(batch).ok());
  CHECK(journal->DurationP50("order.sync/fetch")->value_or(-1) == 25);
  // 100 large durations push the small ones out of the window.
  for (int i = 0; i < 100; ++i) batch.RecordDuration("order.sync/fetch", 1000 + i);
  REQUIRE(journal->Commit(batch).ok());
  // The window now holds 1036..1099: median of 64 values = (1067 + 1068) / 2.
  CHECK(journal->DurationP50("order.sync/fetch")->value_or(-1) == 1067);
  CHECK_FALSE(journal->DurationP50("other")->has_value());
}

TEST_CASE("BumpEpoch increases monotonically across reopen", "[storage]") {
  TempDir tmp;
  {
    auto journal = OpenOrDie(tmp.path());
    CHECK(*journal->Epoch() == 0);
    CHECK(*journal->BumpEpoch() == 1);
    CHECK(*journal->BumpEpoch() == 2);
  }
  auto journal = OpenOrDie(tmp.path());
  CHECK(*journal->Epoch() == 2);
  CHECK(*journal->BumpEpoch() == 3);
}

TEST_CASE("UnfinishedRuns lists runs not in a final state and ListRuns is newest first",
          "[storage]") {
  TempDir tmp;
  auto journal = OpenOrDie(tmp.path());
  Journal::Batch batch;
  batch.PutRun(SampleRun("rb", RunStatus::kRunning, 300));
  batch.PutRun(SampleRun("ra", RunStatus::kPending, 100));
  batch.PutRun(SampleRun("rc", RunStatus::kRunning, 200));
  batch.PutRun(SampleRun("rd", RunStatus::kSuccess, 400));
  REQUIRE(journal->Commit(batch).ok());
  // rc finishes; its record is replaced, and created_at moves (kept in sync).
  RunRecord done = SampleRun("rc", RunStatus::kFailed, 50);
  batch.PutRun(done);
  REQUIRE(journal->Commit(batch).ok());

  auto unfinished = journal->UnfinishedRuns();
  REQUIRE(unfinished.ok());
  REQUIRE(unfinished->size() == 2);
  CHECK((*unfinished)[0].run_id == "ra");
  CHECK((*unfinished)[1].run_id == "rb");

  auto runs = journal->ListRuns(10);
  REQUIRE(runs.ok());
  REQUIRE(runs->size() == 4);
  CHECK((*runs)[0].run_id == "rd");
  CHECK((*runs)[1].run_id == "rb");
  CHECK((*runs)[2].run_id == "ra");
  CHECK((*runs)[3].run_id == "rc");
  CHECK((*runs)[3].status == RunStatus::kFailed);
  CHECK(journal->ListRuns(2)->size() == 2);
}

TEST_CASE("opening read-only where no journal exists is a clear NotFound", "[storage]") {
  TempDir tmp;
  JournalOptions options;
  options.read_only = true;
  auto journal = Journal::Open(tmp.Sub("missing"), options);
  REQUIRE_FALSE(journal.ok());
  CHECK(journal.status().code() == StatusCode::kNotFound);
  CHECK_THAT(journal.status().message(), Catch::Contains("no journal in"));
  CHECK_FALSE(std::filesystem::exists(tmp.Sub("missing")));
}

TEST_CASE("a read-only journal refuses writes", "[storage]") {
  TempDir tmp;
  { OpenOrDie(tmp.path()); }
  JournalOptions options;
  options.read_only = true;
  auto journal = OpenOrDie(tmp.path(), options);
  Journal::Batch batch;
  batch.Append(MakeTransition("r1", "a", TaskState::kPending, TaskState::kReady));
  CHECK(journal->Commit(batch).code() == StatusCode::kUnsupported);
  CHECK(journal->BumpEpoch().status().code() == StatusCode::kUnsupported);
}

TEST_CASE("the same journal cannot be opened twice in one process", "[storage]") {
  TempDir tmp;
  auto first = OpenOrDie(tmp.path());
  auto second = Journal::Open(tmp.path() + "/.", JournalOptions{});
  REQUIRE_FALSE(second.ok());
  CHECK(second.status().code() == StatusCode::kBusy);
  first.reset();
  CHECK(Journal::Open(tmp.path(), JournalOptions{}).ok());
}

TEST_CASE("a journal with a newer schema version is refused", "[storage]") {
  TempDir tmp;
  { OpenOrDie(tmp.path()); }
  {  // what a future build would leave behind
    MDB_env* env = nullptr;
    REQUIRE(mdb_env_create(&env) == 0);
    mdb_env_set_maxdbs(env, 16);
    REQUIRE(mdb_env_open(env, tmp.path().c_str(), 0, 0644) == 0);
    MDB_txn* txn = nullptr;
    REQUIRE(mdb_txn_begin(env, nullptr, 0, &txn) == 0);
    MDB_dbi meta;
    REQUIRE(mdb_dbi_open(txn, "meta", 0, &meta) == 0);
    std::string key = "schema_version";
    std::string value("\x63\0\0\0\0\0\0\0", 8);  // 99, little-endian
    MDB_val k{key.size(), key.data()}, v{value.size(), value.data()};
    REQUIRE(mdb_put(txn, meta, &k, &v, 0) == 0);
    REQUIRE(mdb_txn_commit(txn) == 0);
    mdb_env_close(env);
  }
  auto journal = Journal::Open(tmp.path(), JournalOptions{});
  REQUIRE_FALSE(journal.ok());
  CHECK(journal.status().code() == StatusCode::kUnsupported);
  CHECK_THAT(journal.status().message(), Catch::Contains("schema version 99"));
}

TEST_CASE("a large snapshot is journaled packed and reads back as its text", "[storage]") {
  TempDir tmp;
  auto journal = OpenOrDie(tmp.path());
  std::string text = R"({"name":"big","tasks":[)";
  for (int i = 0; i < 20000; ++i)
    text += R"({"id":"t)" + std::to_string(i) + R"(","type":"noop"},)";
  text += "{}]}";
  // As a journal written before packing holds it: the text itself.
  const std::string legacy = text + " ";
  Journal::Batch batch;
  batch.PutPipeline("packed", text);
  batch.PutPackedPipeline("legacy", legacy);
  REQUIRE(IsPackedSnapshot(batch.pipeline_snapshots()[0].second));
  REQUIRE(journal->Commit(batch).ok());
  CHECK(journal->GetPipeline("packed")->value() == text);
  CHECK(journal->GetPipeline("legacy")->value() == legacy);
  // A stored value that is damaged is reported, not handed out.
  Journal::Batch bad;
  bad.PutPackedPipeline("bad", PackSnapshot(text).substr(0, 100));
  REQUIRE(journal->Commit(bad).ok());
  auto got = journal->GetPipeline("bad");
  REQUIRE_FALSE(got.ok());
  CHECK(got.status().code() == StatusCode::kCorrupt);
  CHECK_THAT(got.status().message(), Catch::Contains("pipeline snapshot bad"));
}

// Leaf pages and entries of `table` in the journal in `dir` (closed).
std::pair<size_t, size_t> LeafPages(const std::string& dir, const char* table) {
  MDB_env* env = nullptr;
  REQUIRE(mdb_env_create(&env) == 0);
  mdb_env_set_maxdbs(env, 32);
  REQUIRE(mdb_env_open(env, dir.c_str(), MDB_RDONLY, 0644) == 0);
  MDB_txn* txn = nullptr;
  REQUIRE(mdb_txn_begin(env, nullptr, MDB_RDONLY, &txn) == 0);
  MDB_dbi dbi;
  REQUIRE(mdb_dbi_open(txn, table, 0, &dbi) == 0);
  MDB_stat st;
  REQUIRE(mdb_stat(txn, dbi, &st) == 0);
  mdb_txn_abort(txn);
  mdb_env_close(env);
  return {st.ms_leaf_pages, st.ms_entries};
}

TEST_CASE("a new run's execution records fill their pages, whatever order they come in",
          "[storage]") {
  TempDir tmp;
  constexpr int kTasks = 4000;
  std::vector<int> order(kTasks);
  for (int i = 0; i < kTasks; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), std::mt19937(5));
  size_t record_bytes = 0;  // the largest leaf entry: node header, key, value, index slot
  {
    auto journal = OpenOrDie(tmp.path());
    for (const char* run : {"r20261204T000000-0000", "r20261204T000001-0000"}) {
      Journal::Batch batch;
      for (int i : order) {
        ExecutionRecord x;
        x.run_id = run;
        x.task_id = "task_" + std::to_string(i);
        x.exec_id = MakeExecId(x.run_id.get(), x.task_id);
        const size_t value = codec::EncodeExecutionValue(codec::EncodeExecution(x), {}).size();
        record_bytes = std::max(record_bytes, 8 + x.exec_id.size() + value + 2);
        batch.PutExecution(x);
      }
      REQUIRE(journal->Commit(batch).ok());
    }
    // Every record reads back.
    CHECK(journal->ExecutionsOfRun("r20261204T000000-0000")->size() == kTasks);
    CHECK(journal->ExecutionsOfRun("r20261204T000001-0000")->size() == kTasks);
  }
  auto [pages, entries] = LeafPages(tmp.path(), "executions");
  REQUIRE(entries == 2 * kTasks);
  // Inserted out of key order, the leaves end about two thirds full (294
  // pages here); in key order, nearly full (205).
  const size_t per_page = entries / pages;
  INFO(pages << " leaf pages for " << entries << " records");
  CHECK(per_page * record_bytes > 4096 * 85 / 100);
}

// Resident bytes of this process's mappings of `dir`'s data.mdb
// (/proc/self/smaps): the journal pages it has touched and not let go.
size_t MappedJournalBytes(const std::string& dir) {
  const std::string file = std::filesystem::canonical(dir).string() + "/data.mdb";
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool in_journal = false;
  size_t kb = 0;
  while (std::getline(smaps, line)) {
    if (line.empty()) continue;
    if (std::isxdigit(static_cast<unsigned char>(line[0])) && line.find('-') != std::string::npos &&
        line.find(' ') > line.find('-')) {
      in_journal = line.size() >= file.size() &&
                   line.compare(line.size() - file.size(), file.size(), file) == 0;
    } else if (in_journal && line.rfind("Rss:", 0) == 0) {
      kb += std::stoul(line.substr(4));
    }
  }
  return kb << 10;
}

TEST_CASE("the journal's pages a process has read are let go from its RSS", "[storage]") {
  TempDir tmp;
  JournalOptions options;
  options.release_mapped_every = 0;  // by hand first
  constexpr int kSnapshots = 64;
  // 8 MiB of overflow pages in all: random bytes, which are not packed.
  std::string text(128 << 10, '\0');
  std::mt19937 random(11);
  for (char& c : text) c = static_cast<char>(random());
  text[0] = '{';
  {
    auto journal = OpenOrDie(tmp.path(), options);
    for (int i = 0; i < kSnapshots; ++i) {
      Journal::Batch batch;
      batch.PutPipeline("h" + std::to_string(i), text + std::to_string(i));
      REQUIRE(journal->Commit(batch).ok());
    }
    auto read_all = [&] {
      for (int i = 0; i < kSnapshots; ++i) {
        auto got = journal->GetPipeline("h" + std::to_string(i));
        REQUIRE(got.ok());
        REQUIRE(got->has_value());
        REQUIRE(**got == text + std::to_string(i));
      }
    };
    read_all();
    CHECK(MappedJournalBytes(tmp.path()) >= (6u << 20));
    journal->ReleaseMappedPages();
    CHECK(MappedJournalBytes(tmp.path()) < (1u << 20));
    read_all();  // the same bytes, mapped again
    CHECK(MappedJournalBytes(tmp.path()) >= (6u << 20));
  }
  // Write commits let them go on their own, every release_mapped_every.
  options.release_mapped_every = 4;
  auto journal = OpenOrDie(tmp.path(), options);
  for (int i = 0; i < kSnapshots; ++i) REQUIRE(journal->GetPipeline("h" + std::to_string(i)).ok());
  CHECK(MappedJournalBytes(tmp.path()) >= (6u << 20));
  for (int i = 0; i < 4; ++i) {
    Journal::Batch batch;
    batch.PutPipeline("late" + std::to_string(i), "{}");
    REQUIRE(journal->Commit(batch).ok());
  }
  CHECK(MappedJournalBytes(tmp.path()) < (1u << 20));
}

TEST_CASE("the journal's pages are let go from the RSS after its map grew", "[storage]") {
  // The map's address is found once per map (not per release): growing it
  // moves the map, and the release must follow it there.
  TempDir tmp;
  JournalOptions options;
  options.initial_map_size = 1 << 20;
  options.release_mapped_every = 0;
  auto journal = OpenOrDie(tmp.path(), options);
  std::string text(128 << 10, '\0');
  std::mt19937 random(12);
  for (char& c : text) c = static_cast<char>(random());
  text[0] = '{';
  constexpr int kSnapshots = 48;  // 6 MiB: the map doubles three times
  for (int i = 0; i < kSnapshots; ++i) {
    Journal::Batch batch;
    batch.PutPipeline("h" + std::to_string(i), text + std::to_string(i));
    REQUIRE(journal->Commit(batch).ok());
  }
  REQUIRE(journal->map_growths() >= 3);
  for (int i = 0; i < kSnapshots; ++i) {
    auto got = journal->GetPipeline("h" + std::to_string(i));
    REQUIRE(got.ok());
    REQUIRE(got->has_value());
  }
  CHECK(MappedJournalBytes(tmp.path()) >= (4u << 20));
  journal->ReleaseMappedPages();
  CHECK(MappedJournalBytes(tmp.path()) < (1u << 20));
  auto again = journal->GetPipeline("h7");  // still readable, mapped again
  REQUIRE(again.ok());
  CHECK(**again == text + "7");
}

TEST_CASE("an execution record in memory stays compact", "[storage]") {
  // Regression guard for the coordinator's memory (docs/PERFORMANCE.md): one
  // record per task of every run it holds. 288 bytes with run_id and
  // trace_id inline; the scheduler leaves both empty.
  CHECK(sizeof(ExecutionRecord) <= 232);
  ExecutionRecord x;
  x.run_id = "r20261204T000000-0000";
  x.trace_id = "0af7651916cd43dd8448eb211c80319c";
  x.task_id = "t";
  x.exec_id = MakeExecId(x.run_id.get(), x.task_id);
  auto back = codec::DecodeExecution(x.exec_id, codec::EncodeExecution(x));
  REQUIRE(back.ok());
  CHECK(back->run_id == x.run_id);
  CHECK(back->trace_id == x.trace_id);
}

}  // namespace
}  // namespace apollo11::storage
