#include "storage/outbox.h"

#include <lmdb.h>

#include <filesystem>
#include <sstream>
#include <string_view>

#include "storage/data_file_check.h"

namespace apollo11::storage {

namespace {

constexpr size_t kInitialMap = 64ull << 20;
constexpr size_t kMaxMap = 8ull << 30;

Status LmdbError(int rc, const std::string& what) {
  std::string text = "outbox: " + what + ": " + mdb_strerror(rc);
  if (rc == ENOSPC || rc == MDB_MAP_FULL) return Status::Full(text);
  return Status::Io(text);
}

MDB_val Val(const std::string& s) { return MDB_val{s.size(), const_cast<char*>(s.data())}; }

// The sub-database of child groups. Its name is a key of the main database
// (LMDB keeps named databases there), which never collides with a result key:
// those always contain a newline.
constexpr char kChildrenDb[] = "children";

// Big-endian, so the cursor walks groups in pgid order.
std::string ChildKey(int32_t pgid) {
  const auto u = static_cast<uint32_t>(pgid);
  return std::string{static_cast<char>(u >> 24), static_cast<char>(u >> 16),
                     static_cast<char>(u >> 8), static_cast<char>(u)};
}

// "START_TIME ATTEMPT KILL_GRACE_MS EXEC_ID": the exec id last, as it is the
// only free-form field.
std::string EncodeChild(const ChildGroup& c) {
  return std::to_string(c.start_time) + " " + std::to_string(c.attempt) + " " +
         std::to_string(c.kill_grace_ms) + " " + c.exec_id;
}

bool DecodeChild(const MDB_val& k, const MDB_val& v, ChildGroup* out) {
  if (k.mv_size != 4) return false;
  const auto* b = static_cast<const unsigned char*>(k.mv_data);
  out->pgid = static_cast<int32_t>(uint32_t{b[0]} << 24 | uint32_t{b[1]} << 16 |
                                   uint32_t{b[2]} << 8 | uint32_t{b[3]});
  std::istringstream in(std::string(static_cast<const char*>(v.mv_data), v.mv_size));
  if (!(in >> out->start_time >> out->attempt >> out->kill_grace_ms)) return false;
  if (in.get() != ' ') return false;
  std::getline(in, out->exec_id, '\0');
  return out->pgid > 0 && !out->exec_id.empty();
}

}  // namespace

struct Outbox::Env {
  MDB_env* env = nullptr;
  MDB_dbi dbi = 0;       // results
  MDB_dbi children = 0;  // child groups
  size_t map_size = kInitialMap;
  ~Env() {
    if (env != nullptr) mdb_env_close(env);
  }
};

Outbox::Outbox(std::unique_ptr<Env> env) : env_(std::move(env)) {}
Outbox::~Outbox() = default;

Result<std::unique_ptr<Outbox>> Outbox::Open(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::Io("outbox: cannot create " + dir + ": " + ec.message());
  if (std::filesystem::exists(dir + "/data.mdb", ec)) {
    // LMDB maps the file and trusts its meta page: a short file is SIGBUS.
    auto checked = CheckDataFile(
        dir + "/data.mdb", "worker outbox data file",
        "Move " + dir +
            " aside and start the worker again: the results it held but had not "
            "delivered are lost, and the coordinator runs those tasks again (docs/operations.md, "
            "\"A damaged journal\").");
    if (!checked.ok()) return checked.status();
  }
  auto env = std::make_unique<Env>();
  int rc = mdb_env_create(&env->env);
  if (rc != 0) return LmdbError(rc, "create environment");
  rc = mdb_env_set_mapsize(env->env, env->map_size);
  if (rc == 0) rc = mdb_env_set_maxdbs(env->env, 1);
  if (rc == 0) rc = mdb_env_open(env->env, dir.c_str(), MDB_NOSYNC | MDB_NOTLS, 0644);
  if (rc != 0) return LmdbError(rc, "open " + dir);
  int dead = 0;
  mdb_reader_check(env->env, &dead);
  // A map larger than ours (grown by an earlier run) is adopted.
  rc = mdb_env_set_mapsize(env->env, 0);
  if (rc != 0) return LmdbError(rc, "adopt the map size");
  MDB_envinfo info;
  if (mdb_env_info(env->env, &info) == 0) env->map_size = info.me_mapsize;
  MDB_txn* txn = nullptr;
  rc = mdb_txn_begin(env->env, nullptr, 0, &txn);
  if (rc != 0) return LmdbError(rc, "begin");
  rc = mdb_dbi_open(txn, nullptr, 0, &env->dbi);
  if (rc == 0) rc = mdb_dbi_open(txn, kChildrenDb, MDB_CREATE, &env->children);
  if (rc != 0) {
    mdb_txn_abort(txn);
    return LmdbError(rc, "open the database");
  }
  rc = mdb_txn_commit(txn);
  if (rc != 0) return LmdbError(rc, "commit");
  return std::unique_ptr<Outbox>(new Outbox(std::move(env)));
}

Status Outbox::Grow() {
  if (env_->map_size >= kMaxMap) return Status::Full("outbox: map at its maximum size");
  const size_t next = env_->map_size * 2;
  int rc = mdb_env_set_mapsize(env_->env, next);
  if (rc != 0) return LmdbError(rc, "grow the map");
  env_->map_size = next;
  return Status::Ok();
}

Status Outbox::Put(const std::vector<std::pair<std::string, std::string>>& items) {
  if (items.empty()) return Status::Ok();
  return PutInto(env_->dbi, items, "store results");
}

Status Outbox::PutInto(unsigned dbi, const std::vector<std::pair<std::string, std::string>>& items,
                       const char* what) {
  for (;;) {
    MDB_txn* txn = nullptr;
    int rc = mdb_txn_begin(env_->env, nullptr, 0, &txn);
    if (rc != 0) return LmdbError(rc, "begin");
    for (const auto& [key, value] : items) {
      MDB_val k = Val(key), v = Val(value);
      rc = mdb_put(txn, dbi, &k, &v, 0);
      if (rc != 0) break;
    }
    if (rc != 0) {
      mdb_txn_abort(txn);
    } else {
      rc = mdb_txn_commit(txn);  // frees the txn even when it fails
    }
    if (rc == 0) return Status::Ok();
    if (rc != MDB_MAP_FULL) return LmdbError(rc, what);
    APOLLO11_RETURN_IF_ERROR(Grow());
  }
}

Status Outbox::Erase(const std::string& key) {
  return EraseFrom(env_->dbi, {key}, "erase a result");
}

Status Outbox::Erase(const std::vector<std::string>& keys) {
  if (keys.empty()) return Status::Ok();
  return EraseFrom(env_->dbi, keys, "erase results");
}

Status Outbox::EraseFrom(unsigned dbi, const std::vector<std::string>& keys, const char* what) {
  MDB_txn* txn = nullptr;
  int rc = mdb_txn_begin(env_->env, nullptr, 0, &txn);
  if (rc != 0) return LmdbError(rc, "begin");
  for (const std::string& key : keys) {
    MDB_val k = Val(key);
    rc = mdb_del(txn, dbi, &k, nullptr);
    if (rc != 0 && rc != MDB_NOTFOUND) {
      mdb_txn_abort(txn);
      return LmdbError(rc, what);
    }
  }
  rc = mdb_txn_commit(txn);
  if (rc != 0) return LmdbError(rc, "commit");
  return Status::Ok();
}

Result<std::vector<std::pair<std::string, std::string>>> Outbox::LoadAll() const {
  std::vector<std::pair<std::string, std::string>> out;
  MDB_txn* txn = nullptr;
  int rc = mdb_txn_begin(env_->env, nullptr, MDB_RDONLY, &txn);
  if (rc != 0) return LmdbError(rc, "begin");
  MDB_cursor* cursor = nullptr;
  rc = mdb_cursor_open(txn, env_->dbi, &cursor);
  if (rc != 0) {
    mdb_txn_abort(txn);
    return LmdbError(rc, "open a cursor");
  }
  MDB_val k, v;
  for (rc = mdb_cursor_get(cursor, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)) {
    if (std::string_view(static_cast<const char*>(k.mv_data), k.mv_size) == kChildrenDb) continue;
    out.emplace_back(std::string(static_cast<const char*>(k.mv_data), k.mv_size),
                     std::string(static_cast<const char*>(v.mv_data), v.mv_size));
  }
  mdb_cursor_close(cursor);
  mdb_txn_abort(txn);
  if (rc != MDB_NOTFOUND) return LmdbError(rc, "read");
  return out;
}

size_t Outbox::size() const {
  MDB_stat st;
  MDB_txn* txn = nullptr;
  if (mdb_txn_begin(env_->env, nullptr, MDB_RDONLY, &txn) != 0) return 0;
  size_t n = mdb_stat(txn, env_->dbi, &st) == 0 ? st.ms_entries : 0;
  mdb_txn_abort(txn);
  return n > 0 ? n - 1 : 0;  // the children sub-database's own entry
}

Status Outbox::PutChild(const ChildGroup& child) {
  return PutInto(env_->children, {{ChildKey(child.pgid), EncodeChild(child)}},
                 "record a child process group");
}

Status Outbox::EraseChild(int32_t pgid) {
  return EraseFrom(env_->children, {ChildKey(pgid)}, "forget a child process group");
}

Result<std::vector<ChildGroup>> Outbox::LoadChildren() const {
  std::vector<ChildGroup> out;
  MDB_txn* txn = nullptr;
  int rc = mdb_txn_begin(env_->env, nullptr, MDB_RDONLY, &txn);
  if (rc != 0) return LmdbError(rc, "begin");
  MDB_cursor* cursor = nullptr;
  rc = mdb_cursor_open(txn, env_->children, &cursor);
  if (rc != 0) {
    mdb_txn_abort(txn);
    return LmdbError(rc, "open a cursor");
  }
  MDB_val k, v;
  bool corrupt = false;
  for (rc = mdb_cursor_get(cursor, &k, &v, MDB_FIRST); rc == 0;
       rc = mdb_cursor_get(cursor, &k, &v, MDB_NEXT)) {
    ChildGroup c;
    if (!DecodeChild(k, v, &c)) {
      corrupt = true;
      break;
    }
    out.push_back(std::move(c));
  }
  mdb_cursor_close(cursor);
  mdb_txn_abort(txn);
  if (corrupt) return Status::Corrupt("outbox: an unreadable child process group record");
  if (rc != MDB_NOTFOUND) return LmdbError(rc, "read child process groups");
  return out;
}

}  // namespace apollo11::storage
