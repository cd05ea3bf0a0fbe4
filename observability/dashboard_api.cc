#include "observability/dashboard_api.h"

#include <cstdlib>
#include <string>

#include "common/json_dump.h"
#include "observability/http_routing.h"
#include "observability/http_server.h"

namespace apollo11::observability {
namespace {

constexpr const char* kJson = "application/json";
// /api/alerts: the API's read rule for limit (1 to 1000), 50 when absent.
constexpr uint64_t kMaxAlertLimit = 1000;
constexpr uint64_t kDefaultAlertLimit = 50;

// A non-negative decimal parameter, `fallback` when absent; false when bad.
bool Number(const httplib::Request& req, const char* name, uint64_t max, uint64_t fallback,
            uint64_t* out) {
  *out = fallback;
  if (!req.has_param(name)) return true;
  const std::string v = req.get_param_value(name);
  if (v.empty() || v.size() > 19 || v.find_first_not_of("0123456789") != std::string::npos) {
    return false;
  }
  *out = std::strtoull(v.c_str(), nullptr, 10);
  return *out <= max;
}

// The graph of a pipeline snapshot: each task's id, type and upstream edges
// (with their condition when not "success"). Drops every other field: a
// snapshot may hold commands and environment the dashboard has no need of.
nlohmann::json GraphOf(const nlohmann::json& pipeline) {
  nlohmann::json tasks = nlohmann::json::array();
  const nlohmann::json& snapshot = pipeline.contains("snapshot") ? pipeline["snapshot"] : pipeline;
  if (snapshot.is_object() && snapshot.contains("tasks") && snapshot["tasks"].is_array()) {
    for (const auto& t : snapshot["tasks"]) {
      if (!t.is_object() || !t.contains("id") || !t["id"].is_string()) continue;
      nlohmann::json deps = nlohmann::json::array();
      if (t.contains("depends_on") && t["depends_on"].is_array()) {
        for (const auto& d : t["depends_on"]) {
          if (!d.is_object() || !d.contains("task") || !d["task"].is_string()) continue;
          nlohmann::json edge{{"task", d["task"]}};
          if (d.contains("on")) edge["on"] = d["on"];
          deps.push_back(std::move(edge));
        }
      }
      tasks.push_back({{"id", t["id"]}, {"type", t.value("type", "")}, {"deps", std::move(deps)}});
    }
  }
  return {{"pipeline", pipeline.value("name", "")},
          {"hash", pipeline.value("hash", "")},
          {"tasks", std::move(tasks)}};
}

}  // namespace

void SendCachedJson(const CachedAnswer& answer, const httplib::Request& req,
                    httplib::Response& res) {
  res.set_header("ETag", answer.etag);
  res.set_header("Cache-Control", "no-cache");
  if (req.get_header_value("If-None-Match") == answer.etag) {
    res.status = 304;
    return;
  }
  res.set_content(answer.body, kJson);
}

DashboardApi::DashboardApi(ApiBackend* backend, Mutex* backend_mu, QueryCache* cache,
                           nlohmann::json node_info, RecentAlerts recent_alerts)
    : backend_(backend),
      backend_mu_(backend_mu),
      cache_(cache),
      node_info_(std::move(node_info)),
      recent_alerts_(std::move(recent_alerts)) {}

void DashboardApi::Register(httplib::Server& s, RouteTable& routes) {
  Route(s, routes, "GET", "/api/node",
        [this](const httplib::Request&, httplib::Response& res, const Principal&) {
          res.set_header("Cache-Control", "no-cache");
          res.set_content(SafeJsonDump(node_info_), kJson);
        });
  Route(s, routes, "GET", "/api/runs/{id}/graph",
        [this](const httplib::Request& req, httplib::Response& res, const Principal&) {
          Graph(req, res);
        });
  Route(s, routes, "GET", "/api/executions/{id}/logs",
        [this](const httplib::Request& req, httplib::Response& res, const Principal&) {
          Logs(req, res);
        });
  Route(s, routes, "GET", "/api/executions/{id}/trace",
        [this](const httplib::Request& req, httplib::Response& res, const Principal&) {
          Trace(req, res);
        });
  Route(s, routes, "GET", "/api/alerts",
        [this](const httplib::Request& req, httplib::Response& res, const Principal&) {
          Alerts(req, res);
        });
}

void DashboardApi::Graph(const httplib::Request& req, httplib::Response& res) {
  const std::string run_id = req.matches[1];
  auto answer = cache_->Get("graph:" + run_id, [&]() -> Result<std::string> {
    MutexLock lock(backend_mu_);
    auto run = backend_->Query("run", run_id, 0);
    if (!run.ok()) return run.status();
    auto pipeline = backend_->Query("pipeline", run->value("pipeline", ""), 0);
    if (!pipeline.ok()) return pipeline.status();
    return SafeJsonDump(GraphOf(*pipeline));
  });
  if (!answer.ok()) return SendError(res, HttpStatusOf(answer.status()), answer.status().message());
  SendCachedJson(**answer, req, res);
}

void DashboardApi::Logs(const httplib::Request& req, httplib::Response& res) {
  const std::string exec_id = req.matches[1];
  const std::string stream = req.has_param("stream") ? req.get_param_value("stream") : "out";
  if (stream != "out" && stream != "err") return SendError(res, 400, "stream must be out or err");
  uint64_t attempt = 0, offset = 0, max_bytes = 0;
  if (!Number(req, "attempt", 1u << 20, 0, &attempt) ||
      !Number(req, "offset", uint64_t{1} << 50, 0, &offset) ||
      !Number(req, "max_bytes", kMaxLogSlice, kMaxLogSlice, &max_bytes) || max_bytes == 0) {
    return SendError(res, 400,
                     "attempt, offset and max_bytes must be integers (max_bytes 1 to " +
                         std::to_string(kMaxLogSlice) + ")");
  }
  const std::string key = "logs:" + exec_id + ":" + stream + ":" + std::to_string(attempt) + ":" +
                          std::to_string(offset) + ":" + std::to_string(max_bytes);
  auto answer = cache_->Get(key, [&]() -> Result<std::string> {
    std::string data;
    Result<nlohmann::json> meta = Status::Internal("unanswered");
    {
      MutexLock lock(backend_mu_);
      meta = backend_->Logs(exec_id, stream, static_cast<uint32_t>(attempt), offset,
                            static_cast<uint32_t>(max_bytes), &data);
    }
    if (!meta.ok()) return meta.status();
    nlohmann::json out = meta->is_object() ? *meta : nlohmann::json::object();
    out["offset"] = offset;
    out["next_offset"] = offset + data.size();
    out["data"] = std::move(data);
    return SafeJsonDump(out);
  });
  if (!answer.ok()) return SendError(res, HttpStatusOf(answer.status()), answer.status().message());
  SendCachedJson(**answer, req, res);
}

void DashboardApi::Trace(const httplib::Request& req, httplib::Response& res) {
  const std::string exec_id = req.matches[1];
  auto answer = cache_->Get("trace:" + exec_id, [&]() -> Result<std::string> {
    std::string data;
    Result<nlohmann::json> meta = Status::Internal("unanswered");
    {
      MutexLock lock(backend_mu_);
      meta = backend_->TraceLog(exec_id, &data);
    }
    if (!meta.ok()) return meta.status();
    nlohmann::json out = meta->is_object() ? *meta : nlohmann::json::object();
    nlohmann::json lines = nlohmann::json::array();
    size_t start = 0;
    while (start < data.size() && lines.size() < 2000) {
      size_t end = data.find('\n', start);
      if (end == std::string::npos) end = data.size();
      if (end > start) lines.push_back(data.substr(start, end - start));
      start = end + 1;
    }
    out["lines"] = std::move(lines);
    return SafeJsonDump(out);
  });
  if (!answer.ok()) return SendError(res, HttpStatusOf(answer.status()), answer.status().message());
  SendCachedJson(**answer, req, res);
}

void DashboardApi::Alerts(const httplib::Request& req, httplib::Response& res) {
  uint64_t limit = 0;
  if (!Number(req, "limit", kMaxAlertLimit, kDefaultAlertLimit, &limit) || limit == 0) {
    return SendError(res, 400,
                     "limit must be an integer from 1 to " + std::to_string(kMaxAlertLimit));
  }
  auto answer = cache_->Get("alerts:" + std::to_string(limit), [&]() -> Result<std::string> {
    if (!recent_alerts_) return SafeJsonDump(nlohmann::json{{"alerts", nlohmann::json::array()}});
    return SafeJsonDump(recent_alerts_(static_cast<uint32_t>(limit)));
  });
  if (!answer.ok()) return SendError(res, HttpStatusOf(answer.status()), answer.status().message());
  SendCachedJson(**answer, req, res);
}

}  // namespace apollo11::observability
