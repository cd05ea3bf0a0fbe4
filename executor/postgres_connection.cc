#include "executor/postgres_connection.h"

#include <cstdlib>
#include <string>

namespace apollo11::executor {

namespace {

// Oids of the built-in types whose values become JSON numbers, booleans or
// JSON (catalog/pg_type.dat).
DbResultJson::ValueKind KindOf(Oid type) {
  switch (type) {
    case 16:
      return DbResultJson::ValueKind::kBool;
    case 20:
    case 21:
    case 23:
    case 26:
      return DbResultJson::ValueKind::kInteger;
    case 700:
    case 701:
      return DbResultJson::ValueKind::kReal;
    case 114:
    case 3802:
      return DbResultJson::ValueKind::kJson;
    default:
      return DbResultJson::ValueKind::kText;
  }
}

std::string Trimmed(const char* message) {
  std::string s = message != nullptr ? message : "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// SQLSTATE classes a later attempt may get past: connection exceptions (08),
// transaction rollbacks such as serialization failures and deadlocks (40),
// insufficient resources (53), operator intervention such as a shutdown (57,
// except 57014, our own cancel) and system errors (58).
bool RetryableState(const std::string& state) {
  if (state == "57014") return false;
  const std::string cls = state.substr(0, 2);
  return cls == "08" || cls == "40" || cls == "53" || cls == "57" || cls == "58";
}

}  // namespace

PostgresConnection::~PostgresConnection() {
  if (cancel_ != nullptr) pq_->PQfreeCancel(cancel_);
  if (conn_ != nullptr) pq_->PQfinish(conn_);
}

DbRun PostgresConnection::Connect(const DbTarget& target, const std::string& password,
                                  int connect_timeout_s) {
  const std::string timeout = std::to_string(connect_timeout_s);
  std::vector<const char*> keys = {"dbname", "connect_timeout", "application_name"};
  std::vector<const char*> values = {target.url.c_str(), timeout.c_str(), "apollo11"};
  if (!password.empty()) {
    keys.push_back("password");
    values.push_back(password.c_str());
  }
  keys.push_back(nullptr);
  values.push_back(nullptr);
  auto library = LoadLibPq();
  if (!library.ok()) return DbRun::Failure("postgres: " + library.status().message(), false);
  pq_ = *library;
  conn_ = pq_->PQconnectdbParams(keys.data(), values.data(), /*expand_dbname=*/1);
  if (conn_ == nullptr) return DbRun::Failure("postgres: out of memory", true);
  if (pq_->PQstatus(conn_) != CONNECTION_OK) {
    const std::string why = Trimmed(pq_->PQerrorMessage(conn_));
    // A refused password or an unknown role or database will not heal by itself.
    const bool permanent = why.find("authentication failed") != std::string::npos ||
                           why.find("does not exist") != std::string::npos ||
                           why.find("no password supplied") != std::string::npos ||
                           why.find("invalid") != std::string::npos;
    return DbRun::Failure("postgres: could not connect: " + why, !permanent);
  }
  cancel_ = pq_->PQgetCancel(conn_);
  DbRun ok;
  ok.ok = true;
  return ok;
}

DbRun PostgresConnection::Run(const std::string& sql, const std::vector<std::string>& params,
                              DbResultJson* rows) {
  PGresult* res = nullptr;
  if (params.empty()) {
    res = pq_->PQexec(conn_, sql.c_str());
  } else {
    std::vector<const char*> values;
    values.reserve(params.size());
    for (const std::string& p : params) values.push_back(p.c_str());
    res = pq_->PQexecParams(conn_, sql.c_str(), static_cast<int>(params.size()), nullptr,
                            values.data(), nullptr, nullptr, /*resultFormat=*/0);
  }
  const ExecStatusType st = pq_->PQresultStatus(res);
  if (res == nullptr || (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)) {
    const char* state_field =
        res != nullptr ? pq_->PQresultErrorField(res, PG_DIAG_SQLSTATE) : nullptr;
    const std::string state = state_field != nullptr ? state_field : "";
    const std::string message =
        Trimmed(res != nullptr ? pq_->PQresultErrorMessage(res) : pq_->PQerrorMessage(conn_));
    if (res != nullptr) pq_->PQclear(res);
    const bool lost = pq_->PQstatus(conn_) != CONNECTION_OK;
    return DbRun::Failure(
        "postgres error " + (state.empty() ? std::string("(no SQLSTATE)") : state) + ": " + message,
        lost || RetryableState(state));
  }
  if (st == PGRES_TUPLES_OK) {
    const int nfields = pq_->PQnfields(res);
    std::vector<std::string> columns;
    for (int c = 0; c < nfields; ++c) columns.emplace_back(pq_->PQfname(res, c));
    rows->BeginRows(std::move(columns));
    const int ntuples = pq_->PQntuples(res);
    for (int r = 0; r < ntuples && rows->WantsRow(); ++r) {
      rows->BeginRow();
      for (int c = 0; c < nfields; ++c) {
        rows->Value(KindOf(pq_->PQftype(res, c)), pq_->PQgetvalue(res, r, c),
                    static_cast<size_t>(pq_->PQgetlength(res, r, c)),
                    pq_->PQgetisnull(res, r, c) != 0);
      }
      rows->EndRow();
    }
    rows->SetRowCount(static_cast<uint64_t>(ntuples));
  } else {
    const char* tuples = pq_->PQcmdTuples(res);
    rows->SetRowsAffected(tuples != nullptr ? std::strtoll(tuples, nullptr, 10) : 0);
  }
  pq_->PQclear(res);
  DbRun ok;
  ok.ok = true;
  ok.summary = rows->Summary();
  return ok;
}

void PostgresConnection::CancelOnServer() {
  if (cancel_ == nullptr) return;
  char err[256] = {0};
  pq_->PQcancel(cancel_, err, sizeof(err));
}

}  // namespace apollo11::executor
