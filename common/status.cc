#include "common/status.h"

namespace apollo11 {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return "ok";
    case StatusCode::kInvalidInput:
      return "invalid input";
    case StatusCode::kNotFound:
      return "not found";
    case StatusCode::kBusy:
      return "busy";
    case StatusCode::kIo:
      return "i/o error";
    case StatusCode::kFull:
      return "full";
    case StatusCode::kCorrupt:
      return "corrupt";
    case StatusCode::kUnsupported:
      return "unsupported";
    case StatusCode::kInternal:
      return "internal error";
    case StatusCode::kPermissionDenied:
      return "permission denied";
    case StatusCode::kNotLeader:
      return "not the leader";
    case StatusCode::kConflict:
      return "conflict";
  }
  return "unknown";
}

std::string Status::ToString() const {
  if (ok()) return "ok";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

}  // namespace apollo11
