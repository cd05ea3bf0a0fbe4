#pragma once
// DbConnection: one connection to a database, used by a DbPool thread to run
// a db task's SQL. Implementations: PostgresConnection (libpq),
// MariadbConnection (libmariadb, MySQL and MariaDB), SqliteConnection.
//
// Thread safety: Connect and Run are called on one pool thread;
// CancelOnServer may be called on another thread while Run is in progress
// (never concurrently with the connection's destruction: the caller holds a
// lock around both).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "executor/db_result_json.h"
#include "executor/db_target.h"

namespace apollo11::executor {

// How one statement (or script) ended.
struct DbRun {
  bool ok = false;
  // Failure only: the server's (or library's) message with its code, and
  // whether trying again may help (connection problems, deadlocks, a busy
  // server), see docs/dsl.md "db tasks".
  std::string error;
  bool retryable = false;
  int code = 0;  // MySQL error number or SQLite result code; 0 for PostgreSQL
  // Success only: "3 rows returned", "1 row affected".
  std::string summary;

  // A failure with no server code.
  static DbRun Failure(std::string error, bool retryable) {
    DbRun r;
    r.error = std::move(error);
    r.retryable = retryable;
    return r;
  }
};

class DbConnection {
 public:
  virtual ~DbConnection() = default;

  // Opens the connection, giving up after `connect_timeout_s` seconds.
  virtual DbRun Connect(const DbTarget& target, const std::string& password,
                        int connect_timeout_s) = 0;
  // Runs `sql` with `params` bound in order ($1.. or ?); with no params
  // several statements may be given (the last one's rows are kept). Rows go
  // into `rows`. Blocks until the server answers.
  virtual DbRun Run(const std::string& sql, const std::vector<std::string>& params,
                    DbResultJson* rows) = 0;
  // Asks the server to stop the statement Run is executing (PQcancel, KILL
  // QUERY over a second connection, sqlite3_interrupt). May block for a
  // bounded time; Run then returns its "canceled" error.
  virtual void CancelOnServer() = 0;
};

// A connection of the kind `target` names; not yet connected.
std::unique_ptr<DbConnection> NewDbConnection(const DbTarget& target);

}  // namespace apollo11::executor
