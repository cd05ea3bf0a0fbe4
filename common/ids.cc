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

std::string TraceParent(std::string_view trace_id, std::string_view exec_id, uint32_t attempt) {
  if (trace_id.empty() || trace_id.size() > 32 ||
      trace_id.find_first_not_of("0123456789abcdef") != std::string_view::npos ||
      trace_id.find_first_not_of('0') == std::string_view::npos) {
    return "";
  }
  // FNV-1a 64 of "EXEC_ID#ATTEMPT", then SplitMix64's finalizer.
  uint64_t h = 14695981039346656037ull;
  const std::string key = std::string(exec_id) + "#" + std::to_string(attempt);
  for (unsigned char c : key) h = (h ^ c) * 1099511628211ull;
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  if (h == 0) h = 1;
  char span[17];
  std::snprintf(span, sizeof span, "%016llx", static_cast<unsigned long long>(h));
  return "00-" + std::string(32 - trace_id.size(), '0') + std::string(trace_id) + "-" + span +
         "-01";
}

std::string NewTraceId() {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(RandomBits()));
  return buf;
}

}  // namespace apollo11
