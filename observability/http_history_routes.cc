// GET /api/v1/runs: the whole run history, filtered and paged by cursor
// (QueryKind::kRunsPage, storage/run_page.h). Every parameter is checked;
// an unknown one is a 400, never ignored.

#include "common/json_dump.h"
#include "common/timestamp_parse.h"
#include "observability/api_backend.h"
#include "observability/dashboard_api.h"
#include "observability/http_routing.h"
#include "observability/http_server.h"
#include "observability/query_cache.h"

namespace apollo11::observability {
namespace {

constexpr const char* kRunsParams = "pipeline, prefix, state, since, until, limit, cursor";

// The kRunsPage filter (JSON) of the request's parameters, and the page
// size in `*limit`; InvalidInput naming a bad or unknown parameter.
Result<nlohmann::json> RunsFilterOf(const httplib::Request& req, Micros now, uint32_t* limit) {
  nlohmann::json f = nlohmann::json::object();
  for (const auto& [name, value] : req.params) {
    if (name == "pipeline" || name == "prefix" || name == "cursor") {
      f[name] = value;
    } else if (name == "state") {
      // state=FAILED&state=CANCELED, or state=FAILED,CANCELED
      for (size_t at = 0; at <= value.size();) {
        const size_t comma = value.find(',', at);
        const size_t end = comma == std::string::npos ? value.size() : comma;
        f["states"].push_back(value.substr(at, end - at));
        at = end + 1;
      }
    } else if (name == "since" || name == "until") {
      auto t = name == "since" ? ParseSince(value, now) : ParseTimestamp(value);
      if (!t.ok()) return Status::InvalidInput(name + ": " + t.status().message());
      f[name] = *t;
    } else if (name == "limit") {
      char* end = nullptr;
      const unsigned long n = std::strtoul(value.c_str(), &end, 10);  // NOLINT(runtime/int)
      if (value.empty() || *end != '\0' || n == 0 || n > 1000) {
        return Status::InvalidInput("limit must be a number from 1 to 1000, not '" +
                                    value.substr(0, 40) + "'");
      }
      *limit = static_cast<uint32_t>(n);
    } else {
      return Status::InvalidInput("unknown parameter '" + name.substr(0, 40) + "' (" + kRunsParams +
                                  ")");
    }
  }
  return f;
}

}  // namespace

void HttpServer::HistoryRoutes(httplib::Server& s) {
  Route(s, *routes_, "GET", "/api/v1/runs",
        [this](const httplib::Request& req, httplib::Response& res, const Principal&) {
          uint32_t limit = 50;
          auto filter = RunsFilterOf(req, clock_.Now(), &limit);
          if (!filter.ok()) return SendError(res, 400, filter.status().message());
          const std::string text = SafeJsonDump(*filter);
          const std::string key = "runs_page:" + std::to_string(limit) + ":" + text;
          auto answer = cache_->Get(key, [&]() -> Result<std::string> {
            Result<nlohmann::json> page = Status::Internal("unanswered");
            {
              MutexLock lock(&backend_mu_);
              page = backend()->RunsPage(text, limit);
            }
            if (!page.ok()) return page.status();
            return SafeJsonDump(*page);
          });
          if (!answer.ok()) {
            return SendError(res, HttpStatusOf(answer.status()), answer.status().message());
          }
          SendCachedJson(**answer, req, res);
        });
}

}  // namespace apollo11::observability
