#pragma once
// LogSink: where one output stream of one execution goes. Writes to a file up
// to a byte cap (then one marker line, then drops), and keeps either the last
// or the first `keep_bytes` in memory for ExecOutcome::output. A file write
// that fails (a full disk, a file size limit) stops the file there and is
// remembered, so the attempt's result can say its log is incomplete. Not
// thread-safe.

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "common/status.h"
#include "executor/secret_mask.h"

namespace apollo11::executor {

class LogSink {
 public:
  enum class Keep { kNone, kTail, kHead };

  // How the sink writes to its file: write(2) itself, or a test's fault.
  using WriteFn = ssize_t (*)(int fd, const void* data, size_t n);

  explicit LogSink(WriteFn write = nullptr);
  ~LogSink();
  LogSink(const LogSink&) = delete;
  LogSink& operator=(const LogSink&) = delete;

  // Opens (truncates) `path`, or writes to no file when `path` is empty.
  Status Open(const std::string& path, size_t max_file_bytes, Keep keep, size_t keep_bytes);

  // Masks every byte written from now on with `mask` (which must outlive
  // the sink): the file and the kept bytes hold the masked text, and
  // bytes_seen counts it. Call before the first Write.
  void SetMask(const SecretMask* mask);

  // Appends `n` bytes; file write errors are remembered, never fatal.
  void Write(const char* data, size_t n);

  // Releases what the mask held back, closes the file and returns the kept
  // bytes (at most keep_bytes).
  std::string Finish();

  const std::string& path() const { return path_; }
  // Empty while every byte meant for the file reached it; otherwise why the
  // file is incomplete ("disk full (No space left on device) after 4096
  // bytes"). Output past the cap is not a failure: the marker line says so.
  const std::string& write_error() const { return write_error_; }
  // Every byte passed to Write, kept or not: more than Finish() returns when
  // the stream outgrew `keep_bytes`.
  uint64_t bytes_seen() const { return seen_; }
  // True once the file exists (something was written to it).
  bool created() const { return fd_ >= 0 || wrote_file_; }

 private:
  // Write after masking.
  void WriteMasked(const char* data, size_t n);
  bool EnsureOpen();
  // Writes all `n` bytes or records why not; false once the file failed.
  bool WriteAll(const char* data, size_t n);
  void Failed(int error);

  int fd_ = -1;
  bool open_failed_ = false;
  bool wrote_file_ = false;
  std::string path_;
  size_t max_file_bytes_ = 0;
  size_t written_ = 0;
  uint64_t seen_ = 0;
  bool truncated_ = false;
  Keep keep_ = Keep::kNone;
  size_t keep_bytes_ = 0;
  std::string kept_;
  WriteFn write_;
  std::string write_error_;
  std::optional<SecretMask::Stream> mask_;
};

}  // namespace apollo11::executor
