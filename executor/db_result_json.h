#pragma once
// DbResultJson: a db task's result as the JSON that becomes its output
// (ExecOutcome::task_output), built value by value with caps:
//   {"rows_affected": N}                                  a statement
//   {"columns": [...], "rows": [{col: value, ...}, ...],  a query
//    "row_count": N, "truncated": false}
// At most kMaxRows rows are kept, and the whole document stays within
// kMaxBytes (the task output cap); "truncated"
// says rows were left out, "row_count" counts them all when the library
// knows it (else the rows seen). Values: SQL NULL -> null, integer and
// floating columns -> numbers, booleans -> true/false, JSON columns -> JSON,
// everything else -> text (invalid UTF-8 replaced).
//
// Not thread-safe; one pool thread fills it, then the executor reads it.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace apollo11::executor {

class DbResultJson {
 public:
  static constexpr size_t kMaxRows = 100;
  static constexpr size_t kMaxBytes = 64 << 10;

  enum class ValueKind { kText, kInteger, kReal, kBool, kJson };

  // Starts a query's result (replacing any earlier one of the same script).
  void BeginRows(std::vector<std::string> columns);
  // False once the caps are reached: the caller may stop fetching (and call
  // CountRow for the rest when it wants row_count exact).
  bool WantsRow() const { return !full_; }
  void BeginRow();
  // One value of the current row, in column order; `null` ignores the rest.
  void Value(ValueKind kind, const char* data, size_t size, bool null);
  void EndRow();
  // A row seen and not kept.
  void CountRow() { ++row_count_; }
  void SetRowCount(uint64_t n) { row_count_ = n; }
  // A statement without rows: how many it changed.
  void SetRowsAffected(int64_t n) { rows_affected_ = n; }

  bool has_rows() const { return has_rows_; }
  uint64_t row_count() const { return row_count_; }
  size_t rows_kept() const { return rows_.size(); }
  int64_t rows_affected() const { return rows_affected_; }

  // The JSON text (valid UTF-8).
  std::string Dump() const;
  // "3 rows returned" / "2 rows returned, first 100 kept" / "1 row affected".
  std::string Summary() const;

 private:
  std::vector<std::string> columns_;
  nlohmann::ordered_json rows_ = nlohmann::ordered_json::array();
  nlohmann::ordered_json row_;
  size_t column_ = 0;
  size_t bytes_ = 0;
  uint64_t row_count_ = 0;
  int64_t rows_affected_ = -1;
  bool has_rows_ = false;
  bool full_ = false;
};

}  // namespace apollo11::executor
