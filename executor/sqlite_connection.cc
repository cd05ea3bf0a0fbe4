#include "executor/sqlite_connection.h"

#include <string>
#include <vector>

namespace apollo11::executor {

namespace {

constexpr int kBusyTimeoutMs = 5000;

DbResultJson::ValueKind KindOf(int type) {
  switch (type) {
    case SQLITE_INTEGER:
      return DbResultJson::ValueKind::kInteger;
    case SQLITE_FLOAT:
      return DbResultJson::ValueKind::kReal;
    default:
      return DbResultJson::ValueKind::kText;
  }
}

}  // namespace

SqliteConnection::~SqliteConnection() {
  if (db_ != nullptr) sq_->sqlite3_close_v2(db_);
}

DbRun SqliteConnection::Error(int code) const {
  DbRun r;
  r.code = code;
  // Locked or busy past the busy timeout: another writer; worth another try.
  const int primary = code & 0xff;
  r.retryable = primary == SQLITE_BUSY || primary == SQLITE_LOCKED;
  const char* message = db_ != nullptr ? sq_->sqlite3_errmsg(db_) : sq_->sqlite3_errstr(code);
  r.error = "sqlite error " + std::to_string(code) + " (" + sq_->sqlite3_errstr(code) +
            "): " + (message != nullptr ? message : "");
  return r;
}

DbRun SqliteConnection::Connect(const DbTarget& target, const std::string& /*password*/,
                                int /*connect_timeout_s*/) {
  auto library = LoadLibSqlite3();
  if (!library.ok()) return DbRun::Failure("sqlite: " + library.status().message(), false);
  sq_ = *library;
  const int rc = sq_->sqlite3_open_v2(
      target.path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
      nullptr);
  if (rc != SQLITE_OK) {
    DbRun r = Error(rc);
    r.error = "sqlite: could not open " + target.path + ": " + r.error;
    return r;
  }
  sq_->sqlite3_busy_timeout(db_, kBusyTimeoutMs);
  sq_->sqlite3_extended_result_codes(db_, 1);
  DbRun ok;
  ok.ok = true;
  return ok;
}

int SqliteConnection::Step(sqlite3_stmt* stmt, DbResultJson* rows) {
  const int n = sq_->sqlite3_column_count(stmt);
  if (n > 0) {
    std::vector<std::string> columns;
    for (int c = 0; c < n; ++c) columns.emplace_back(sq_->sqlite3_column_name(stmt, c));
    rows->BeginRows(std::move(columns));
  }
  int rc = SQLITE_ROW;
  while ((rc = sq_->sqlite3_step(stmt)) == SQLITE_ROW) {
    if (!rows->WantsRow()) {
      rows->CountRow();
      continue;
    }
    rows->BeginRow();
    for (int c = 0; c < n; ++c) {
      const int type = sq_->sqlite3_column_type(stmt, c);
      const auto* text = reinterpret_cast<const char*>(sq_->sqlite3_column_text(stmt, c));
      rows->Value(KindOf(type), text, static_cast<size_t>(sq_->sqlite3_column_bytes(stmt, c)),
                  type == SQLITE_NULL || text == nullptr);
    }
    rows->EndRow();
  }
  if (rc == SQLITE_DONE && n == 0) rows->SetRowsAffected(sq_->sqlite3_changes64(db_));
  return rc;
}

DbRun SqliteConnection::Run(const std::string& sql, const std::vector<std::string>& params,
                            DbResultJson* rows) {
  const char* next = sql.c_str();
  const char* end = sql.c_str() + sql.size();
  while (next < end) {
    sqlite3_stmt* stmt = nullptr;
    const char* tail = nullptr;
    int rc = sq_->sqlite3_prepare_v2(db_, next, static_cast<int>(end - next), &stmt, &tail);
    if (rc != SQLITE_OK) return Error(rc);
    next = tail;
    if (stmt == nullptr) continue;  // whitespace or a comment
    const int wanted = sq_->sqlite3_bind_parameter_count(stmt);
    if (wanted > 0 && static_cast<size_t>(wanted) != params.size()) {
      sq_->sqlite3_finalize(stmt);
      DbRun r;
      r.code = SQLITE_RANGE;
      r.error = "the SQL has " + std::to_string(wanted) + " placeholders and the task gives " +
                std::to_string(params.size()) + " params";
      return r;
    }
    for (int i = 0; i < wanted; ++i) {
      sq_->sqlite3_bind_text(stmt, i + 1, params[i].data(), static_cast<int>(params[i].size()),
                             SQLITE_TRANSIENT);
    }
    rc = Step(stmt, rows);
    sq_->sqlite3_finalize(stmt);
    if (rc != SQLITE_DONE) return Error(rc);
  }
  DbRun ok;
  ok.ok = true;
  ok.summary = rows->Summary();
  return ok;
}

void SqliteConnection::CancelOnServer() {
  if (db_ != nullptr) sq_->sqlite3_interrupt(db_);
}

}  // namespace apollo11::executor
