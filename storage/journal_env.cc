// Opening the journal: the LMDB environment, its databases and schema
// version, the checks made before LMDB maps the data file, and the map size.

#include <lmdb.h>
#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>

#include "storage/data_file_check.h"
#include "storage/journal.h"
#include "storage/journal_internal.h"

namespace apollo11::storage {
namespace {

constexpr const char* kSchemaKey = "schema_version";

// The state dirs whose journal is open in this process, keyed "pid:path" so a
// forked child (which must not use its parent's environment) may open its own.
// A process-wide guard is unavoidable here: LMDB's locks are per process.
class OpenRegistry {
 public:
  static OpenRegistry& Get() {
    static OpenRegistry* registry = new OpenRegistry();  // never destroyed
    return *registry;
  }
  bool Claim(const std::string& key) {
    MutexLock lock(&mu_);
    return keys_.insert(key).second;
  }
  void Release(const std::string& key) {
    MutexLock lock(&mu_);
    keys_.erase(key);
  }

 private:
  Mutex mu_;
  std::set<std::string> keys_ GUARDED_BY(mu_);
};

}  // namespace

Journal::Journal(std::string dir, const JournalOptions& options)
    : dir_(std::move(dir)), options_(options), env_(std::make_unique<Env>()) {}

Journal::~Journal() {
  env_.reset();
  if (!registry_key_.empty()) OpenRegistry::Get().Release(registry_key_);
}

Result<std::unique_ptr<Journal>> Journal::Open(const std::string& dir,
                                               const JournalOptions& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!options.read_only) {
    fs::create_directories(dir, ec);
    if (ec) return Status::Io("cannot create state dir " + dir + ": " + ec.message());
  }
  if (!fs::exists(fs::path(dir) / "data.mdb", ec)) {
    if (options.read_only) {
      return Status::NotFound("no journal in " + dir +
                              ": nothing has run with this state dir (check --state-dir)");
    }
  }
  if (fs::exists(fs::path(dir) / "data.mdb", ec)) {
    // LMDB maps the file and trusts its meta page: a short file is SIGBUS.
    auto checked = CheckDataFile(
        (fs::path(dir) / "data.mdb").string(), "journal data file",
        "Stop every node using this state dir, move the journal directory aside, and restore "
        "it from a backup (docs/operations.md, \"A damaged journal\"); or move it aside and "
        "start with an empty journal, which forgets every run.");
    if (!checked.ok()) return checked.status();
  }
  fs::path canonical = fs::canonical(dir, ec);
  if (ec) return Status::Io("cannot resolve state dir " + dir + ": " + ec.message());
  std::string key = std::to_string(getpid()) + ":" + canonical.string();
  if (!OpenRegistry::Get().Claim(key)) {
    return Status::Busy("the journal in " + dir +
                        " is already open in this process; open it once and share it");
  }
  std::unique_ptr<Journal> journal(new Journal(dir, options));
  journal->registry_key_ = key;
  APOLLO11_RETURN_IF_ERROR(journal->OpenEnv());
  return journal;
}

Status Journal::OpenEnv() {
  {
    // Not shared yet: taken for what OpenHandles writes (mapped_).
    WriterMutexLock lock(&resize_mu_);
    APOLLO11_RETURN_IF_ERROR(OpenHandles());
  }
  return ReadPositions();
}

Status Journal::ReadPositions() {
  Result<uint64_t> seq = ReadLastSeq();
  if (!seq.ok()) return seq.status();
  last_seq_ = *seq;
  auto batches = ReadBatchCount();
  if (!batches.ok()) return batches.status();
  last_batch_ = batches->first;
  batch_epoch_ = batches->second;
  Result<uint64_t> epoch = ReadEpoch();
  if (!epoch.ok()) return epoch.status();
  epoch_ = *epoch;
  return Status::Ok();
}

Status Journal::OpenHandles() {
  mapped_.clear();  // the old environment's map, if any, is gone
  APOLLO11_RETURN_IF_ERROR(CreateEnvironment());
  FindMappedRanges();
  ClearStaleReadersAtOpen();
  return OpenDatabases();
}

Status Journal::CreateEnvironment() {
  Env& e = *env_;
  int rc = mdb_env_create(&e.env);
  if (rc != 0) return Error(rc, "create environment");
  rc = mdb_env_set_maxdbs(e.env, 16);
  if (rc == 0) rc = mdb_env_set_mapsize(e.env, options_.initial_map_size);
  if (rc != 0) return Error(rc, "configure environment");
  unsigned flags = MDB_NOTLS;
  if (options_.read_only) flags |= MDB_RDONLY;
  if (options_.sync == JournalOptions::Sync::kNoMetaSync) flags |= MDB_NOMETASYNC;
  if (options_.sync == JournalOptions::Sync::kNone) flags |= MDB_NOSYNC;
  rc = mdb_env_open(e.env, dir_.c_str(), flags, 0644);
  if (rc != 0) return Error(rc, "open environment");
  return Status::Ok();
}

void Journal::ClearStaleReadersAtOpen() {
  // Reader slots of processes that died (kill -9) would pin old pages forever.
  // (LMDB resets the table itself when this is the only process using the
  // environment; the check matters when another process still has it open.)
  Result<int> cleared = ClearStaleReaders();
  if (!cleared.ok()) {
    // Not fatal: the journal works; only old pages stay pinned a while.
    spdlog::warn("journal {}: could not check for stale readers: {}", dir_,
                 cleared.status().message());
  } else if (*cleared > 0) {
    stale_readers_cleared_ = *cleared;
    spdlog::info("journal {}: cleared {} stale reader slot(s) left by dead processes", dir_,
                 *cleared);
  }
}

Status Journal::OpenDatabases() {
  MDB_txn* txn = nullptr;
  int rc = mdb_txn_begin(env_->env, nullptr, options_.read_only ? MDB_RDONLY : 0, &txn);
  if (rc != 0) return Error(rc, "begin the opening transaction");
  Status opened = OpenTables(txn);
  if (opened.ok()) opened = CheckSchemaVersion(txn);
  if (!opened.ok()) {
    mdb_txn_abort(txn);
    return opened;
  }
  rc = mdb_txn_commit(txn);  // also makes the dbi handles usable by every txn
  if (rc != 0) return Error(rc, "commit the opening transaction");
  return Status::Ok();
}

Status Journal::OpenTables(MDB_txn* txn) {
  Env& e = *env_;
  struct Db {
    const char* name;
    MDB_dbi* dbi;
    unsigned flags;
    bool* missing = nullptr;  // set when absent from a read-only journal
  };
  const Db dbs[] = {
      {"transitions", &e.transitions, 0},
      {"run_index", &e.run_index, MDB_DUPSORT | MDB_DUPFIXED},
      {"exec_index", &e.exec_index, MDB_DUPSORT | MDB_DUPFIXED},
      {"executions", &e.executions, 0},
      {"runs", &e.runs, 0},
      {"runs_by_time", &e.runs_by_time, 0},
      {"active_runs", &e.active_runs, 0},
      {"pipelines", &e.pipelines, 0},
      {"stats", &e.stats, 0},
      {"meta", &e.meta, 0},
      {"registry", &e.registry, 0, &e.registry_missing},
  };
  for (const Db& db : dbs) {
    int rc = mdb_dbi_open(txn, db.name, db.flags | (options_.read_only ? 0 : MDB_CREATE), db.dbi);
    if (rc == MDB_NOTFOUND && options_.read_only && db.missing != nullptr) {
      *db.missing = true;
      continue;
    }
    if (rc == MDB_NOTFOUND) {
      return Status::NotFound("the journal in " + dir_ + " has no '" + db.name +
                              "' database yet (is it still being created?)");
    }
    if (rc != 0) return Error(rc, std::string("open database ") + db.name);
  }
  // sched, audit: tables newer than the journal format; a read-only open of an
  // older journal finds none and reads them as empty (dbi 0).
  for (MDB_dbi* dbi : {&e.schedules, &e.fires, &e.audit}) {
    const char* name = dbi == &e.schedules ? "schedules" : dbi == &e.fires ? "fires" : "audit";
    int rc = mdb_dbi_open(txn, name, options_.read_only ? 0 : MDB_CREATE, dbi);
    if (rc == MDB_NOTFOUND && options_.read_only) {
      *dbi = 0;
    } else if (rc != 0) {
      return Error(rc, std::string("open database ") + name);
    }
  }
  return Status::Ok();
}

Status Journal::CheckSchemaVersion(MDB_txn* txn) {
  MDB_val k = Val(kSchemaKey), v;
  int rc = mdb_get(txn, env_->meta, &k, &v);
  if (rc == MDB_NOTFOUND && !options_.read_only) {
    std::string version;
    PutU64(version, kSchemaVersion);
    MDB_val nv = Val(version);
    rc = mdb_put(txn, env_->meta, &k, &nv, 0);
  } else if (rc == 0) {
    uint64_t found = v.mv_size == 8 ? GetU64(View(v)) : ~0ull;
    if (found > kSchemaVersion) {
      return Status::Unsupported("the journal in " + dir_ + " has schema version " +
                                 std::to_string(found) + ", newer than the " +
                                 std::to_string(kSchemaVersion) +
                                 " this build understands; use a newer apollo11");
    }
    if (found < kSchemaVersion && !options_.read_only) {
      // 1 -> 2 converts nothing (older execution values keep their history in
      // exec_index, which is still read); the number stops an older build from
      // writing execution values without their seqs.
      std::string version;
      PutU64(version, kSchemaVersion);
      MDB_val nv = Val(version);
      rc = mdb_put(txn, env_->meta, &k, &nv, 0);
    }
  } else if (rc == MDB_NOTFOUND) {
    rc = 0;  // read-only on a journal whose creator has not committed yet
  }
  if (rc != 0) return Error(rc, "read the schema version");
  return Status::Ok();
}

Result<int> Journal::ClearStaleReaders() {
  int dead = 0;
  int rc = mdb_reader_check(env_->env, &dead);
  if (rc != 0) return Error(rc, "clear stale readers");
  return dead;
}

Status Journal::GrowMap() {
  WriterMutexLock lock(&resize_mu_);
  MDB_envinfo info;
  mdb_env_info(env_->env, &info);
  size_t current = info.me_mapsize;
  if (current >= options_.max_map_size) {
    return Status::Full("journal " + dir_ + ": the map is full at its maximum of " +
                        std::to_string(current >> 20) + " MiB (max_map_size); nothing was written");
  }
  size_t next = std::min(current * 2, options_.max_map_size);
  int rc = mdb_env_set_mapsize(env_->env, next);
  FindMappedRanges();  // the map moved (or, on failure, may be gone)
  if (rc != 0) return Error(rc, "grow the map to " + std::to_string(next >> 20) + " MiB");
  ++map_growths_;
  return Status::Ok();
}

Status Journal::AdoptMapSize() const {
  WriterMutexLock lock(&resize_mu_);
  int rc = mdb_env_set_mapsize(env_->env, 0);
  FindMappedRanges();
  if (rc != 0) return Error(rc, "adopt the map size grown by another process");
  return Status::Ok();
}

void Journal::ReleaseMappedPages() const {
  ReaderMutexLock lock(&resize_mu_);
  ReleaseMappedPagesLocked();
}

void Journal::ReleaseMappedPagesLocked() const {
  for (const auto& [begin, length] : mapped_) {
    (void)madvise(reinterpret_cast<void*>(begin), length, MADV_DONTNEED);
  }
}

void Journal::FindMappedRanges() const {
  mapped_.clear();
  unsigned flags = 0;
  mdb_env_get_flags(env_->env, &flags);
  if (flags & MDB_WRITEMAP) return;  // never set here; its pages would be ours to write
  mdb_filehandle_t fd = -1;
  struct stat st;
  if (mdb_env_get_fd(env_->env, &fd) != 0 || fstat(fd, &st) != 0) return;
  // LMDB does not say where its map is (MDB_envinfo's me_mapaddr is set only
  // with MDB_FIXEDMAP): it is this process's shared mapping of data.mdb,
  // known by its device and inode, or by its path where a stacked file
  // system (overlayfs) shows the lower file's. A failure costs memory, never
  // data: not reported.
  std::error_code ec;
  const std::string path = std::filesystem::weakly_canonical(dir_ + "/data.mdb", ec).string();
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    unsigned long long begin = 0, end = 0, inode = 0;
    char perms[8] = {};
    unsigned major = 0, minor = 0;
    int path_at = 0;
    // "BEGIN-END PERMS OFFSET MAJOR:MINOR INODE [PATH]"
    if (std::sscanf(line.c_str(), "%llx-%llx %7s %*x %x:%x %llu %n", &begin, &end, perms, &major,
                    &minor, &inode, &path_at) != 6 ||
        perms[3] != 's') {
      continue;
    }
    const bool same_file = inode == st.st_ino && makedev(major, minor) == st.st_dev;
    const bool same_path =
        !ec && path_at > 0 && line.compare(path_at, std::string::npos, path) == 0;
    if (!same_file && !same_path) continue;
    mapped_.emplace_back(static_cast<uintptr_t>(begin), static_cast<size_t>(end - begin));
  }
}

size_t Journal::map_size() const {
  ReaderMutexLock lock(&resize_mu_);
  MDB_envinfo info;
  mdb_env_info(env_->env, &info);
  return info.me_mapsize;
}

}  // namespace apollo11::storage
