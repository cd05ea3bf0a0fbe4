#include "executor/db_connection.h"

#include "executor/mariadb_connection.h"
#include "executor/postgres_connection.h"
#include "executor/sqlite_connection.h"

namespace apollo11::executor {

std::unique_ptr<DbConnection> NewDbConnection(const DbTarget& target) {
  switch (target.kind) {
    case DbTarget::Kind::kPostgres:
      return std::make_unique<PostgresConnection>();
    case DbTarget::Kind::kMariadb:
      return std::make_unique<MariadbConnection>();
    case DbTarget::Kind::kSqlite:
      break;
  }
  return std::make_unique<SqliteConnection>();
}

}  // namespace apollo11::executor
