#include "executor/mariadb_connection.h"

#include <errmsg.h>
#include <mysqld_error.h>

#include <algorithm>
#include <string>
#include <vector>

namespace apollo11::executor {

namespace {

// Client and server errors a later attempt may get past: the server could
// not be reached or went away, too many connections, a lock wait or deadlock,
// a server shutting down. Everything else (syntax, constraint, access
// denied, unknown table, our own KILL QUERY) is not retried.
bool RetryableCode(unsigned code) {
  switch (code) {
    case CR_CONNECTION_ERROR:
    case CR_CONN_HOST_ERROR:
    case CR_UNKNOWN_HOST:
    case CR_SERVER_GONE_ERROR:
    case CR_SERVER_LOST:
    case ER_CON_COUNT_ERROR:
    case ER_LOCK_WAIT_TIMEOUT:
    case ER_LOCK_DEADLOCK:
    case ER_SERVER_SHUTDOWN:
      return true;
    default:
      return false;
  }
}

DbResultJson::ValueKind KindOf(enum_field_types type) {
  switch (type) {
    case MYSQL_TYPE_TINY:
    case MYSQL_TYPE_SHORT:
    case MYSQL_TYPE_LONG:
    case MYSQL_TYPE_LONGLONG:
    case MYSQL_TYPE_INT24:
    case MYSQL_TYPE_YEAR:
      return DbResultJson::ValueKind::kInteger;
    case MYSQL_TYPE_FLOAT:
    case MYSQL_TYPE_DOUBLE:
      return DbResultJson::ValueKind::kReal;
    case MYSQL_TYPE_JSON:
      return DbResultJson::ValueKind::kJson;
    default:
      return DbResultJson::ValueKind::kText;
  }
}

std::vector<std::string> ColumnNames(MYSQL_FIELD* fields, unsigned n) {
  std::vector<std::string> names;
  for (unsigned i = 0; i < n; ++i) names.emplace_back(fields[i].name);
  return names;
}

DbRun Succeeded(const DbResultJson& rows) {
  DbRun ok;
  ok.ok = true;
  ok.summary = rows.Summary();
  return ok;
}

}  // namespace

MariadbConnection::~MariadbConnection() {
  if (conn_ != nullptr) my_->mysql_close(conn_);
}

DbRun MariadbConnection::Error(unsigned code, const char* state, const char* message) const {
  DbRun r;
  r.code = static_cast<int>(code);
  r.retryable = RetryableCode(code);
  r.error = "mysql error " + std::to_string(code) + " (" + (state != nullptr ? state : "") +
            "): " + (message != nullptr ? message : "");
  return r;
}

DbRun MariadbConnection::Open(MYSQL** out, bool multi) const {
  MYSQL* c = my_->mysql_init(nullptr);
  if (c == nullptr) return Error(CR_OUT_OF_MEMORY, "HY000", "mysql_init: out of memory");
  *out = c;
  const unsigned timeout = static_cast<unsigned>(connect_timeout_s_);
  const unsigned no_local_infile = 0;
  my_->mysql_options(c, MYSQL_OPT_CONNECT_TIMEOUT, &timeout);
  my_->mysql_options(c, MYSQL_OPT_LOCAL_INFILE, &no_local_infile);
  my_->mysql_options(c, MYSQL_SET_CHARSET_NAME, "utf8mb4");
  const DbTarget& t = target_;
  const char* host = t.host.empty() ? nullptr : t.host.c_str();
  if (my_->mysql_real_connect(c, host, t.user.empty() ? nullptr : t.user.c_str(),
                              password_.empty() ? nullptr : password_.c_str(),
                              t.database.empty() ? nullptr : t.database.c_str(), t.port,
                              t.socket.empty() ? nullptr : t.socket.c_str(),
                              multi ? CLIENT_MULTI_STATEMENTS : 0) == nullptr) {
    DbRun r = Error(my_->mysql_errno(c), my_->mysql_sqlstate(c), my_->mysql_error(c));
    r.error = "mysql: could not connect: " + r.error;
    return r;
  }
  DbRun ok;
  ok.ok = true;
  return ok;
}

DbRun MariadbConnection::Connect(const DbTarget& target, const std::string& password,
                                 int connect_timeout_s) {
  target_ = target;
  password_ = password;
  connect_timeout_s_ = connect_timeout_s;
  auto library = LoadLibMariaDb();
  if (!library.ok()) return DbRun::Failure("mysql: " + library.status().message(), false);
  my_ = *library;
  DbRun r = Open(&conn_, /*multi=*/true);
  if (r.ok) thread_id_ = my_->mysql_thread_id(conn_);
  return r;
}

DbRun MariadbConnection::Run(const std::string& sql, const std::vector<std::string>& params,
                             DbResultJson* rows) {
  return params.empty() ? RunScript(sql, rows) : RunPrepared(sql, params, rows);
}

DbRun MariadbConnection::RunScript(const std::string& sql, DbResultJson* rows) {
  if (my_->mysql_real_query(conn_, sql.data(), sql.size()) != 0) {
    return Error(my_->mysql_errno(conn_), my_->mysql_sqlstate(conn_), my_->mysql_error(conn_));
  }
  int next = 0;
  do {
    MYSQL_RES* res = my_->mysql_store_result(conn_);
    if (res != nullptr) {
      const unsigned n = my_->mysql_num_fields(res);
      MYSQL_FIELD* fields = my_->mysql_fetch_fields(res);
      rows->BeginRows(ColumnNames(fields, n));
      while (MYSQL_ROW row = my_->mysql_fetch_row(res)) {
        if (!rows->WantsRow()) {
          rows->CountRow();
          continue;
        }
        unsigned long* lengths = my_->mysql_fetch_lengths(res);
        rows->BeginRow();
        for (unsigned i = 0; i < n; ++i) {
          rows->Value(KindOf(fields[i].type), row[i], row[i] != nullptr ? lengths[i] : 0,
                      row[i] == nullptr);
        }
        rows->EndRow();
      }
      my_->mysql_free_result(res);
    } else if (my_->mysql_field_count(conn_) == 0) {
      rows->SetRowsAffected(static_cast<int64_t>(my_->mysql_affected_rows(conn_)));
    } else {
      return Error(my_->mysql_errno(conn_), my_->mysql_sqlstate(conn_), my_->mysql_error(conn_));
    }
    next = my_->mysql_next_result(conn_);
  } while (next == 0);
  if (next > 0)
    return Error(my_->mysql_errno(conn_), my_->mysql_sqlstate(conn_), my_->mysql_error(conn_));
  return Succeeded(*rows);
}

DbRun MariadbConnection::RunPrepared(const std::string& sql, const std::vector<std::string>& params,
                                     DbResultJson* rows) {
  MYSQL_STMT* stmt = my_->mysql_stmt_init(conn_);
  if (stmt == nullptr) return Error(CR_OUT_OF_MEMORY, "HY000", "mysql_stmt_init: out of memory");
  auto fail = [&]() {
    DbRun r = Error(my_->mysql_stmt_errno(stmt), my_->mysql_stmt_sqlstate(stmt),
                    my_->mysql_stmt_error(stmt));
    my_->mysql_stmt_close(stmt);
    return r;
  };
  if (my_->mysql_stmt_prepare(stmt, sql.data(), sql.size()) != 0) return fail();
  if (my_->mysql_stmt_param_count(stmt) != params.size()) {
    DbRun r = Error(ER_WRONG_ARGUMENTS, "HY000", "");
    r.error = "the SQL has " + std::to_string(my_->mysql_stmt_param_count(stmt)) +
              " placeholders (?) and the task gives " + std::to_string(params.size()) + " params";
    my_->mysql_stmt_close(stmt);
    return r;
  }
  std::vector<MYSQL_BIND> in(params.size());
  std::vector<unsigned long> in_lengths(params.size());
  for (size_t i = 0; i < params.size(); ++i) {
    in_lengths[i] = params[i].size();
    in[i] = MYSQL_BIND{};
    in[i].buffer_type = MYSQL_TYPE_STRING;
    in[i].buffer = const_cast<char*>(params[i].data());
    in[i].buffer_length = params[i].size();
    in[i].length = &in_lengths[i];
  }
  if (my_->mysql_stmt_bind_param(stmt, in.data()) != 0) return fail();
  if (my_->mysql_stmt_execute(stmt) != 0) return fail();
  MYSQL_RES* meta = my_->mysql_stmt_result_metadata(stmt);
  if (meta == nullptr) {
    rows->SetRowsAffected(static_cast<int64_t>(my_->mysql_stmt_affected_rows(stmt)));
    my_->mysql_stmt_close(stmt);
    return Succeeded(*rows);
  }
  my_bool update_max = 1;
  my_->mysql_stmt_attr_set(stmt, STMT_ATTR_UPDATE_MAX_LENGTH, &update_max);
  if (my_->mysql_stmt_store_result(stmt) != 0) {
    my_->mysql_free_result(meta);
    return fail();
  }
  const unsigned n = my_->mysql_num_fields(meta);
  MYSQL_FIELD* fields = my_->mysql_fetch_fields(meta);
  rows->BeginRows(ColumnNames(fields, n));
  std::vector<std::string> buffers(n);
  std::vector<unsigned long> lengths(n);
  std::vector<my_bool> nulls(n);
  std::vector<MYSQL_BIND> out(n);
  for (unsigned i = 0; i < n; ++i) {
    buffers[i].resize(fields[i].max_length + 1);
    out[i] = MYSQL_BIND{};
    out[i].buffer_type = MYSQL_TYPE_STRING;
    out[i].buffer = buffers[i].data();
    out[i].buffer_length = buffers[i].size();
    out[i].length = &lengths[i];
    out[i].is_null = &nulls[i];
  }
  if (my_->mysql_stmt_bind_result(stmt, out.data()) != 0) {
    my_->mysql_free_result(meta);
    return fail();
  }
  int fetched = 0;
  while ((fetched = my_->mysql_stmt_fetch(stmt)) == 0 || fetched == MYSQL_DATA_TRUNCATED) {
    if (!rows->WantsRow()) {
      rows->CountRow();
      continue;
    }
    rows->BeginRow();
    for (unsigned i = 0; i < n; ++i) {
      const size_t size = std::min<size_t>(lengths[i], buffers[i].size());
      rows->Value(KindOf(fields[i].type), buffers[i].data(), size, nulls[i] != 0);
    }
    rows->EndRow();
  }
  my_->mysql_free_result(meta);
  if (fetched == 1) return fail();
  my_->mysql_stmt_close(stmt);
  return Succeeded(*rows);
}

void MariadbConnection::CancelOnServer() {
  if (thread_id_ == 0) return;
  MYSQL* killer = nullptr;
  DbRun opened = Open(&killer, /*multi=*/false);
  if (opened.ok) {
    const std::string kill = "KILL QUERY " + std::to_string(thread_id_);
    my_->mysql_real_query(killer, kill.data(), kill.size());
  }
  if (killer != nullptr) my_->mysql_close(killer);
}

}  // namespace apollo11::executor
