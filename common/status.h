#pragma once
// Status and Result<T>: the engine's one error strategy. Nothing inside the
// engine throws; functions that can fail return one of these and callers
// check it. Exceptions from third-party libraries are caught at the boundary
// and turned into a Status.

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace apollo11 {

// What kind of failure: callers branch on this (exit codes, retry or not),
// humans read the message.
enum class StatusCode {
  kOk = 0,
  kInvalidInput,      // the user's input is wrong (exit code 2 at the CLI)
  kNotFound,          // asked for something that does not exist
  kBusy,              // a resource is held by someone else (locked state dir)
  kIo,                // the file system or a socket failed
  kFull,              // disk or map full; data kept, retry when space returns
  kCorrupt,           // stored data does not decode
  kUnsupported,       // valid but not available in this build or mode
  kInternal,          // a bug: an invariant did not hold
  kPermissionDenied,  // the caller's key role does not allow it (key_roles.h)
  kNotLeader,  // election: a standby coordinator; the message names the leader (ha/not_leader.h)
  kConflict,  // the request contradicts an earlier one (a reused idempotency key); exit 2, HTTP 409
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  static Status Error(StatusCode code, std::string message) {
    return Status(code, std::move(message));
  }
  static Status InvalidInput(std::string m) {
    return Error(StatusCode::kInvalidInput, std::move(m));
  }
  static Status NotFound(std::string m) { return Error(StatusCode::kNotFound, std::move(m)); }
  static Status Busy(std::string m) { return Error(StatusCode::kBusy, std::move(m)); }
  static Status Io(std::string m) { return Error(StatusCode::kIo, std::move(m)); }
  static Status Full(std::string m) { return Error(StatusCode::kFull, std::move(m)); }
  static Status Corrupt(std::string m) { return Error(StatusCode::kCorrupt, std::move(m)); }
  static Status Unsupported(std::string m) { return Error(StatusCode::kUnsupported, std::move(m)); }
  static Status Internal(std::string m) { return Error(StatusCode::kInternal, std::move(m)); }
  static Status PermissionDenied(std::string m) {
    return Error(StatusCode::kPermissionDenied, std::move(m));
  }
  static Status Conflict(std::string m) { return Error(StatusCode::kConflict, std::move(m)); }

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "kind: message", for logs.
  std::string ToString() const;

 private:
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// A value or the Status explaining why there is none.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}         // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT
    assert(!status_.ok() && "a Result without a value needs an error");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & {
    assert(ok());
    return *value_;
  }
  const T& value() const& {
    assert(ok());
    return *value_;
  }
  T&& value() && {
    assert(ok());
    return std::move(*value_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace apollo11

// Returns early from the enclosing function when `expr` is an error Status.
#define APOLLO11_RETURN_IF_ERROR(expr)                   \
  do {                                                   \
    ::apollo11::Status apollo11_status_ = (expr);        \
    if (!apollo11_status_.ok()) return apollo11_status_; \
  } while (0)
