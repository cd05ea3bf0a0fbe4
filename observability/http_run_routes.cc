// The runs' part of the HTTP API (HttpServer::RunRoutes): answering a slow
// task, rerunning and canceling a run, and the HA cluster view and resign.
// Every POST here needs the token.

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <cstdlib>
#include <functional>
#include <string>

#include "common/json_dump.h"
#include "common/timestamp_parse.h"
#include "observability/http_access.h"
#include "observability/http_routing.h"
#include "observability/http_server.h"
#include "observability/query_cache.h"

namespace apollo11::observability {

namespace {

// The fields of a rerun request's body (see RunRoutes).
struct RerunBody {
  std::string from;
  bool failed = false, downstream = false;
};

// Reads `text` into `*rerun`; InvalidInput says what is wrong.
Status ReadRerunBody(const std::string& text, RerunBody* rerun) {
  auto body = text.empty() ? nlohmann::json::object() : ParseJsonBounded(text);
  if (body.is_discarded() || !body.is_object()) {
    return Status::InvalidInput(
        "body must be a JSON object: {\"failed\": true} or {\"from\": "
        "\"TASK\", \"downstream\": true}");
  }
  for (const auto& [key, value] : body.items()) {
    if (key == "from" && value.is_string()) {
      rerun->from = value.get<std::string>();
    } else if ((key == "failed" || key == "downstream") && value.is_boolean()) {
      (key == "failed" ? rerun->failed : rerun->downstream) = value.get<bool>();
    } else {
      return Status::InvalidInput("unknown or ill-typed body field '" + key + "'");
    }
  }
  if (rerun->failed && !rerun->from.empty()) {
    return Status::InvalidInput("give failed or from, not both");
  }
  if (rerun->downstream && rerun->from.empty()) {
    return Status::InvalidInput("downstream goes with from");
  }
  return Status::Ok();
}

// The filter of an audit request's query parameters; InvalidInput for an
// unknown or malformed one.
Result<storage::AuditFilter> AuditFilterOf(const httplib::Request& req, Micros now) {
  storage::AuditFilter f;
  for (const auto& [name, value] : req.params) {
    if (name == "principal") {
      f.principal = value;
    } else if (name == "action") {
      f.action = value;
    } else if (name == "since") {
      auto since = ParseSince(value, now);
      if (!since.ok()) return since.status();
      f.since = *since;
    } else if (name == "limit") {
      char* end = nullptr;
      const unsigned long n = std::strtoul(value.c_str(), &end, 10);  // NOLINT(runtime/int)
      if (value.empty() || *end != '\0' || n == 0 || n > 10000) {
        return Status::InvalidInput("limit must be a number from 1 to 10000, not '" + value + "'");
      }
      f.limit = n;
    } else {
      return Status::InvalidInput("unknown parameter '" + name +
                                  "' (audit takes since, principal, action, limit)");
    }
  }
  return f;
}

}  // namespace

void HttpServer::RunRoutes(httplib::Server& s) {
  Route(s, *routes_, "POST", "/api/executions/{id}/confirm",
        std::bind_front(&HttpServer::ConfirmExecution, this));
  if (options_.cluster) {
    Route(s, *routes_, "GET", "/api/cluster",
          [this](const httplib::Request&, httplib::Response& res, const Principal&) {
            SendJson(res, 200, options_.cluster());
          });
  }
  Route(s, *routes_, "POST", "/api/cluster/resign", std::bind_front(&HttpServer::Resign, this));
  // Body: {} or {"failed": true} (the default), or {"from": "TASK",
  // "downstream": true}.
  Route(s, *routes_, "POST", "/api/runs/{id}/rerun", std::bind_front(&HttpServer::RerunRun, this));
  Route(s, *routes_, "GET", "/api/audit", std::bind_front(&HttpServer::AuditTrail, this));
  Route(s, *routes_, "POST", "/api/runs/{id}/cancel",
        std::bind_front(&HttpServer::CancelRun, this));
}

void HttpServer::ConfirmExecution(const httplib::Request& req, httplib::Response& res,
                                  const Principal& who) {
  auto body = ParseJsonBounded(req.body);
  const std::string action =
      body.is_object() && body.contains("action") && body["action"].is_string()
          ? body["action"].get<std::string>()
          : "";
  if (action != "kill" && action != "keep") {
    return SendError(res, 400, "body must be {\"action\": \"kill\"} or {\"action\": \"keep\"}");
  }
  Result<std::string> answer = Status::Internal("unanswered");
  {
    MutexLock lock(&backend_mu_);
    backend()->ActAs(who);
    answer = backend()->Confirm(req.matches[1], action == "kill");
  }
  if (!answer.ok()) return SendError(res, HttpStatusOf(answer.status()), answer.status().message());
  cache_->Clear();
  spdlog::info("http: {} answered slow execution {}: {}", who.Describe(),
               std::string(req.matches[1]), action);
  SendJson(res, 202,
           nlohmann::json{
               {"exec_id", std::string(req.matches[1])}, {"action", action}, {"answer", *answer}});
}

void HttpServer::RerunRun(const httplib::Request& req, httplib::Response& res,
                          const Principal& who) {
  RerunBody rerun;
  if (Status read = ReadRerunBody(req.body, &rerun); !read.ok()) {
    return SendError(res, 400, read.message());
  }
  const std::string original = req.matches[1];
  Result<std::string> run_id = Status::Internal("unanswered");
  {
    MutexLock lock(&backend_mu_);
    backend()->ActAs(who);
    run_id = backend()->Rerun(original, rerun.from, rerun.downstream);
  }
  if (!run_id.ok()) return SendError(res, HttpStatusOf(run_id.status()), run_id.status().message());
  cache_->Clear();
  spdlog::info("http: run {} reruns {}, started by {}", *run_id, original, who.Describe());
  SendJson(res, 201, nlohmann::json{{"run_id", *run_id}, {"rerun_of", original}});
}

void HttpServer::Resign(const httplib::Request&, httplib::Response& res, const Principal& who) {
  if (!options_.resign) {
    return SendError(res, 409,
                     "this coordinator is not in an HA group (no --ha-etcd): it has no leadership "
                     "to resign");
  }
  spdlog::info("http: {} asks this node to resign the leadership", who.Describe());
  // Journaled (and replicated) before the leadership goes.
  auto record = [&](bool ok, const std::string& outcome) {
    if (options_.backend == nullptr) return;
    MutexLock lock(&backend_mu_);
    Status recorded = backend()->Record(who, {"resign", "the leadership", ok, outcome});
    if (!recorded.ok()) {
      spdlog::warn("http: the resign asked by {} has no audit record: {}", who.Describe(),
                   recorded.message());
    }
  };
  record(true, "resign requested");
  Status s = options_.resign();
  if (!s.ok()) {
    record(false, s.message());
    return SendError(res, HttpStatusOf(s), s.message());
  }
  SendJson(res, 202, nlohmann::json{{"resign", "requested"}});
}

void HttpServer::RecordRefusal(const httplib::Request& req, const httplib::Response& res,
                               const HttpRule& rule) {
  uint64_t left_out = 0;
  {
    MutexLock lock(&refusal_mu_);
    // After a failed record (the coordinator does not answer), none for a
    // while: each would hold the backend for its whole timeout.
    if (clock_.Steady() < refusals_paused_until_) return;
    if (!refusals_recorded_.Allow(clock_.Steady(), &left_out)) return;
  }
  auto error = ParseJsonBounded(res.body);
  const std::string why = error.is_object() && error["error"].is_string()
                              ? error["error"].get<std::string>()
                              : std::string();
  ApiBackend::Note note{std::string(transport::RuleOf(*rule.action).name), req.path.substr(0, 256),
                        false, "HTTP " + std::to_string(res.status) + ": " + why};
  if (left_out > 0) {
    note.outcome += " (" + std::to_string(left_out) + " refusals before it were not recorded)";
  }
  Principal caller = access_->Whom(req);
  caller.request_id = res.get_header_value("X-Request-Id");
  Status recorded = Status::Ok();
  {
    MutexLock lock(&backend_mu_);
    recorded = backend()->Record(caller, note);
  }
  if (!recorded.ok()) {
    spdlog::warn("http: refusals are not recorded for 10 s: {}", recorded.message());
    MutexLock lock(&refusal_mu_);
    refusals_paused_until_ = clock_.Steady() + 10 * kMicrosPerSecond;
  }
}

void HttpServer::AuditTrail(const httplib::Request& req, httplib::Response& res, const Principal&) {
  auto filter = AuditFilterOf(req, clock_.Now());
  if (!filter.ok()) return SendError(res, 400, filter.status().message());
  Result<nlohmann::json> records = Status::Internal("unanswered");
  {
    MutexLock lock(&backend_mu_);
    records = backend()->Audit(*filter);
  }
  if (!records.ok()) {
    return SendError(res, HttpStatusOf(records.status()), records.status().message());
  }
  SendJson(res, 200, *records);
}

void HttpServer::CancelRun(const httplib::Request& req, httplib::Response& res,
                           const Principal& who) {
  const std::string run_id = req.matches[1];
  Status c;
  {
    MutexLock lock(&backend_mu_);
    auto run = backend()->Query("status", run_id, 0);
    if (!run.ok()) return SendError(res, HttpStatusOf(run.status()), run.status().message());
    const std::string state = run->value("state", "");
    if (state == "SUCCESS" || state == "FAILED" || state == "CANCELED") {
      return SendError(res, 409, "run " + run_id + " already finished: " + state);
    }
    backend()->ActAs(who);
    c = backend()->Cancel(run_id, "canceled by " + who.Describe() + " through the HTTP API");
  }
  if (!c.ok()) return SendError(res, HttpStatusOf(c), c.message());
  cache_->Clear();
  SendJson(res, 202, nlohmann::json{{"run_id", run_id}, {"cancel", "requested"}});
}

}  // namespace apollo11::observability
