#pragma once
// PostgresConnection: a DbConnection over libpq. The URL goes to libpq as
// is (so its options work: ?sslmode=, ?host=/socket/dir); parameters go
// through PQexecParams as text ($1, $2, ...), a script without parameters
// through PQexec (one implicit transaction for the whole script, as psql -c).
// Cancel: PQcancel.

#include <libpq-fe.h>

#include <string>
#include <vector>

#include "executor/db_connection.h"

namespace apollo11::executor {

class PostgresConnection final : public DbConnection {
 public:
  PostgresConnection() = default;
  ~PostgresConnection() override;
  PostgresConnection(const PostgresConnection&) = delete;
  PostgresConnection& operator=(const PostgresConnection&) = delete;

  DbRun Connect(const DbTarget& target, const std::string& password,
                int connect_timeout_s) override;
  DbRun Run(const std::string& sql, const std::vector<std::string>& params,
            DbResultJson* rows) override;
  void CancelOnServer() override;

 private:
  PGconn* conn_ = nullptr;
  PGcancel* cancel_ = nullptr;  // from PQgetCancel; usable from another thread
};

}  // namespace apollo11::executor
