#pragma once
// PostgresConnection: a DbConnection over libpq. The URL goes to libpq as
// is (so its options work: ?sslmode=, ?host=/socket/dir); parameters go
// through PQexecParams as text ($1, $2, ...), a script without parameters
// through PQexec (one implicit transaction for the whole script, as psql -c).
// Cancel: PQcancel. libpq is opened by the first Connect (db_client_api.h).

#include <string>
#include <vector>

#include "executor/db_client_api.h"
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
  const LibPq* pq_ = nullptr;  // set by Connect
  PGconn* conn_ = nullptr;
  PGcancel* cancel_ = nullptr;  // from PQgetCancel; usable from another thread
};

}  // namespace apollo11::executor
