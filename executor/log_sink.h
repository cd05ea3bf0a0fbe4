#pragma once
// LogSink: where one output stream of one execution goes. Writes to a file up
// to a byte cap (then one marker line, then drops), and keeps either the last
// or the first `keep_bytes` in memory for ExecOutcome::output. Not thread-safe.

#include <cstddef>
#include <string>

#include "common/status.h"

namespace apollo11::executor {

class LogSink {
 public:
  enum class Keep { kNone, kTail, kHead };

  LogSink() = default;
  ~LogSink();
  LogSink(const LogSink&) = delete;
  LogSink& operator=(const LogSink&) = delete;

  // Opens (truncates) `path`, or writes to no file when `path` is empty.
  Status Open(const std::string& path, size_t max_file_bytes, Keep keep, size_t keep_bytes);

  // Appends `n` bytes; file write errors are remembered, never fatal.
  void Write(const char* data, size_t n);

  // Closes the file and returns the kept bytes (at most keep_bytes).
  std::string Finish();

  const std::string& path() const { return path_; }
  // True once the file exists (something was written to it).
  bool created() const { return fd_ >= 0 || wrote_file_; }

 private:
  bool EnsureOpen();

  int fd_ = -1;
  bool open_failed_ = false;
  bool wrote_file_ = false;
  std::string path_;
  size_t max_file_bytes_ = 0;
  size_t written_ = 0;
  bool truncated_ = false;
  Keep keep_ = Keep::kNone;
  size_t keep_bytes_ = 0;
  std::string kept_;
};

}  // namespace apollo11::executor
