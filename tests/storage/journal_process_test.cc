// The journal across processes: a reader while another process writes, a
// writer killed with -9, a reader killed with -9, and a full disk
// (RLIMIT_FSIZE in a child).

#include <lmdb.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>

#include "storage/journal.h"
#include "tests/storage/storage_test_util.h"

namespace apollo11::storage {
namespace {

using testing::MakeTransition;
using testing::RunInChild;
using testing::TempDir;

Journal::Batch MakeBatch(int batch_no, int size) {
  Journal::Batch batch;
  for (int i = 0; i < size; ++i) {
    batch.Append(MakeTransition("r" + std::to_string(batch_no % 4), "t" + std::to_string(i),
                                TaskState::kReady, TaskState::kRunning, batch_no));
  }
  return batch;
}

// Checks that seqs in `history` increase; returns "" or what is wrong.
std::string CheckIncreasing(const std::vector<TransitionRecord>& history) {
  for (size_t i = 1; i < history.size(); ++i) {
    if (history[i].seq <= history[i - 1].seq) return "seq not increasing";
  }
  return "";
}

// Forks a child that opens the environment in `dir` with raw LMDB and, when
// `read_txn`, begins a read transaction; it then reports "r" on a pipe and
// waits to be killed. Returns the child's pid once it is ready.
pid_t SpawnLmdbHolder(const std::string& dir, bool read_txn) {
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    MDB_env* env = nullptr;
    if (mdb_env_create(&env) != 0 || mdb_env_set_maxdbs(env, 16) != 0 ||
        mdb_env_open(env, dir.c_str(), MDB_RDONLY | MDB_NOTLS, 0644) != 0) {
      _exit(1);
    }
    MDB_txn* txn = nullptr;
    if (read_txn && mdb_txn_begin(env, nullptr, MDB_RDONLY, &txn) != 0) _exit(2);
    if (write(fds[1], "r", 1) != 1) _exit(3);
    for (;;) pause();
  }
  close(fds[1]);
  char c = 0;
  REQUIRE(read(fds[0], &c, 1) == 1);
  close(fds[0]);
  return pid;
}

void KillAndReap(pid_t pid) {
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
}

TEST_CASE("a reader killed with -9 leaves a slot that the next Open clears", "[storage]") {
  TempDir tmp;
  {
    auto journal = Journal::Open(tmp.path(), JournalOptions{});
    REQUIRE(journal.ok());
    Journal::Batch batch = MakeBatch(0, 10);
    REQUIRE((*journal)->Commit(batch).ok());
    CHECK((*journal)->stale_readers_cleared() == 0);
  }
  // While any process keeps the environment open LMDB keeps its reader table,
  // so a dead reader's slot survives until someone checks.
  pid_t keeper = SpawnLmdbHolder(tmp.path(), /*read_txn=*/false);
  pid_t reader = SpawnLmdbHolder(tmp.path(), /*read_txn=*/true);
  KillAndReap(reader);
  auto journal = Journal::Open(tmp.path(), JournalOptions{});
  REQUIRE(journal.ok());
  CHECK((*journal)->stale_readers_cleared() == 1);
  // The writer goes on (an uncleared slot would pin the pages it read).
  Journal::Batch more = MakeBatch(1, 10);
  CHECK((*journal)->Commit(more).ok());
  KillAndReap(keeper);
}

TEST_CASE("a running writer clears the slot of a reader killed while it runs", "[storage]") {
  TempDir tmp;
  auto journal = Journal::Open(tmp.path(), JournalOptions{});
  REQUIRE(journal.ok());
  Journal::Batch batch = MakeBatch(0, 10);
  REQUIRE((*journal)->Commit(batch).ok());
  pid_t reader = SpawnLmdbHolder(tmp.path(), /*read_txn=*/true);
  auto none = (*journal)->ClearStaleReaders();
  REQUIRE(none.ok());
  CHECK(*none == 0);  // alive: its slot stays
  KillAndReap(reader);
  auto cleared = (*journal)->ClearStaleReaders();
  REQUIRE(cleared.ok());
  CHECK(*cleared == 1);
}

TEST_CASE("another process reads consistent history while this one writes", "[storage]") {
  TempDir tmp;
  constexpr int kBatches = 300, kPerBatch = 100;
  int to_child[2], to_parent[2];
  REQUIRE(pipe(to_child) == 0);
  REQUIRE(pipe(to_parent) == 0);
  pid_t pid = fork();  // before this process opens anything
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(to_child[1]);
    close(to_parent[0]);
    char c;
    std::string report = "ok";
    bool told = false;
    if (read(to_child[0], &c, 1) != 1) _exit(10);
    JournalOptions options;
    options.read_only = true;
    options.initial_map_size = 1 << 20;  // so the writer's growth forces MDB_MAP_RESIZED here
    auto journal = Journal::Open(tmp.path(), options);
    if (!journal.ok()) {
      report = journal.status().ToString();
    } else {
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      size_t seen = 0, reads = 0;
      while (report == "ok" && seen < size_t{kBatches} * kPerBatch) {
        if (std::chrono::steady_clock::now() > give_up) {
          report = "gave up after seeing " + std::to_string(seen);
          break;
        }
        size_t total = 0;
        for (int r = 0; r < 4 && report == "ok"; ++r) {
          auto history = (*journal)->HistoryOfRun("r" + std::to_string(r));
          if (!history.ok()) {
            report = history.status().ToString();
          } else if (std::string bad = CheckIncreasing(*history); !bad.empty()) {
            report = bad;
          } else {
            total += history->size();
          }
        }
        // Every committed batch is whole: a reader never sees part of one.
        if (report == "ok" && total % kPerBatch != 0) report = "saw a partial batch";
        if (report == "ok" && total < seen) report = "history shrank";
        seen = total;
        ++reads;
        if (!told) {  // let the writer go on only once we are reading
          told = true;
          if (write(to_parent[1], "r", 1) != 1) _exit(11);
        }
      }
      if (report == "ok" && reads < 2) report = "read only once";
    }
    if (!told && write(to_parent[1], "r", 1) != 1) _exit(11);
    ssize_t ignored = write(to_parent[1], report.data(), report.size());
    (void)ignored;
    _exit(0);
  }
  close(to_child[0]);
  close(to_parent[1]);
  JournalOptions options;
  options.initial_map_size = 1 << 20;  // grows while the child reads
  options.sync = JournalOptions::Sync::kNone;
  auto journal = Journal::Open(tmp.path(), options);
  REQUIRE(journal.ok());
  Journal::Batch first = MakeBatch(0, kPerBatch);
  REQUIRE((*journal)->Commit(first).ok());
  REQUIRE(write(to_child[1], "g", 1) == 1);
  char c;
  REQUIRE(read(to_parent[0], &c, 1) == 1);
  for (int b = 1; b < kBatches; ++b) {
    Journal::Batch batch = MakeBatch(b, kPerBatch);
    REQUIRE((*journal)->Commit(batch).ok());
  }
  std::string report;
  char buf[256];
  ssize_t n;
  while ((n = read(to_parent[0], buf, sizeof buf)) > 0) report.append(buf, n);
  int status = 0;
  waitpid(pid, &status, 0);
  close(to_child[1]);
  close(to_parent[0]);
  CHECK((*journal)->map_size() > (1u << 20));
  REQUIRE(WIFEXITED(status));
  CHECK(report == "ok");
}

TEST_CASE("a writer killed with -9 loses nothing it committed", "[storage]") {
  TempDir tmp;
  int fds[2];
  REQUIRE(pipe(fds) == 0);
  pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    close(fds[0]);
    auto journal = Journal::Open(tmp.path(), JournalOptions{});
    if (!journal.ok()) _exit(1);
    for (int b = 0;; ++b) {  // until killed
      Journal::Batch batch = MakeBatch(b, 10);
      if (!(*journal)->Commit(batch).ok()) _exit(2);
      uint64_t seq = (*journal)->last_seq();
      if (write(fds[1], &seq, sizeof seq) != sizeof seq) _exit(3);
    }
  }
  close(fds[1]);
  uint64_t acknowledged = 0;
  for (int i = 0; i < 20; ++i) {  // 20 commits reported durable
    REQUIRE(read(fds[0], &acknowledged, sizeof acknowledged) == sizeof acknowledged);
  }
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  close(fds[0]);
  REQUIRE(WIFSIGNALED(status));

  auto journal = Journal::Open(tmp.path(), JournalOptions{});  // clears the dead reader slots
  REQUIRE(journal.ok());
  const uint64_t last = (*journal)->last_seq();
  CHECK(last >= acknowledged);
  CHECK(last % 10 == 0);  // whole batches only
  size_t total = 0;
  for (int r = 0; r < 4; ++r) {
    auto history = (*journal)->HistoryOfRun("r" + std::to_string(r));
    REQUIRE(history.ok());
    total += history->size();
  }
  CHECK(total == last);
  Journal::Batch more = MakeBatch(0, 1);
  REQUIRE((*journal)->Commit(more).ok());
  CHECK((*journal)->last_seq() == last + 1);
}

TEST_CASE("a full disk is a Full error with nothing applied, and the batch commits later",
          "[storage]") {
  TempDir tmp;
  std::string report = RunInChild([&]() -> std::string {
    signal(SIGXFSZ, SIG_IGN);  // writes past the limit fail with EFBIG instead
    auto journal = Journal::Open(tmp.path(), JournalOptions{});
    if (!journal.ok()) return journal.status().ToString();
    Journal::Batch small = MakeBatch(0, 10);
    if (!(*journal)->Commit(small).ok()) return "first commit failed";
    struct stat st;
    if (stat((tmp.path() + "/data.mdb").c_str(), &st) != 0) return "no data.mdb";
    struct rlimit old_limit;
    getrlimit(RLIMIT_FSIZE, &old_limit);
    struct rlimit limit = old_limit;
    limit.rlim_cur = static_cast<rlim_t>(st.st_size);  // no file may grow
    if (setrlimit(RLIMIT_FSIZE, &limit) != 0) return "setrlimit failed";

    Journal::Batch big = MakeBatch(1, 5000);
    RunRecord run_record;
    run_record.run_id = "r1";
    run_record.status = RunStatus::kRunning;
    big.PutRun(run_record);
    Status s = (*journal)->Commit(big);
    if (s.code() != StatusCode::kFull) return "expected Full, got " + s.ToString();
    if ((*journal)->last_seq() != 10) return "seq consumed by a failed commit";
    if (big.transitions() != 5000) return "batch not kept";
    auto run = (*journal)->GetRun("r1");
    if (!run.ok() || run->has_value()) return "half-applied: run visible";
    auto history = (*journal)->HistoryOfRun("r1");
    if (!history.ok() || !history->empty()) return "half-applied: history visible";

    if (setrlimit(RLIMIT_FSIZE, &old_limit) != 0) return "cannot lift the limit";
    s = (*journal)->Commit(big);
    if (!s.ok()) return "retry failed: " + s.ToString();
    if ((*journal)->last_seq() != 5010) return "wrong seq after retry";
    history = (*journal)->HistoryOfRun("r1");
    if (!history.ok() || history->size() != 5000) return "retry not readable";
    return "ok";
  });
  CHECK(report == "ok");
  // And the journal is intact for the next process.
  auto journal = Journal::Open(tmp.path(), JournalOptions{});
  REQUIRE(journal.ok());
  CHECK((*journal)->last_seq() == 5010);
}

}  // namespace
}  // namespace apollo11::storage
