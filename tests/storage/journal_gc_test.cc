// Retention: Journal::CollectGarbage and the removal of runs' log files.

#include <lmdb.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <string>

#include "storage/journal.h"
#include "storage/run_logs.h"
#include "tests/storage/storage_test_util.h"

namespace apollo11::storage {
namespace {

using testing::MakeTransition;
using testing::TempDir;

std::unique_ptr<Journal> OpenJournal(const std::string& dir) {
  JournalOptions options;
  options.sync = JournalOptions::Sync::kNone;  // these tests are about contents
  auto journal = Journal::Open(dir, options);
  INFO(journal.status().ToString());
  REQUIRE(journal.ok());
  return std::move(journal).value();
}

// Commits a run of `tasks` tasks, each PENDING -> READY -> RUNNING -> final,
// with its execution records, created at `created` and (when final) finished
// at `created + 10`.
void AddRun(Journal& journal, const std::string& run_id, RunStatus status, Micros created,
            int tasks, const std::string& pipeline_hash) {
  Journal::Batch batch;
  batch.PutPipeline(pipeline_hash, "{\"name\":\"" + pipeline_hash + "\"}");
  for (int i = 0; i < tasks; ++i) {
    const std::string task = "t" + std::to_string(i);
    batch.Append(MakeTransition(run_id, task, TaskState::kPending, TaskState::kReady, created));
    batch.Append(MakeTransition(run_id, task, TaskState::kReady, TaskState::kRunning, created));
    ExecutionRecord x;
    x.exec_id = run_id + "." + task;
    x.run_id = run_id;
    x.task_id = task;
    x.state = TaskState::kRunning;
    if (IsFinal(status)) {
      batch.Append(
          MakeTransition(run_id, task, TaskState::kRunning, TaskState::kSuccess, created + 10));
      x.state = TaskState::kSuccess;
    }
    batch.PutExecution(x);
  }
  RunRecord run;
  run.run_id = run_id;
  run.pipeline_name = "order.sync";
  run.pipeline_hash = pipeline_hash;
  run.status = status;
  run.created_at = created;
  run.finished_at = IsFinal(status) ? created + 10 : 0;
  run.task_count = static_cast<uint32_t>(tasks);
  batch.PutRun(run);
  Status s = journal.Commit(batch);
  INFO(s.ToString());
  REQUIRE(s.ok());
}

// Entries in every index, counted straight from LMDB (after the journal is
// closed), so an orphan left behind by retention cannot hide.
struct RawCounts {
  size_t transitions = 0, run_index = 0, exec_index = 0, executions = 0, runs = 0, runs_by_time = 0,
         pipelines = 0;
};

RawCounts CountRaw(const std::string& dir) {
  RawCounts counts;
  MDB_env* env = nullptr;
  REQUIRE(mdb_env_create(&env) == 0);
  REQUIRE(mdb_env_set_maxdbs(env, 16) == 0);
  REQUIRE(mdb_env_open(env, dir.c_str(), MDB_RDONLY, 0644) == 0);
  MDB_txn* txn = nullptr;
  REQUIRE(mdb_txn_begin(env, nullptr, MDB_RDONLY, &txn) == 0);
  auto count = [&](const char* name) {
    MDB_dbi dbi;
    REQUIRE(mdb_dbi_open(txn, name, 0, &dbi) == 0);
    MDB_stat st;
    REQUIRE(mdb_stat(txn, dbi, &st) == 0);
    return static_cast<size_t>(st.ms_entries);  // dups included
  };
  counts.transitions = count("transitions");
  counts.run_index = count("run_index");
  counts.exec_index = count("exec_index");
  counts.executions = count("executions");
  counts.runs = count("runs");
  counts.runs_by_time = count("runs_by_time");
  counts.pipelines = count("pipelines");
  mdb_txn_abort(txn);
  mdb_env_close(env);
  return counts;
}

TEST_CASE("retention removes old finished runs with every record and index entry",
          "[storage][gc]") {
  TempDir tmp;
  uint64_t last_seq = 0;
  {
    auto journal = OpenJournal(tmp.path());
    AddRun(*journal, "old-ok", RunStatus::kSuccess, 100, 5, "p-old");
    AddRun(*journal, "old-failed", RunStatus::kFailed, 110, 3, "p-old");
    AddRun(*journal, "old-canceled", RunStatus::kCanceled, 120, 2, "p-shared");
    AddRun(*journal, "old-live", RunStatus::kRunning, 130, 4, "p-live");
    AddRun(*journal, "recent", RunStatus::kSuccess, 5000, 6, "p-shared");
    last_seq = journal->last_seq();

    Journal::GcOptions dry;
    dry.dry_run = true;
    auto planned = journal->CollectGarbage(1000, dry);
    REQUIRE(planned.ok());
    CHECK(planned->run_ids == std::vector<std::string>{"old-ok", "old-failed", "old-canceled"});
    CHECK(planned->transitions == 30);  // (5 + 3 + 2) tasks x 3 transitions
    CHECK(planned->executions == 10);
    CHECK(planned->pipelines == 1);                 // p-old; p-shared is still used by "recent"
    CHECK(journal->GetRun("old-ok")->has_value());  // a dry run changes nothing

    auto report = journal->CollectGarbage(1000, {});
    REQUIRE(report.ok());
    CHECK(report->run_ids == planned->run_ids);
    CHECK(report->transitions == planned->transitions);
    CHECK(report->executions == planned->executions);
    // run_index only: since schema 2 an execution's seqs live in its record.
    CHECK(report->index_entries == 30);
    CHECK(planned->index_entries == report->index_entries);
    CHECK(report->pipelines == 1);
    CHECK(report->complete);

    for (const char* gone : {"old-ok", "old-failed", "old-canceled"}) {
      INFO(gone);
      CHECK_FALSE(journal->GetRun(gone)->has_value());
      CHECK(journal->HistoryOfRun(gone)->empty());
      CHECK(journal->HistoryOfExecution(std::string(gone) + ".t0")->empty());
      CHECK(journal->ExecutionsOfRun(gone)->empty());
    }
    CHECK_FALSE(journal->GetPipeline("p-old")->has_value());
    CHECK(journal->GetPipeline("p-shared")->has_value());
    CHECK(journal->GetPipeline("p-live")->has_value());
    // The live run is untouched, although it is older than the cutoff.
    CHECK(journal->HistoryOfRun("old-live")->size() == 8);
    CHECK(journal->ExecutionsOfRun("old-live")->size() == 4);
    REQUIRE(journal->UnfinishedRuns()->size() == 1);
    CHECK(journal->UnfinishedRuns()->front().run_id == "old-live");
    CHECK(journal->HistoryOfRun("recent")->size() == 18);
    auto listed = journal->ListRuns(10);
    REQUIRE(listed.ok());
    REQUIRE(listed->size() == 2);
    CHECK((*listed)[0].run_id == "recent");
    CHECK((*listed)[1].run_id == "old-live");
    CHECK(journal->last_seq() == last_seq);

    // A second pass finds nothing more.
    auto again = journal->CollectGarbage(1000, {});
    REQUIRE(again.ok());
    CHECK(again->run_ids.empty());
    CHECK(again->transitions == 0);
  }
  RawCounts raw = CountRaw(tmp.path());
  const size_t remaining = 8 + 18;  // old-live + recent
  CHECK(raw.transitions == remaining);
  CHECK(raw.run_index == remaining);
  CHECK(raw.exec_index == 0);  // schema 2: execution history is in the records
  CHECK(raw.executions == 4 + 6);
  CHECK(raw.runs == 2);
  CHECK(raw.runs_by_time == 2);
  CHECK(raw.pipelines == 2);
}

TEST_CASE("seq numbers never go back when retention removes the newest transitions",
          "[storage][gc]") {
  TempDir tmp;
  uint64_t last = 0;
  {
    auto journal = OpenJournal(tmp.path());
    AddRun(*journal, "only", RunStatus::kSuccess, 100, 4, "p");
    last = journal->last_seq();
    REQUIRE(journal->CollectGarbage(1000, {})->run_ids.size() == 1);
  }
  auto journal = OpenJournal(tmp.path());
  CHECK(journal->last_seq() == last);
  Journal::Batch next;
  next.Append(MakeTransition("later", "a", TaskState::kPending, TaskState::kReady));
  REQUIRE(journal->Commit(next).ok());
  CHECK(journal->HistoryOfRun("later")->front().seq == last + 1);
}

TEST_CASE("a big collection runs in bounded transactions and can stop and resume",
          "[storage][gc]") {
  TempDir tmp;
  auto journal = OpenJournal(tmp.path());
  AddRun(*journal, "big", RunStatus::kSuccess, 100, 9000, "p");  // 27,000 transitions
  AddRun(*journal, "small", RunStatus::kSuccess, 200, 10, "p");

  Journal::GcOptions step;
  step.records_per_txn = 10000;
  step.max_records = 10000;
  auto first = journal->CollectGarbage(1000, step);
  REQUIRE(first.ok());
  CHECK_FALSE(first->complete);
  CHECK(first->transactions == 1);
  CHECK(first->run_ids.empty());       // "big" is not finished yet
  CHECK(first->transitions == 10000);  // a record: a transition with its index entries
  // In between, the part left still reads as a (shorter) history.
  CHECK(journal->HistoryOfRun("big")->size() == 27000 - 10000);

  Journal::GcOptions rest;
  rest.records_per_txn = 10000;
  auto second = journal->CollectGarbage(1000, rest);
  REQUIRE(second.ok());
  CHECK(second->complete);
  // 17,000 transitions + 9,010 executions + 2 runs in chunks of 10k, then pipelines.
  CHECK(second->transactions == 4);
  CHECK(second->run_ids == std::vector<std::string>{"big", "small"});
  CHECK(first->transitions + second->transitions == 27000 + 30);
  CHECK(journal->HistoryOfRun("big")->empty());
  CHECK_FALSE(journal->GetPipeline("p")->has_value());
}

TEST_CASE("a read-only journal refuses to collect but can plan", "[storage][gc]") {
  TempDir tmp;
  {
    auto journal = OpenJournal(tmp.path());
    AddRun(*journal, "old", RunStatus::kSuccess, 100, 2, "p");
  }
  JournalOptions options;
  options.read_only = true;
  auto journal = Journal::Open(tmp.path(), options);
  REQUIRE(journal.ok());
  auto refused = (*journal)->CollectGarbage(1000, {});
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.status().code() == StatusCode::kUnsupported);
  Journal::GcOptions dry;
  dry.dry_run = true;
  auto planned = (*journal)->CollectGarbage(1000, dry);
  REQUIRE(planned.ok());
  CHECK(planned->run_ids == std::vector<std::string>{"old"});
}

void WriteFile(const std::string& path, size_t bytes) {
  std::ofstream(path) << std::string(bytes, 'x');
}

TEST_CASE("the log files of removed runs go, in every log dir of the state dir", "[storage][gc]") {
  TempDir tmp;
  std::filesystem::create_directories(tmp.Sub("logs"));
  std::filesystem::create_directories(tmp.Sub("worker-w1/logs"));
  std::filesystem::create_directories(tmp.Sub("journal"));
  WriteFile(tmp.Sub("logs/r1.fetch.1.out"), 100);
  WriteFile(tmp.Sub("logs/r1.fetch.1.err"), 20);
  WriteFile(tmp.Sub("worker-w1/logs/r1.clean.2.out"), 300);
  WriteFile(tmp.Sub("worker-w1/logs/r10.clean.1.out"), 7);  // r10 is not r1
  WriteFile(tmp.Sub("logs/r2.fetch.1.out"), 50);

  const auto dirs = RunLogDirs(tmp.path());
  CHECK(dirs == std::vector<std::string>{tmp.Sub("logs"), tmp.Sub("worker-w1/logs")});

  LogRemoval planned = RemoveRunLogs(dirs, {"r1"}, /*dry_run=*/true);
  CHECK(planned.files == 3);
  CHECK(planned.bytes == 420);
  CHECK(std::filesystem::exists(tmp.Sub("logs/r1.fetch.1.out")));

  LogRemoval removed = RemoveRunLogs(dirs, {"r1"}, /*dry_run=*/false);
  CHECK(removed.files == 3);
  CHECK(removed.bytes == 420);
  CHECK(removed.errors.empty());
  CHECK_FALSE(std::filesystem::exists(tmp.Sub("logs/r1.fetch.1.out")));
  CHECK_FALSE(std::filesystem::exists(tmp.Sub("worker-w1/logs/r1.clean.2.out")));
  CHECK(std::filesystem::exists(tmp.Sub("worker-w1/logs/r10.clean.1.out")));
  CHECK(std::filesystem::exists(tmp.Sub("logs/r2.fetch.1.out")));
}

}  // namespace
}  // namespace apollo11::storage
