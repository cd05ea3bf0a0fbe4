#include "storage/outbox.h"

#include <lmdb.h>

#include <filesystem>

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

}  // namespace

struct Outbox::Env {
  MDB_env* env = nullptr;
  MDB_dbi dbi = 0;
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
  auto env = std::make_unique<Env>();
  int rc = mdb_env_create(&env->env);
  if (rc != 0) return LmdbError(rc, "create environment");
  rc = mdb_env_set_mapsize(env->env, env->map_size);
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
  for (;;) {
    MDB_txn* txn = nullptr;
    int rc = mdb_txn_begin(env_->env, nullptr, 0, &txn);
    if (rc != 0) return LmdbError(rc, "begin");
    for (const auto& [key, value] : items) {
      MDB_val k = Val(key), v = Val(value);
      rc = mdb_put(txn, env_->dbi, &k, &v, 0);
      if (rc != 0) break;
    }
    if (rc != 0) {
      mdb_txn_abort(txn);
    } else {
      rc = mdb_txn_commit(txn);  // frees the txn even when it fails
    }
    if (rc == 0) return Status::Ok();
    if (rc != MDB_MAP_FULL) return LmdbError(rc, "store results");
    APOLLO11_RETURN_IF_ERROR(Grow());
  }
}

Status Outbox::Erase(const std::string& key) {
  MDB_txn* txn = nullptr;
  int rc = mdb_txn_begin(env_->env, nullptr, 0, &txn);
  if (rc != 0) return LmdbError(rc, "begin");
  MDB_val k = Val(key);
  rc = mdb_del(txn, env_->dbi, &k, nullptr);
  if (rc != 0 && rc != MDB_NOTFOUND) {
    mdb_txn_abort(txn);
    return LmdbError(rc, "erase a result");
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
  return n;
}

}  // namespace apollo11::storage
