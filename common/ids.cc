#include "common/ids.h"

#include <cstdio>
#include <random>

namespace apollo11 {
namespace {

uint64_t RandomBits() {
  thread_local std::mt19937_64 engine{std::random_device{}()};
  return engine();
}

}  // namespace

bool IsValidRunId(std::string_view id) {
  if (id.empty() || id.size() > kMaxRunIdLength) return false;
  auto alnum = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
  };
  if (!alnum(id[0])) return false;
  for (char c : id) {
    if (!alnum(c) && c != '-' && c != '_') return false;
  }
  return true;
}

Status CheckRunId(std::string_view id) {
  if (IsValidRunId(id)) return Status::Ok();
  return Status::InvalidInput("not a run id: a run id is 1 to " + std::to_string(kMaxRunIdLength) +
                              " letters, digits, '-' or '_' (no '.'), as the coordinator made it");
}

std::string NewTraceId() {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(RandomBits()));
  return buf;
}

}  // namespace apollo11
