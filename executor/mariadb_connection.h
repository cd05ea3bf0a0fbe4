#pragma once
// MariadbConnection: a DbConnection over libmariadb (MySQL and MariaDB
// servers). With parameters the SQL is one prepared statement (?
// placeholders, values bound as strings); without, it may be a script of
// several statements (CLIENT_MULTI_STATEMENTS), each committed as the server's
// autocommit says. Cancel: KILL QUERY over a second connection. libmariadb
// is opened by the first Connect (db_client_api.h).

#include <string>
#include <vector>

#include "executor/db_client_api.h"
#include "executor/db_connection.h"

namespace apollo11::executor {

class MariadbConnection final : public DbConnection {
 public:
  MariadbConnection() = default;
  ~MariadbConnection() override;
  MariadbConnection(const MariadbConnection&) = delete;
  MariadbConnection& operator=(const MariadbConnection&) = delete;

  DbRun Connect(const DbTarget& target, const std::string& password,
                int connect_timeout_s) override;
  DbRun Run(const std::string& sql, const std::vector<std::string>& params,
            DbResultJson* rows) override;
  void CancelOnServer() override;

 private:
  // Opens `*out` to the target (multi-statement when `multi`).
  DbRun Open(MYSQL** out, bool multi) const;
  DbRun RunScript(const std::string& sql, DbResultJson* rows);
  DbRun RunPrepared(const std::string& sql, const std::vector<std::string>& params,
                    DbResultJson* rows);
  DbRun Error(unsigned code, const char* state, const char* message) const;

  const LibMariaDb* my_ = nullptr;  // set by Connect
  MYSQL* conn_ = nullptr;
  unsigned long thread_id_ = 0;
  DbTarget target_;
  std::string password_;
  int connect_timeout_s_ = 10;
};

}  // namespace apollo11::executor
