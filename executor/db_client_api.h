#pragma once
// The functions of libpq, libmariadb (MySQL and MariaDB) and SQLite that db
// tasks call, opened the first time a task of that driver connects (see
// common/shared_library.h): a process that never runs a db task never maps
// them. A driver whose library cannot be loaded fails its task with the
// loader's reason.

#include <libpq-fe.h>
#include <mysql.h>
#include <sqlite3.h>

#include "common/shared_library.h"
#include "common/status.h"

#define APOLLO11_LIBPQ_FUNCTIONS(X) \
  X(PQconnectdbParams)              \
  X(PQstatus)                       \
  X(PQerrorMessage)                 \
  X(PQfinish)                       \
  X(PQgetCancel)                    \
  X(PQfreeCancel)                   \
  X(PQcancel)                       \
  X(PQexec)                         \
  X(PQexecParams)                   \
  X(PQresultStatus)                 \
  X(PQresultErrorField)             \
  X(PQresultErrorMessage)           \
  X(PQclear)                        \
  X(PQnfields)                      \
  X(PQntuples)                      \
  X(PQfname)                        \
  X(PQftype)                        \
  X(PQgetvalue)                     \
  X(PQgetlength)                    \
  X(PQgetisnull)                    \
  X(PQcmdTuples)

#define APOLLO11_LIBMARIADB_FUNCTIONS(X) \
  X(mysql_init)                          \
  X(mysql_options)                       \
  X(mysql_real_connect)                  \
  X(mysql_close)                         \
  X(mysql_thread_id)                     \
  X(mysql_errno)                         \
  X(mysql_error)                         \
  X(mysql_sqlstate)                      \
  X(mysql_real_query)                    \
  X(mysql_next_result)                   \
  X(mysql_store_result)                  \
  X(mysql_free_result)                   \
  X(mysql_field_count)                   \
  X(mysql_num_fields)                    \
  X(mysql_fetch_fields)                  \
  X(mysql_fetch_row)                     \
  X(mysql_fetch_lengths)                 \
  X(mysql_affected_rows)                 \
  X(mysql_stmt_init)                     \
  X(mysql_stmt_prepare)                  \
  X(mysql_stmt_param_count)              \
  X(mysql_stmt_attr_set)                 \
  X(mysql_stmt_bind_param)               \
  X(mysql_stmt_execute)                  \
  X(mysql_stmt_result_metadata)          \
  X(mysql_stmt_bind_result)              \
  X(mysql_stmt_store_result)             \
  X(mysql_stmt_fetch)                    \
  X(mysql_stmt_affected_rows)            \
  X(mysql_stmt_errno)                    \
  X(mysql_stmt_error)                    \
  X(mysql_stmt_sqlstate)                 \
  X(mysql_stmt_close)

#define APOLLO11_LIBSQLITE3_FUNCTIONS(X) \
  X(sqlite3_open_v2)                     \
  X(sqlite3_close_v2)                    \
  X(sqlite3_busy_timeout)                \
  X(sqlite3_extended_result_codes)       \
  X(sqlite3_errmsg)                      \
  X(sqlite3_errstr)                      \
  X(sqlite3_prepare_v2)                  \
  X(sqlite3_bind_parameter_count)        \
  X(sqlite3_bind_text)                   \
  X(sqlite3_step)                        \
  X(sqlite3_finalize)                    \
  X(sqlite3_column_count)                \
  X(sqlite3_column_name)                 \
  X(sqlite3_column_type)                 \
  X(sqlite3_column_text)                 \
  X(sqlite3_column_bytes)                \
  X(sqlite3_changes64)                   \
  X(sqlite3_interrupt)

namespace apollo11::executor {

struct LibPq {
  APOLLO11_LIBPQ_FUNCTIONS(APOLLO11_SHARED_FN_MEMBER)
};
struct LibMariaDb {
  APOLLO11_LIBMARIADB_FUNCTIONS(APOLLO11_SHARED_FN_MEMBER)
};
struct LibSqlite3 {
  APOLLO11_LIBSQLITE3_FUNCTIONS(APOLLO11_SHARED_FN_MEMBER)
};

// Each table is loaded by the first call in the process; later calls return
// the same table, or the same error. Safe to call from any thread.
Result<const LibPq*> LoadLibPq();
Result<const LibMariaDb*> LoadLibMariaDb();
Result<const LibSqlite3*> LoadLibSqlite3();

}  // namespace apollo11::executor
