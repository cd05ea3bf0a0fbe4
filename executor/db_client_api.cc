#include "executor/db_client_api.h"

namespace apollo11::executor {

Result<const LibPq*> LoadLibPq() {
  static const Result<const LibPq*> loaded =
      APOLLO11_LOAD_SHARED_TABLE(LibPq, APOLLO11_LIBPQ_SONAME, "libpq", APOLLO11_LIBPQ_FUNCTIONS);
  return loaded;
}

Result<const LibMariaDb*> LoadLibMariaDb() {
  static const Result<const LibMariaDb*> loaded = APOLLO11_LOAD_SHARED_TABLE(
      LibMariaDb, APOLLO11_LIBMARIADB_SONAME, "libmariadb", APOLLO11_LIBMARIADB_FUNCTIONS);
  return loaded;
}

Result<const LibSqlite3*> LoadLibSqlite3() {
  static const Result<const LibSqlite3*> loaded = APOLLO11_LOAD_SHARED_TABLE(
      LibSqlite3, APOLLO11_LIBSQLITE3_SONAME, "SQLite", APOLLO11_LIBSQLITE3_FUNCTIONS);
  return loaded;
}

}  // namespace apollo11::executor
