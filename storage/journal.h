#pragma once
// The LMDB journal: every task state transition, the current state of every
// execution and run, pipeline snapshots, duration statistics and meta data
// (epoch, schema version), in one LMDB environment under a state dir.
//
// Threads and processes: one Journal per process per state dir (Open refuses a
// second one in the same process: LMDB's locks are per process, so a second
// environment on the same files would corrupt them; never use a Journal across
// fork). One thread, the scheduler, calls the write methods (Commit,
// BumpEpoch); read methods may be called from any thread at any time, and
// other processes may read the same dir (read_only) while this one writes.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/mutex.h"
#include "common/status.h"
#include "storage/commit_observer.h"
#include "storage/records.h"
#include "storage/run_batch.h"
#include "storage/run_store.h"

struct MDB_txn;

namespace apollo11::storage {

struct JournalOptions {
  // The map starts at this size and doubles on MDB_MAP_FULL up to max.
  size_t initial_map_size = 64 << 20;
  size_t max_map_size = 64ull << 30;
  // Readers (CLI `history`, a dashboard) open read_only; they need an existing
  // journal.
  bool read_only = false;
  // kFull: a committed batch survives power loss (two fsyncs per commit).
  // kNoMetaSync: integrity is kept, but the last commit(s) may be lost on power
  // loss (not on a process crash). kNone: the OS decides; a crash of the
  // machine may lose recent commits and, on some file systems, integrity.
  enum class Sync { kFull, kNoMetaSync, kNone } sync = Sync::kFull;
  // Every this many write commits, the pages of the map this process has
  // touched are let go (ReleaseMappedPages); 0 = never. At 32 the pages a
  // 100k-task run's commits touched in between were up to 10 MB of the
  // coordinator's RSS, at 8 up to 7; a 5k-task run took as long either way.
  uint32_t release_mapped_every = 8;
};

class Journal final : public RunStore {
 public:
  // The schema this build writes; Open refuses a journal with a newer one.
  // 2: an execution's transition seqs are kept in its value (exec_index only
  // for older records); a journal of schema 1 is raised to 2 when opened for
  // writing, with nothing to convert.
  static constexpr uint32_t kSchemaVersion = 2;

  // Opens (creating `dir` and the journal unless read_only) the journal in
  // `dir` and clears stale reader slots left by dead processes (logged, and
  // counted in stale_readers_cleared()). Errors:
  // NotFound (read_only and no journal), Unsupported (newer schema), Busy
  // (already open in this process), Io.
  static Result<std::unique_ptr<Journal>> Open(const std::string& dir,
                                               const JournalOptions& options);
  ~Journal() override;
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  // A group commit: everything appended lands in ONE write transaction or not
  // at all.
  using Batch = RunBatch;

  // Commits `batch` atomically, assigning gap-free increasing seq numbers, and
  // clears it on success. On MDB_MAP_FULL the map is grown (doubling, up to
  // max_map_size) and the whole batch retried. On failure nothing is applied,
  // no seq is consumed, and `batch` is left as it was so it can be committed
  // again: Full (disk or map at max; retry when space returns), InvalidInput
  // (an empty key or one longer than 511 bytes, or a created run whose id is
  // stored already), Io. Writer thread only.
  Status Commit(Batch& batch) override;

  // The seq of the last committed transition (0 when none). Any thread; for a
  // read_only journal it reads the current value from disk.
  uint64_t last_seq() const override;
  // Sees every batch Commit stores from now on (not ApplyReplicated's), on
  // the writer thread, before Commit returns; null: none. Set it while no
  // Commit runs; `observer` must outlive its registration.
  void SetCommitObserver(CommitObserver* observer) { observer_ = observer; }
  // Any thread; for a read_only journal, the value when it was opened.
  uint64_t last_batch() const override { return last_batch_.load(); }
  uint64_t last_batch_epoch() const override { return batch_epoch_.load(); }
  // See RunStore; also refused (Unsupported) on a read_only journal.
  Status ApplyReplicated(uint64_t batch_no, uint64_t first_seq, uint64_t epoch,
                         Batch& batch) override;

  // Writes a consistent, compacted copy of the journal as one read
  // transaction sees it (mdb_env_copy2) to `dir`/data.mdb (`dir` is created;
  // it must hold no data.mdb), and returns the position it holds: the copy
  // opened as a journal has these last_batch() and last_seq(). Any thread;
  // commits go on meanwhile.
  struct CopyPosition {
    uint64_t batch = 0, seq = 0, batch_epoch = 0;
  };
  Result<CopyPosition> CopyTo(const std::string& dir) const;
  // Replaces this journal's data with `data_file` (a CopyTo result, checked
  // to open as a journal; renamed over data.mdb, atomic on disk) and reopens
  // it in place: the object, and pointers to it, stay valid; readers wait
  // meanwhile. The journal keeps the higher of its own Epoch() and the
  // copy's, so a term begun meanwhile (BeginTerm on another thread) is not
  // undone by the copy. On an error after the swap began the journal is unusable
  // (Io) and the process should exit. Writer thread only; not read_only.
  Status InstallCopy(const std::string& data_file);

  // Transitions of one run / one execution, oldest first (by seq).
  Result<std::vector<TransitionRecord>> HistoryOfRun(const std::string& run_id) override;
  Result<std::vector<TransitionRecord>> HistoryOfExecution(const std::string& exec_id) override;
  Result<std::optional<RunRecord>> GetRun(const std::string& run_id) override;
  Result<std::string> LastCreatedRunId() override;
  // The newest `limit` runs by created_at, newest first.
  Result<std::vector<RunRecord>> ListRuns(size_t limit) override;
  Result<RunPage> ListRunsPage(const RunFilter& filter) override;
  // Current state of every execution of a run, ordered by exec id.
  Result<std::vector<ExecutionRecord>> ExecutionsOfRun(const std::string& run_id) override;
  Result<bool> HasExecutionsOf(const std::string& run_id) override;
  // In one read transaction, without holding them all (a 100k-task run's
  // records are ~50 MB in memory).
  Status ForEachExecutionOfRun(const std::string& run_id,
                               const std::function<Status(ExecutionRecord&)>& visit) override;
  Result<std::optional<ExecutionRecord>> GetExecution(const std::string& exec_id) override;
  Result<std::optional<std::string>> GetPipeline(const std::string& hash) override;
  Result<std::vector<ScheduleRecord>> Schedules() override;
  Result<std::vector<FireRecord>> Fires(const std::string& pipeline, Micros from,
                                        Micros to) override;
  Result<std::optional<FireRecord>> LastFire(const std::string& pipeline) override;

  // The median of the last 64 durations recorded for `stats_key` (mean of the
  // two middle ones for an even count); nullopt without history.
  Result<std::optional<Micros>> DurationP50(const std::string& stats_key) override;
  // Runs whose status is not final, for recovery; ordered by run id.
  Result<std::vector<RunRecord>> UnfinishedRuns() override;

  // registry: see RunStore (journal_registry.cc).
  Result<std::vector<PipelineStateRecord>> ListPipelineStates() override;
  Result<std::optional<PipelineStateRecord>> GetPipelineState(const std::string& name) override;
  Result<std::vector<PipelineVersionRecord>> PipelineVersions(const std::string& name) override;
  Result<std::optional<std::string>> RunOfTriggerKey(const std::string& name,
                                                     const std::string& key) override;
  // audit: see AuditStore (journal_audit.cc).
  using AuditStore::ListAudit;
  Result<std::vector<AuditRecord>> ListAudit(const AuditFilter& filter, bool* complete) override;
  Result<size_t> PruneAudit(Micros before, size_t max_records) override;

  // Increments and durably stores the coordinator epoch, returning the new
  // value (1 on a fresh journal). Writer thread only.
  Result<uint64_t> BumpEpoch() override;
  // The current epoch (0 before the first BumpEpoch).
  Result<uint64_t> Epoch() override;
  // Stores `epoch` if above the current one (see RunStore::BeginTerm).
  Result<uint64_t> BeginTerm(uint64_t epoch) override;

  // Retention. Removes runs that are final (SUCCESS, FAILED, CANCELED) and
  // finished before `finished_before`, with their transitions, execution
  // records and every index entry, then the pipeline snapshots of removed runs
  // that no remaining run references. A run that is not final is never
  // touched. Deletes in write transactions of at most `records_per_txn`
  // records, so a huge collection never holds one giant transaction; a crash
  // part-way leaves whole transactions, and the run record goes last, so the
  // next collection finishes the job. Writer thread only (dry_run: any thread,
  // also on a read_only journal).
  struct GcOptions {
    size_t records_per_txn = 10000;
    // Stop (complete = false) once this many records are deleted; the caller
    // calls again to continue. Lets the scheduler interleave GC with its work.
    size_t max_records = SIZE_MAX;
    bool dry_run = false;  // count what would go; change nothing
  };
  struct GcReport {
    std::vector<std::string> run_ids;  // removed runs (or that would be), oldest first
    uint64_t transitions = 0, executions = 0, index_entries = 0, pipelines = 0;
    uint64_t transactions = 0;  // write transactions committed
    bool complete = true;       // false: stopped at max_records; call again
  };
  Result<GcReport> CollectGarbage(Micros finished_before, const GcOptions& options);

  // Clears the reader slots of dead processes (a CLI reader killed with -9
  // while this process runs would otherwise pin old pages and grow the file).
  // Returns how many were cleared. Any thread.
  Result<int> ClearStaleReaders();
  // Stale reader slots cleared when the journal was opened.
  int stale_readers_cleared() const { return stale_readers_cleared_; }
  // How often the map was grown on MDB_MAP_FULL, and how many of those came
  // from mdb_txn_commit itself (after which LMDB has already freed the txn).
  uint64_t map_growths() const { return map_growths_.load(); }
  uint64_t map_full_at_commit() const { return map_full_at_commit_.load(); }

  // Current size of the memory map in bytes. Any thread.
  size_t map_size() const;

  // Unmaps from this process the journal pages it has read (madvise
  // MADV_DONTNEED on LMDB's read-only shared map). They stay in the page
  // cache, and the next read maps them again with a minor fault, so nothing
  // a transaction sees changes; what goes is their count in this process's
  // RSS: without it every page a run ever touched (tens of MB at 100k tasks)
  // stays mapped for as long as the coordinator lives. Write commits call
  // it every release_mapped_every commits. Any thread.
  void ReleaseMappedPages() const;
  const std::string& dir() const { return dir_; }

 private:
  struct Env;  // LMDB handles
  class ReadTxn;
  Journal(std::string dir, const JournalOptions& options);
  // OpenHandles, then ReadPositions.
  Status OpenEnv();
  // Opens the environment and its databases (no transaction of this process
  // may be open on the previous one).
  Status OpenHandles() REQUIRES(resize_mu_);
  // Reads last_seq_ and last_batch_ from disk.
  Status ReadPositions();
  // OpenHandles' steps, in its order: creates, configures and opens the LMDB
  // environment; clears (and logs) the reader slots of dead processes; opens
  // every database and checks the schema version in one transaction (its
  // two parts: OpenTables, CheckSchemaVersion, which stamp a writable
  // journal).
  Status CreateEnvironment();
  void ClearStaleReadersAtOpen();
  Status OpenDatabases();
  Status OpenTables(MDB_txn* txn);
  Status CheckSchemaVersion(MDB_txn* txn);
  // Runs `body` in a write transaction and commits it, growing the map and
  // retrying the whole transaction on MDB_MAP_FULL. `body` returns an LMDB or
  // errno code; on any error the transaction is aborted.
  Status RunWrite(const char* what, const std::function<int(MDB_txn*)>& body);
  // Writes `batch` in `txn`; an LMDB error code, MDB_KEYEXIST with
  // `*refused_run` set when a created run's id is stored already.
  int WriteBatch(MDB_txn* txn, const Batch& batch, uint64_t first_seq, std::string* refused_run);
  // Writes the batch's execution records, each with the seqs of its
  // transitions (this batch's appended to those stored), and indexes in
  // exec_index only the transitions of an execution that has no record.
  int WriteExecutions(MDB_txn* txn, const Batch& batch, uint64_t first_seq);
  // Writes one run record and its indexes; `create`: MDB_KEYEXIST rather
  // than replace a stored record.
  int WriteRun(MDB_txn* txn, const RunRecord& r, bool create);
  // registry: writes the batch's versions, states and trigger keys.
  int WriteRegistry(MDB_txn* txn, const Batch& batch);
  // audit: writes the batch's audit records under AuditId(batch_no, i).
  int WriteAudit(MDB_txn* txn, const Batch& batch, uint64_t batch_no);
  // registry: removes from `hashes` the snapshots a registered version names
  // (retention never deletes those).
  int KeepRegisteredHashes(MDB_txn* txn, std::set<std::string>* hashes);
  Status GrowMap() EXCLUDES(resize_mu_);
  Status AdoptMapSize() const EXCLUDES(resize_mu_);
  // ReleaseMappedPages with resize_mu_ held (shared or exclusive).
  void ReleaseMappedPagesLocked() const REQUIRES_SHARED(resize_mu_);
  // Sets mapped_ from /proc/self/maps. Wherever LMDB (re)maps the file: after
  // mdb_env_open and mdb_env_set_mapsize, with resize_mu_ held exclusively.
  void FindMappedRanges() const REQUIRES(resize_mu_);
  Status Error(int rc, const std::string& what) const;
  Result<std::vector<TransitionRecord>> HistoryByIndex(unsigned dbi, const std::string& key);
  Result<uint64_t> ReadLastSeq() const;
  // The batch count and the epoch of the last batch.
  Result<std::pair<uint64_t, uint64_t>> ReadBatchCount() const;
  // Commit with the given numbering and batch epoch (Commit's and
  // ApplyReplicated's body); leaves `batch` as it was.
  Status WriteNumbered(uint64_t batch_no, uint64_t first_seq, uint64_t epoch, Batch& batch);
  // The stored epoch (meta kEpochKey), 0 when none.
  Result<uint64_t> ReadEpoch() const;
  struct GcStep;
  int GcDeleteStep(MDB_txn* txn, Micros finished_before, size_t budget, GcStep* step);
  int GcRemoveUnreferencedPipelines(MDB_txn* txn, const std::set<std::string>& candidates,
                                    uint64_t* removed);
  Result<GcReport> GcDryRun(Micros finished_before);

  const std::string dir_;
  std::string registry_key_;  // this process's claim on dir_ (see Open)
  const JournalOptions options_;
  // Replaced (InstallCopy) only with resize_mu_ held exclusively, used with
  // it held shared. Not GUARDED_BY: its handles are used inside the bodies
  // RunWrite runs under the lock, lambdas the analysis does not follow.
  std::unique_ptr<Env> env_;
  // Held shared by every transaction, exclusive while the map is resized (LMDB
  // requires that no transaction of this process is open then).
  mutable SharedMutex resize_mu_;
  // Where this process maps data.mdb (address, length), for
  // ReleaseMappedPages: read under resize_mu_ shared, written only where the
  // map moves (FindMappedRanges), so a cached address is never a stale one.
  // Found once per map rather than per release: reading /proc/self/maps took
  // about 300 µs, paid by every 8th commit.
  mutable std::vector<std::pair<uintptr_t, size_t>> mapped_ GUARDED_BY(resize_mu_);
  std::atomic<uint64_t> last_seq_{0};
  std::atomic<uint64_t> last_batch_{0};
  std::atomic<uint64_t> batch_epoch_{0};  // last_batch_epoch()
  std::atomic<uint64_t> epoch_{0};        // Epoch(), cached for Commit
  // Held by BumpEpoch, BeginTerm and InstallCopy: a term begun on the
  // elector's thread is never lost under a copy installed on another.
  Mutex term_mu_ ACQUIRED_BEFORE(resize_mu_);
  CommitObserver* observer_ = nullptr;
  int stale_readers_cleared_ = 0;
  std::atomic<uint64_t> map_growths_{0};
  std::atomic<uint64_t> map_full_at_commit_{0};
  std::atomic<uint32_t> commits_since_release_{0};
};

}  // namespace apollo11::storage
