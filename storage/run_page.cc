#include "storage/run_page.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>

namespace apollo11::storage {

std::string RunCursor(Micros created_at, std::string_view run_id) {
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(created_at));
  return std::string(hex) + std::string(run_id);
}

Result<std::pair<Micros, std::string>> ParseRunCursor(std::string_view cursor) {
  auto bad = [&] {
    return Status::InvalidInput("cursor '" + std::string(cursor.substr(0, 80)) +
                                "' is not one a page of runs gave");
  };
  if (cursor.size() < 17 || cursor.size() > 16 + 256) return bad();
  uint64_t at = 0;
  for (char c : cursor.substr(0, 16)) {
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return bad();
    at = at << 4 | static_cast<uint64_t>(d);
  }
  const std::string_view id = cursor.substr(16);
  for (char c : id) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
          c == ':' || c == '@')) {
      return bad();
    }
  }
  if (at > static_cast<uint64_t>(INT64_MAX)) return bad();
  return std::make_pair(static_cast<Micros>(at), std::string(id));
}

bool MatchesRunFilter(const RunFilter& f, const RunRecord& run) {
  if (!f.pipeline.empty() && run.pipeline_name != f.pipeline) return false;
  if (!run.pipeline_name.starts_with(f.pipeline_prefix)) return false;
  if (!f.states.empty() &&
      std::find(f.states.begin(), f.states.end(), run.status) == f.states.end()) {
    return false;
  }
  if (f.since != 0 && run.created_at < f.since) return false;
  if (f.until != 0 && run.created_at >= f.until) return false;
  return true;
}

Result<RunPage> PageOfRuns(const std::vector<RunRecord>& newest_first, const RunFilter& f) {
  std::pair<Micros, std::string> below{INT64_MAX, std::string()};
  bool bounded = false;
  if (!f.cursor.empty()) {
    auto parsed = ParseRunCursor(f.cursor);
    if (!parsed.ok()) return parsed.status();
    below = *parsed;
    bounded = true;
  }
  RunPage page;
  for (const RunRecord& run : newest_first) {
    if (bounded && std::make_pair(run.created_at, run.run_id) >= below) continue;
    if (f.since != 0 && run.created_at < f.since) break;
    if (page.scanned == f.max_scan) {
      page.complete = false;
      break;  // page.next: the last run read
    }
    ++page.scanned;
    page.next = RunCursor(run.created_at, run.run_id);
    if (!MatchesRunFilter(f, run)) continue;
    page.runs.push_back(run);
    if (page.runs.size() == f.limit) {
      page.complete = false;
      return page;
    }
  }
  if (page.complete) page.next.clear();
  return page;
}

}  // namespace apollo11::storage
