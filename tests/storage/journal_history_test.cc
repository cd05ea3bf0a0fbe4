// An execution's history kept in its execution value (schema 2), and the
// journals written before it (schema 1, a fixture written by that build).

#include <lmdb.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <string>
#include <vector>

#include "storage/journal.h"
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

ExecutionRecord Exec(const std::string& run, const std::string& task, TaskState state) {
  ExecutionRecord x;
  x.exec_id = run + "." + task;
  x.run_id = run;
  x.task_id = task;
  x.attempt = 1;
  x.state = state;
  return x;
}

// Entries of table `name` and the schema version, read with LMDB directly
// once the journal is closed.
struct RawCounts {
  size_t entries = 0;
  uint64_t schema = 0;
};
RawCounts ReadRaw(const std::string& dir, const char* name) {
  RawCounts out;
  MDB_env* env = nullptr;
  REQUIRE(mdb_env_create(&env) == 0);
  mdb_env_set_maxdbs(env, 16);
  REQUIRE(mdb_env_open(env, dir.c_str(), MDB_RDONLY, 0644) == 0);
  MDB_txn* txn = nullptr;
  REQUIRE(mdb_txn_begin(env, nullptr, MDB_RDONLY, &txn) == 0);
  MDB_dbi dbi, meta;
  REQUIRE(mdb_dbi_open(txn, name, 0, &dbi) == 0);
  MDB_stat st;
  REQUIRE(mdb_stat(txn, dbi, &st) == 0);
  out.entries = st.ms_entries;
  REQUIRE(mdb_dbi_open(txn, "meta", 0, &meta) == 0);
  std::string key = "schema_version";
  MDB_val k{key.size(), key.data()}, v;
  if (mdb_get(txn, meta, &k, &v) == 0 && v.mv_size == 8) {
    for (int i = 7; i >= 0; --i) {
      out.schema = (out.schema << 8) | static_cast<const uint8_t*>(v.mv_data)[i];
    }
  }
  mdb_txn_abort(txn);
  mdb_env_close(env);
  return out;
}

TEST_CASE("an execution's history is kept in its record, with no index entry per transition",
          "[storage]") {
  TempDir tmp;
  {
    auto journal = OpenOrDie(tmp.path());
    const TaskState steps[][2] = {{TaskState::kPending, TaskState::kReady},
                                  {TaskState::kReady, TaskState::kRunning},
                                  {TaskState::kRunning, TaskState::kSuccess}};
    for (const auto& step : steps) {
      Journal::Batch batch;
      batch.Append(MakeTransition("r1", "a", step[0], step[1]));
      batch.Append(MakeTransition("r1", "b", step[0], step[1]));
      batch.PutExecution(Exec("r1", "a", step[1]));
      batch.PutExecution(Exec("r1", "b", step[1]));
      REQUIRE(journal->Commit(batch).ok());
    }
    Journal::Batch note;  // a transition whose execution record is not rewritten
    TransitionRecord flag = MakeTransition("r1", "a", TaskState::kSuccess, TaskState::kSuccess);
    flag.note = true;
    note.Append(flag);
    REQUIRE(journal->Commit(note).ok());

    auto a = journal->HistoryOfExecution("r1.a");
    REQUIRE(a.ok());
    REQUIRE(a->size() == 4);
    CHECK(a->at(0).seq == 1);
    CHECK(a->at(1).seq == 3);
    CHECK(a->at(2).seq == 5);
    CHECK(a->at(3).seq == 7);
    CHECK(a->at(3).note);
    auto b = journal->HistoryOfExecution("r1.b");
    REQUIRE(b.ok());
    REQUIRE(b->size() == 3);
    CHECK(b->at(2).to == TaskState::kSuccess);
    auto rec = journal->GetExecution("r1.a");
    REQUIRE(rec.ok());
    REQUIRE(rec->has_value());
    CHECK((*rec)->state == TaskState::kSuccess);
    auto all = journal->ExecutionsOfRun("r1");
    REQUIRE(all.ok());
    CHECK(all->size() == 2);
  }
  RawCounts raw = ReadRaw(tmp.path(), "exec_index");
  CHECK(raw.entries == 0);
  CHECK(raw.schema == Journal::kSchemaVersion);
}

TEST_CASE("transitions of an execution that has no record stay in its history", "[storage]") {
  TempDir tmp;
  auto journal = OpenOrDie(tmp.path());
  Journal::Batch batch;
  batch.Append(MakeTransition("r1", "a", TaskState::kPending, TaskState::kReady));
  batch.Append(MakeTransition("r1", "a", TaskState::kReady, TaskState::kRunning));
  REQUIRE(journal->Commit(batch).ok());
  batch.Append(MakeTransition("r1", "a", TaskState::kRunning, TaskState::kSuccess));
  batch.PutExecution(Exec("r1", "a", TaskState::kSuccess));
  REQUIRE(journal->Commit(batch).ok());
  auto a = journal->HistoryOfExecution("r1.a");
  REQUIRE(a.ok());
  REQUIRE(a->size() == 3);
  CHECK(a->at(0).seq == 1);
  CHECK(a->at(2).seq == 3);
}

TEST_CASE("one batch of interleaved executions gives each its own seqs, once", "[storage]") {
  TempDir tmp;
  auto journal = OpenOrDie(tmp.path());
  Journal::Batch batch;
  // Seqs 1..6: b, a, c, a, b, and one of d written without an exec id (a
  // record of the first journal format), whose history is found by its id.
  batch.Append(MakeTransition("r1", "b", TaskState::kPending, TaskState::kReady));
  batch.Append(MakeTransition("r1", "a", TaskState::kPending, TaskState::kReady));
  batch.Append(MakeTransition("r1", "c", TaskState::kPending, TaskState::kReady));
  batch.Append(MakeTransition("r1", "a", TaskState::kReady, TaskState::kRunning));
  batch.Append(MakeTransition("r1", "b", TaskState::kReady, TaskState::kRunning));
  TransitionRecord no_id = MakeTransition("r1", "d", TaskState::kPending, TaskState::kReady);
  no_id.exec_id.clear();
  batch.Append(no_id);
  // a's record twice (a turn that retried a failed commit puts it again);
  // c and d have none.
  batch.PutExecution(Exec("r1", "a", TaskState::kReady));
  batch.PutExecution(Exec("r1", "b", TaskState::kRunning));
  batch.PutExecution(Exec("r1", "a", TaskState::kRunning));
  REQUIRE(journal->Commit(batch).ok());

  auto seqs_of = [&](const std::string& exec_id) {
    auto h = journal->HistoryOfExecution(exec_id);
    REQUIRE(h.ok());
    std::vector<uint64_t> seqs;
    for (const TransitionRecord& t : *h) seqs.push_back(t.seq);
    return seqs;
  };
  CHECK(seqs_of("r1.a") == std::vector<uint64_t>{2, 4});
  CHECK(seqs_of("r1.b") == std::vector<uint64_t>{1, 5});
  CHECK(seqs_of("r1.c") == std::vector<uint64_t>{3});
  CHECK(seqs_of("r1.d") == std::vector<uint64_t>{6});
  auto a = journal->GetExecution("r1.a");
  REQUIRE(a.ok());
  REQUIRE(a->has_value());
  CHECK((*a)->state == TaskState::kRunning);  // the last put wins
}

TEST_CASE("a damaged execution value is replaced by the next record, commits go on", "[storage]") {
  TempDir tmp;
  {
    auto journal = OpenOrDie(tmp.path());
    Journal::Batch batch;
    batch.Append(MakeTransition("r1", "a", TaskState::kPending, TaskState::kReady));
    batch.PutExecution(Exec("r1", "a", TaskState::kReady));
    REQUIRE(journal->Commit(batch).ok());
  }
  {  // what a bad sector or a foreign writer might leave
    MDB_env* env = nullptr;
    REQUIRE(mdb_env_create(&env) == 0);
    mdb_env_set_maxdbs(env, 16);
    REQUIRE(mdb_env_open(env, tmp.path().c_str(), 0, 0644) == 0);
    MDB_txn* txn = nullptr;
    REQUIRE(mdb_txn_begin(env, nullptr, 0, &txn) == 0);
    MDB_dbi dbi;
    REQUIRE(mdb_dbi_open(txn, "executions", 0, &dbi) == 0);
    std::string key = "r1.a", value = "\xc1\xc1garbage";
    MDB_val k{key.size(), key.data()}, v{value.size(), value.data()};
    REQUIRE(mdb_put(txn, dbi, &k, &v, 0) == 0);
    REQUIRE(mdb_txn_commit(txn) == 0);
    mdb_env_close(env);
  }
  auto journal = OpenOrDie(tmp.path());
  auto damaged = journal->HistoryOfExecution("r1.a");
  CHECK(damaged.status().code() == StatusCode::kCorrupt);
  Journal::Batch batch;
  batch.Append(MakeTransition("r1", "a", TaskState::kReady, TaskState::kRunning));
  batch.PutExecution(Exec("r1", "a", TaskState::kRunning));
  REQUIRE(journal->Commit(batch).ok());
  auto history = journal->HistoryOfExecution("r1.a");
  REQUIRE(history.ok());
  REQUIRE(history->size() == 1);
  CHECK(history->front().seq == 2);
  auto rec = journal->GetExecution("r1.a");
  REQUIRE(rec.ok());
  CHECK((*rec)->state == TaskState::kRunning);
}

TEST_CASE("a journal written by the schema 1 build opens, keeps its history and continues",
          "[storage]") {
  // Written by `apollo11 run pipeline.yaml` (fixture dir) at 14a199a, then
  // compacted with mdb_copy -c: run r20261202T013504-0000, a and b
  // succeeded, c failed after one retry.
  const std::string fixture =
      std::string(APOLLO11_SOURCE_DIR) + "/tests/storage/fixtures/journal_schema1/data.mdb";
  const std::string run = "r20261202T013504-0000";
  TempDir tmp;
  std::filesystem::copy_file(fixture, tmp.Sub("data.mdb"));
  std::filesystem::permissions(tmp.Sub("data.mdb"), std::filesystem::perms::owner_write,
                               std::filesystem::perm_options::add);
  CHECK(ReadRaw(tmp.path(), "exec_index").schema == 1);
  {
    JournalOptions read_only;
    read_only.read_only = true;
    auto reader = OpenOrDie(tmp.path(), read_only);
    auto c = reader->HistoryOfExecution(run + ".c");
    REQUIRE(c.ok());
    CHECK(c->size() == 6);
  }
  CHECK(ReadRaw(tmp.path(), "exec_index").schema == 1);  // a reader changes nothing
  {
    auto journal = OpenOrDie(tmp.path());
    auto history = journal->HistoryOfRun(run);
    REQUIRE(history.ok());
    CHECK(history->size() == 12);
    auto c = journal->HistoryOfExecution(run + ".c");
    REQUIRE(c.ok());
    REQUIRE(c->size() == 6);
    CHECK(c->back().to == TaskState::kFailed);
    auto execs = journal->ExecutionsOfRun(run);
    REQUIRE(execs.ok());
    REQUIRE(execs->size() == 3);
    CHECK(execs->at(2).state == TaskState::kFailed);

    // The old execution goes on (a note, and its record rewritten).
    Journal::Batch batch;
    TransitionRecord flag = MakeTransition(run, "c", TaskState::kFailed, TaskState::kFailed);
    flag.note = true;
    batch.Append(flag);
    ExecutionRecord x = execs->at(2);
    x.error = "seen by the operator";
    batch.PutExecution(x);
    REQUIRE(journal->Commit(batch).ok());
    c = journal->HistoryOfExecution(run + ".c");
    REQUIRE(c.ok());
    REQUIRE(c->size() == 7);
    CHECK(c->back().note);
    CHECK(c->back().seq == journal->last_seq());
    for (size_t i = 1; i < c->size(); ++i) CHECK(c->at(i - 1).seq < c->at(i).seq);
    auto kept = journal->GetExecution(run + ".c");
    REQUIRE(kept.ok());
    REQUIRE(kept->has_value());
    CHECK((*kept)->error == "seen by the operator");
    auto gc = journal->CollectGarbage(SystemClock().Now() + 1, Journal::GcOptions{});
    REQUIRE(gc.ok());
    CHECK(gc->transitions == 13);
    CHECK(gc->executions == 3);
  }
  RawCounts raw = ReadRaw(tmp.path(), "exec_index");
  CHECK(raw.schema == Journal::kSchemaVersion);
  CHECK(raw.entries == 0);  // retention removed the old entries with their run
}

}  // namespace
}  // namespace apollo11::storage
