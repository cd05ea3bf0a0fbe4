#include "executor/log_sink.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

namespace apollo11::executor {

namespace {

ssize_t SystemWrite(int fd, const void* data, size_t n) { return ::write(fd, data, n); }

// "disk full (No space left on device)" for the causes an operator acts on.
std::string DescribeWriteError(int error) {
  const std::string text = std::strerror(error);
  switch (error) {
    case ENOSPC:
      return "disk full (" + text + ")";
    case EDQUOT:
      return "disk quota exceeded (" + text + ")";
    case EFBIG:
      return "file size limit reached (" + text + ")";
    default:
      return text;
  }
}

}  // namespace

LogSink::LogSink(WriteFn write) : write_(write != nullptr ? write : &SystemWrite) {}

bool LogSink::WriteAll(const char* data, size_t n) {
  if (!write_error_.empty()) return false;
  while (n > 0) {
    ssize_t w = write_(fd_, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      Failed(w < 0 ? errno : ENOSPC);  // a write of 0 bytes makes no progress
      return false;
    }
    data += w;
    n -= static_cast<size_t>(w);
    written_ += static_cast<size_t>(w);
  }
  return true;
}

void LogSink::Failed(int error) {
  write_error_ = DescribeWriteError(error) + " after " + std::to_string(written_) + " bytes";
}

LogSink::~LogSink() {
  if (fd_ >= 0) ::close(fd_);
}

Status LogSink::Open(const std::string& path, size_t max_file_bytes, Keep keep, size_t keep_bytes) {
  path_ = path;
  max_file_bytes_ = max_file_bytes;
  keep_ = keep;
  keep_bytes_ = keep_bytes;
  if (path.empty()) return Status::Ok();
  // The file is created on the first byte written: most tasks print little
  // or nothing, and creating two files per execution costs more than running
  // `true`. Check now that it could be created, so a bad log dir still fails
  // the launch instead of losing output later.
  const auto slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  if (::access(dir.c_str(), W_OK) != 0) {
    return Status::Io("could not open log file " + path + ": " + std::strerror(errno));
  }
  return Status::Ok();
}

bool LogSink::EnsureOpen() {
  if (fd_ >= 0) return true;
  if (path_.empty() || open_failed_) return false;
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    open_failed_ = true;
    write_error_ = "could not create the file: " + DescribeWriteError(errno);
  }
  return fd_ >= 0;
}

void LogSink::SetMask(const SecretMask* mask) {
  if (mask != nullptr && !mask->empty()) mask_.emplace(mask);
}

void LogSink::Write(const char* data, size_t n) {
  if (!mask_) return WriteMasked(data, n);
  const std::string masked = mask_->Feed(std::string_view(data, n));
  WriteMasked(masked.data(), masked.size());
}

void LogSink::WriteMasked(const char* data, size_t n) {
  if (n == 0) return;
  seen_ += n;
  if (keep_ == Keep::kTail && keep_bytes_ > 0) {
    if (n >= keep_bytes_) {
      kept_.assign(data + n - keep_bytes_, keep_bytes_);
    } else {
      kept_.append(data, n);
      // Trim lazily so a stream of small writes stays amortised O(n).
      if (kept_.size() > 2 * keep_bytes_) kept_.erase(0, kept_.size() - keep_bytes_);
    }
  } else if (keep_ == Keep::kHead && kept_.size() < keep_bytes_) {
    kept_.append(data, std::min(n, keep_bytes_ - kept_.size()));
  }
  if (truncated_ || !EnsureOpen()) return;
  size_t room = max_file_bytes_ - written_;
  if (n <= room) {
    WriteAll(data, n);
    return;
  }
  if (!WriteAll(data, room)) return;
  truncated_ = true;
  std::string marker =
      "\n[apollo11: output truncated at " + std::to_string(max_file_bytes_) + " bytes]\n";
  WriteAll(marker.data(), marker.size());
}

std::string LogSink::Finish() {
  if (mask_) {
    const std::string rest = mask_->Flush();
    WriteMasked(rest.data(), rest.size());
    mask_.reset();
  }
  if (fd_ >= 0) {
    wrote_file_ = true;
    ::close(fd_);
    fd_ = -1;
  }
  if (kept_.size() > keep_bytes_) kept_.erase(0, kept_.size() - keep_bytes_);
  return std::move(kept_);
}

}  // namespace apollo11::executor
