#pragma once
// SqliteConnection: a DbConnection over SQLite. The file is opened read-write
// and created when missing; a script's statements run one after another
// (each its own transaction unless the script says BEGIN), every statement
// that has placeholders (?, ?NNN) gets the params bound in order. A busy
// database is waited for up to 5 s. Cancel: sqlite3_interrupt. SQLite is
// opened by the first Connect (db_client_api.h).

#include <string>
#include <vector>

#include "executor/db_client_api.h"
#include "executor/db_connection.h"

namespace apollo11::executor {

class SqliteConnection final : public DbConnection {
 public:
  SqliteConnection() = default;
  ~SqliteConnection() override;
  SqliteConnection(const SqliteConnection&) = delete;
  SqliteConnection& operator=(const SqliteConnection&) = delete;

  DbRun Connect(const DbTarget& target, const std::string& password,
                int connect_timeout_s) override;
  DbRun Run(const std::string& sql, const std::vector<std::string>& params,
            DbResultJson* rows) override;
  void CancelOnServer() override;

 private:
  DbRun Error(int code) const;
  // Steps `stmt` to its end, keeping its rows when it returns any.
  int Step(sqlite3_stmt* stmt, DbResultJson* rows);

  const LibSqlite3* sq_ = nullptr;  // set by Connect
  sqlite3* db_ = nullptr;
};

}  // namespace apollo11::executor
