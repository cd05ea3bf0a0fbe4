#include "executor/db_result_json.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>

#include "common/json_dump.h"

namespace apollo11::executor {

namespace {

using Json = nlohmann::ordered_json;

Json Convert(DbResultJson::ValueKind kind, const std::string& text) {
  switch (kind) {
    case DbResultJson::ValueKind::kInteger: {
      errno = 0;
      char* end = nullptr;
      const long long v = std::strtoll(text.c_str(), &end, 10);
      if (errno == 0 && end != text.c_str() && *end == '\0') return Json(v);
      return Json(text);
    }
    case DbResultJson::ValueKind::kReal: {
      char* end = nullptr;
      const double v = std::strtod(text.c_str(), &end);
      if (end != text.c_str() && *end == '\0' && std::isfinite(v)) return Json(v);
      return Json(text);
    }
    case DbResultJson::ValueKind::kBool:
      if (text == "t" || text == "1" || text == "true") return Json(true);
      if (text == "f" || text == "0" || text == "false") return Json(false);
      return Json(text);
    case DbResultJson::ValueKind::kJson: {
      Json parsed = ParseJsonBounded(text);
      if (!parsed.is_discarded()) return parsed;
      return Json(text);
    }
    case DbResultJson::ValueKind::kText:
      break;
  }
  return Json(text);
}

constexpr size_t kEnvelopeBytes = 128;

size_t DumpedSize(const Json& j) {
  return j.dump(-1, ' ', false, Json::error_handler_t::replace).size();
}

}  // namespace

void DbResultJson::BeginRows(std::vector<std::string> columns) {
  columns_ = std::move(columns);
  rows_ = Json::array();
  // The document around the rows: the columns and the counters.
  bytes_ = kEnvelopeBytes + DumpedSize(Json(columns_));
  row_count_ = 0;
  has_rows_ = true;
  full_ = false;
}

void DbResultJson::BeginRow() {
  row_ = Json::object();
  column_ = 0;
}

void DbResultJson::Value(ValueKind kind, const char* data, size_t size, bool null) {
  if (column_ >= columns_.size()) return;
  const std::string& name = columns_[column_++];
  row_[name] = null ? Json(nullptr) : Convert(kind, std::string(data, size));
}

void DbResultJson::EndRow() {
  ++row_count_;
  if (full_) return;
  const size_t size = DumpedSize(row_) + 1;
  if (rows_.size() >= kMaxRows || bytes_ + size > kMaxBytes) {
    full_ = true;
    return;
  }
  bytes_ += size;
  rows_.push_back(std::move(row_));
  if (rows_.size() >= kMaxRows) full_ = true;
}

std::string DbResultJson::Dump() const {
  Json out = Json::object();
  if (has_rows_) {
    out["columns"] = columns_;
    out["rows"] = rows_;
    out["row_count"] = row_count_;
    out["truncated"] = row_count_ > rows_.size();
  } else {
    out["rows_affected"] = rows_affected_ < 0 ? 0 : rows_affected_;
  }
  return out.dump(-1, ' ', false, Json::error_handler_t::replace);
}

std::string DbResultJson::Summary() const {
  auto rows = [](uint64_t n) { return std::to_string(n) + (n == 1 ? " row" : " rows"); };
  if (!has_rows_) {
    return rows(rows_affected_ < 0 ? 0 : static_cast<uint64_t>(rows_affected_)) + " affected";
  }
  std::string s = rows(row_count_) + " returned";
  if (row_count_ > rows_.size()) s += ", first " + std::to_string(rows_.size()) + " kept";
  return s;
}

}  // namespace apollo11::executor
