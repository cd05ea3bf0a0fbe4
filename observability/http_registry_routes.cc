// The registry's part of the HTTP API (HttpServer::RegistryRoutes):
// registering a pipeline, reading a version and its fires, triggering a
// run, pausing, unpausing, removing and backfilling its schedule. Every POST
// here needs the token.

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <functional>

#include "common/json_dump.h"
#include "common/timestamp_parse.h"
#include "observability/http_access.h"
#include "observability/http_routing.h"
#include "observability/http_server.h"
#include "observability/query_cache.h"

namespace apollo11::observability {
namespace {

// The fields of a backfill request's body, into `change`.
Status ReadBackfillBody(const nlohmann::json& body, ApiBackend::RegistryChange* change) {
  for (const auto& [key, value] : body.items()) {
    if ((key == "from" || key == "to") && value.is_string()) {
      auto t = ParseTimestamp(value.get<std::string>());
      if (!t.ok()) return t.status();
      (key == "from" ? change->from : change->to) = *t;
    } else if (key == "max_active" && value.is_number_integer() && value.get<int64_t>() >= 1 &&
               value.get<int64_t>() <= 1000) {
      change->max_active = value.get<int>();
    } else if (key == "dry_run" && value.is_boolean()) {
      change->dry_run = value.get<bool>();
    } else {
      return Status::InvalidInput(
          "unknown or ill-typed body field '" + key +
          "' (from and to are timestamps, max_active 1 to 1000, dry_run true or false)");
    }
  }
  if (!body.contains("from") || !body.contains("to")) {
    return Status::InvalidInput("a backfill needs from and to");
  }
  return Status::Ok();
}

// A trigger request's body (empty, or {"params": {...}, "idempotency_key":
// K, "version": V}), into `trigger`; InvalidInput says what is wrong.
Status ReadTriggerBody(const std::string& text, ApiBackend::TriggerSpec* trigger) {
  if (text.empty()) return Status::Ok();
  auto body = ParseJsonBounded(text);
  if (body.is_discarded() || !body.is_object()) {
    return Status::InvalidInput("body must be a JSON object: {\"params\": {...}}");
  }
  for (const auto& [key, value] : body.items()) {
    if (key == "params") continue;
    if ((key == "idempotency_key" || key == "version") && value.is_string()) {
      (key == "version" ? trigger->version : trigger->key) = value.get<std::string>();
      continue;
    }
    return Status::InvalidInput("unknown body field '" + key + "'");
  }
  if (body.contains("params")) {
    const auto& p = body["params"];
    if (!p.is_object()) return Status::InvalidInput("params must be a JSON object");
    for (const auto& [name, value] : p.items()) {
      if (value.is_string()) {
        trigger->params[name] = value.get<std::string>();
      } else if (value.is_number() || value.is_boolean()) {
        trigger->params[name] = SafeJsonDump(value);
      } else {
        return Status::InvalidInput("param '" + name + "' must be a string, number or boolean");
      }
    }
  }
  return Status::Ok();
}

}  // namespace

void HttpServer::RegistryRoutes(httplib::Server& s) {
  // GET lists the pipelines; POST (registry): a pipeline YAML in the body
  // becomes its next version.
  RouteGetPost(s, *routes_, "/api/pipelines", QueryRoute("pipelines", 0),
               std::bind_front(&HttpServer::RegisterPipeline, this));
  Route(s, *routes_, "POST", "/api/pipelines/{id}/runs",
        std::bind_front(&HttpServer::TriggerPipelineRun, this));
  // A version's snapshot with the newest fires (?limit=N of them, default
  // 20), as `apollo11 pipelines show`; the versions, as `pipelines versions`.
  Route(s, *routes_, "GET", "/api/pipelines/{id}", QueryRoute("pipeline", 1));
  Route(s, *routes_, "GET", "/api/pipelines/{id}/versions", QueryRoute("pipeline_versions", 1));
  // Pause, unpause, remove (no body; remove as `apollo11 pipelines rm`) and
  // backfill ({"from": T1, "to": T2, "max_active": N}, times as `apollo11
  // backfill` takes them): one route each, as each is its own action.
  for (const char* path : {"/api/pipelines/{id}/pause", "/api/pipelines/{id}/unpause",
                           "/api/pipelines/{id}/remove", "/api/pipelines/{id}/backfill"}) {
    Route(s, *routes_, "POST", path, std::bind_front(&HttpServer::ChangePipeline, this));
  }
}

void HttpServer::RegisterPipeline(const httplib::Request& req, httplib::Response& res,
                                  const Principal& who) {
  if (req.body.empty()) return SendError(res, 400, "the body must be a pipeline's YAML");
  Result<nlohmann::json> added = Status::Internal("unanswered");
  {
    MutexLock lock(&backend_mu_);
    // Imports resolve nowhere: the body is the whole pipeline.
    backend()->ActAs(who);
    added = backend()->Register(req.body, "request body");
  }
  if (!added.ok()) return SendError(res, HttpStatusOf(added.status()), added.status().message());
  cache_->Clear();
  spdlog::info("http: pipeline {} registered by {}", SafeJsonDump((*added)["label"]),
               who.Describe());
  SendJson(res, added->value("unchanged", false) ? 200 : 201, *added);
}

void HttpServer::TriggerPipelineRun(const httplib::Request& req, httplib::Response& res,
                                    const Principal& who) {
  ApiBackend::TriggerSpec trigger;
  trigger.name = req.matches[1];
  trigger.key = req.get_header_value("Idempotency-Key");
  if (Status read = ReadTriggerBody(req.body, &trigger); !read.ok()) {
    return SendError(res, 400, read.message());
  }
  Result<nlohmann::json> run = Status::Internal("unanswered");
  {
    MutexLock lock(&backend_mu_);
    backend()->ActAs(who);
    run = backend()->TriggerRun(trigger);
  }
  if (!run.ok()) {
    // A paused pipeline is a conflict with its state, not an outage.
    const int status = HttpStatusOf(run.status());  // a paused pipeline: Conflict, 409
    return SendError(res, status, run.status().message());
  }
  cache_->Clear();
  spdlog::info("http: run {} of {} triggered by {}", SafeJsonDump((*run)["run_id"]), trigger.name,
               who.Describe());
  SendJson(res, run->value("existing", false) ? 200 : 201, *run);
}

void HttpServer::ChangePipeline(const httplib::Request& req, httplib::Response& res,
                                const Principal& who) {
  // The path's last segment is the change: /api/pipelines/NAME/pause.
  ApiBackend::RegistryChange change{req.path.substr(req.path.rfind('/') + 1), req.matches[1]};
  if (change.op == "backfill") {
    auto body = ParseJsonBounded(req.body);
    if (body.is_discarded() || !body.is_object()) {
      return SendError(res, 400,
                       "body must be a JSON object: {\"from\": \"2026-11-01\", "
                       "\"to\": \"2026-11-02T00:00:00Z\", \"max_active\": 2}");
    }
    Status read = ReadBackfillBody(body, &change);
    if (!read.ok()) return SendError(res, 400, read.message());
  }
  Result<nlohmann::json> done = Status::Internal("unanswered");
  {
    MutexLock lock(&backend_mu_);
    backend()->ActAs(who);
    done = backend()->ChangeRegistry(change);
  }
  if (!done.ok()) return SendError(res, HttpStatusOf(done.status()), done.status().message());
  cache_->Clear();
  spdlog::info("http: {} of pipeline {} by {}", change.op, change.name, who.Describe());
  SendJson(res, 200, *done);
}

}  // namespace apollo11::observability
