// A page of the whole run history (QueryKind::kRunsPage) for QueryService:
// the filter in the query's `arg` as JSON, the page size in `limit`. Also
// how that filter is read, for every client that builds one.

#include <algorithm>

#include "actors/queries/query_service.h"
#include "actors/queries/run_views.h"
#include "common/json_dump.h"
#include "engine/task_state.h"

namespace apollo11::actors {
namespace {

Result<Micros> MicrosMember(const nlohmann::json& doc, const char* name) {
  const auto it = doc.find(name);
  if (it == doc.end() || it->is_null()) return Micros{0};
  if (!it->is_number_integer() || it->get<int64_t>() < 0) {
    return Status::InvalidInput(std::string(name) + " must be wall microseconds (an integer >= 0)");
  }
  return it->get<Micros>();
}

}  // namespace

Result<storage::RunFilter> RunFilterFromJson(std::string_view text, uint32_t limit) {
  storage::RunFilter f;
  f.limit = std::clamp<uint32_t>(limit == 0 ? 50 : limit, 1, kMaxRunsPage);
  if (text.empty()) return f;
  const auto doc = ParseJsonBounded(text);
  if (!doc.is_object()) return Status::InvalidInput("a runs filter is a JSON object");
  for (const auto& [key, value] : doc.items()) {
    if (key == "pipeline" || key == "prefix" || key == "cursor") {
      if (!value.is_string() || value.get<std::string>().size() > 300) {
        return Status::InvalidInput(key + " must be a string");
      }
      std::string& field =
          key == "pipeline" ? f.pipeline : (key == "prefix" ? f.pipeline_prefix : f.cursor);
      field = value.get<std::string>();
    } else if (key == "states") {
      if (!value.is_array() || value.size() > 16) {
        return Status::InvalidInput("states must be a list of run states");
      }
      for (const auto& s : value) {
        auto state = s.is_string() ? ParseRunStatus(s.get<std::string>()) : std::nullopt;
        if (!state) {
          return Status::InvalidInput("unknown run state " + s.dump().substr(0, 40) +
                                      " (PENDING, RUNNING, SUCCESS, FAILED, CANCELED)");
        }
        f.states.push_back(*state);
      }
    } else if (key != "since" && key != "until") {
      return Status::InvalidInput("unknown runs filter field '" + key.substr(0, 40) + "'");
    }
  }
  auto since = MicrosMember(doc, "since");
  if (!since.ok()) return since.status();
  auto until = MicrosMember(doc, "until");
  if (!until.ok()) return until.status();
  f.since = *since;
  f.until = *until;
  if (!f.cursor.empty()) {
    auto cursor = storage::ParseRunCursor(f.cursor);
    if (!cursor.ok()) return cursor.status();
  }
  return f;
}

nlohmann::json RunsPageJson(const storage::RunPage& page) {
  nlohmann::json runs = nlohmann::json::array();
  for (const storage::RunRecord& r : page.runs) runs.push_back(RunLineJson(r));
  return {{"runs", std::move(runs)},
          {"next_cursor", page.next.empty() ? nlohmann::json(nullptr) : nlohmann::json(page.next)},
          {"complete", page.complete}};
}

QueryReply QueryService::AnswerRunsPage(const Query& q, const QueryContext&) const {
  auto filter = RunFilterFromJson(q.arg, q.limit);
  if (!filter.ok()) return QueryFailure(filter.status());
  auto page = journal_->ListRunsPage(*filter);
  if (!page.ok()) return QueryFailure(page.status());
  QueryReply reply;
  reply.json = SafeJsonDump(RunsPageJson(*page));
  return reply;
}

}  // namespace apollo11::actors
