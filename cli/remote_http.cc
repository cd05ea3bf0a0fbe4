#include "cli/remote_http.h"

#include <httplib.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <regex>
#include <thread>

#include "cli/remote.h"
#include "common/json_dump.h"
#include "common/small_file.h"
#include "engine/task_state.h"
#include "observability/oidc_sign_in.h"

namespace apollo11::cli {
namespace {

// `text` percent-encoded for a path segment (ids keep their ':' and '@')
// or a query value.
std::string Escaped(const std::string& text) { return observability::UrlEncode(text, ":@"); }

Result<std::string> TokenOf(const std::string& file) {
  std::string token;
  if (!file.empty()) {
    std::optional<std::string> text = ReadSmallFile(file, 64 << 10);
    if (!text) return Status::InvalidInput("--api-token-file " + file + " cannot be read");
    token = *text;
  } else if (const char* env = std::getenv("APOLLO11_API_TOKEN")) {
    token = env;
  }
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) {
    token.pop_back();
  }
  if (token.find_first_of("\r\n") != std::string::npos) {
    return Status::InvalidInput("the API token holds a line break: one token, on one line");
  }
  return token;
}

// The Status of an HTTP refusal, with the node's sentence.
Status RefusalOf(int status, const std::string& body, const std::string& retry_after) {
  auto doc = ParseJsonBounded(body);
  std::string why = doc.is_object() && doc.contains("error") && doc["error"].is_string()
                        ? doc["error"].get<std::string>()
                        : body.substr(0, 300);
  switch (status) {
    case 400:
      return Status::InvalidInput(why);
    case 401:  // the node's sentence says what the token lacks
      return Status::Error(StatusCode::kPermissionDenied, why);
    case 403:
      return Status::Error(StatusCode::kPermissionDenied, why);
    case 404:
      return Status::NotFound(why);
    case 409:
      return Status::Error(StatusCode::kConflict, why);
    case 421:
      return Status::Error(StatusCode::kNotLeader, why);
    case 429:
      return Status::Error(StatusCode::kPermissionDenied,
                           why + " (retry after " + retry_after + " s)");
    default:
      return Status::Io("HTTP " + std::to_string(status) + ": " + why);
  }
}

}  // namespace

Status HttpApiLink::NotHere(const std::string& what, const std::string& instead) {
  return Status::Error(StatusCode::kUnsupported,
                       what + " is not on the HTTP API (--coordinator http...): " + instead);
}

Status HttpApiLink::Submit() const {
  return NotHere("submitting a pipeline file",
                 "register it (POST its YAML to " + url_ +
                     "/api/pipelines) and start it with `apollo11 trigger NAME`, or submit "
                     "through the ZeroMQ client port");
}

Status HttpApiLink::Record() const { return NotHere("an audit note", "the node records its own"); }

bool IsHttpEndpoint(const std::string& endpoint) {
  return endpoint.rfind("http://", 0) == 0 || endpoint.rfind("https://", 0) == 0;
}

HttpApiLink::~HttpApiLink() = default;

Result<std::unique_ptr<HttpApiLink>> HttpApiLink::Open(const std::string& url,
                                                       const std::string& token_file,
                                                       const std::string& cacert,
                                                       std::chrono::milliseconds timeout) {
  static const std::regex kUrl(R"((https?://[^/?#]+)(/[A-Za-z0-9._~/-]*)?)");
  std::smatch m;
  if (!std::regex_match(url, m, kUrl)) {
    return Status::InvalidInput("--coordinator '" + url +
                                "': an HTTP API is http(s)://HOST:PORT[/BASE-PATH]");
  }
  auto token = TokenOf(token_file);
  if (!token.ok()) return token.status();
  std::unique_ptr<HttpApiLink> link(new HttpApiLink());
  link->url_ = url;
  link->base_ = m[2].str();
  while (!link->base_.empty() && link->base_.back() == '/') link->base_.pop_back();
  link->token_ = std::move(*token);
  link->client_ = std::make_unique<httplib::Client>(m[1].str());
  const auto secs = static_cast<time_t>(timeout.count() / 1000);
  const auto usecs = static_cast<time_t>((timeout.count() % 1000) * 1000);
  link->client_->set_connection_timeout(secs, usecs);
  link->client_->set_read_timeout(secs, usecs);
  link->client_->set_write_timeout(secs, usecs);
  link->client_->set_follow_location(false);
  if (url.rfind("https://", 0) == 0) {
    link->client_->enable_server_certificate_verification(true);
    if (!cacert.empty()) link->client_->set_ca_cert_path(cacert.c_str());
  }
  return link;
}

Result<nlohmann::json> HttpApiLink::Call(const std::string& method, const std::string& path,
                                         const nlohmann::json* body) {
  httplib::Headers headers{{"Accept", "application/json"}};
  if (!token_.empty()) headers.emplace("Authorization", "Bearer " + token_);
  httplib::Result res =
      method == "GET"
          ? client_->Get(base_ + path, headers)
          : client_->Post(base_ + path, headers, body ? body->dump() : "{}", "application/json");
  if (!res) {
    return Status::Io("the node's HTTP API at " + url_ +
                      " did not answer: " + httplib::to_string(res.error()));
  }
  if (res->status >= 300) {
    return RefusalOf(res->status, res->body, res->get_header_value("Retry-After"));
  }
  auto doc = ParseJsonBounded(res->body);
  if (doc.is_discarded()) return Status::Corrupt("the node's HTTP API answered no JSON");
  return doc;
}

Result<nlohmann::json> HttpApiLink::Query(const std::string& kind, const std::string& id,
                                          const std::string& arg, uint32_t limit) {
  if (kind == "runs_page") return RunsPage(arg, limit);
  const std::string e = Escaped(id);
  std::string path;
  if (kind == "runs" || kind == "workers" || kind == "pipelines") {
    path = "/api/" + kind;
  } else if (kind == "status" || kind == "run") {
    path = "/api/runs/" + e;
  } else if (kind == "history") {
    path = "/api/runs/" + e + "/history";
  } else if (kind == "execution") {
    path = "/api/executions/" + e;
  } else if (kind == "pipeline") {
    path = "/api/pipelines/" + e;
  } else if (kind == "pipeline_versions") {
    path = "/api/pipelines/" + e + "/versions";
  } else {
    return NotHere("the query '" + kind + "'", "ask the coordinator's ZeroMQ client port");
  }
  if (!arg.empty()) {
    return NotHere("a filtered '" + kind + "' query", "ask the ZeroMQ client port");
  }
  if (limit > 0 && kind == "runs") path += "?limit=" + std::to_string(std::min(limit, 1000u));
  return Call("GET", path, nullptr);
}

Result<nlohmann::json> HttpApiLink::RunsPage(const std::string& filter_json, uint32_t limit) {
  const auto filter = ParseJsonBounded(filter_json.empty() ? "{}" : filter_json);
  if (!filter.is_object()) return Status::InvalidInput("a runs filter is a JSON object");
  std::string query = "?limit=" + std::to_string(std::clamp<uint32_t>(limit, 1, 1000));
  for (const auto& [key, value] : filter.items()) {
    if ((key == "pipeline" || key == "cursor") && value.is_string()) {
      query += "&" + key + "=" + Escaped(value.get<std::string>());
    } else if (key == "states" && value.is_array()) {
      for (const auto& s : value) {
        if (s.is_string()) query += "&state=" + Escaped(s.get<std::string>());
      }
    } else if ((key == "since" || key == "until") && value.is_number_integer()) {
      query += "&" + key + "=" + Escaped(FormatTimestamp(value.get<Micros>()));
    } else {
      return Status::InvalidInput("unknown runs filter field '" + key + "'");
    }
  }
  return Call("GET", "/api/v1/runs" + query, nullptr);
}

Result<nlohmann::json> HttpApiLink::Audit(const storage::AuditFilter& filter) {
  std::string query = "?limit=" + std::to_string(std::min<size_t>(filter.limit, 10000));
  if (filter.since > 0) query += "&since=" + Escaped(FormatTimestamp(filter.since));
  if (!filter.principal.empty()) query += "&principal=" + Escaped(filter.principal);
  if (!filter.action.empty()) query += "&action=" + Escaped(filter.action);
  return Call("GET", "/api/audit" + query, nullptr);
}

Status HttpApiLink::Cancel(const std::string& run_id) {
  auto done = Call("POST", "/api/runs/" + Escaped(run_id) + "/cancel", nullptr);
  return done.ok() ? Status::Ok() : done.status();
}

Result<std::string> HttpApiLink::Rerun(const actors::RerunRun& rerun) {
  nlohmann::json body = nlohmann::json::object();
  if (rerun.from_task.empty()) {
    body["failed"] = true;
  } else {
    body["from"] = rerun.from_task;
    body["downstream"] = rerun.downstream;
  }
  auto started = Call("POST", "/api/runs/" + Escaped(rerun.run_id) + "/rerun", &body);
  if (!started.ok()) return started.status();
  return started->value("run_id", "");
}

Result<std::string> HttpApiLink::Confirm(const std::string& exec_id, bool kill) {
  const nlohmann::json body = {{"action", kill ? "kill" : "keep"}};
  auto done = Call("POST", "/api/executions/" + Escaped(exec_id) + "/confirm", &body);
  if (!done.ok()) return done.status();
  return done->value("answer", "");
}

Result<nlohmann::json> HttpApiLink::Registry(const actors::RegistryRequest& r) {
  const std::string path = "/api/pipelines/" + Escaped(r.name);
  switch (static_cast<actors::RegistryOp>(r.op)) {
    case actors::RegistryOp::kTrigger: {
      nlohmann::json body = {{"params", r.params}};
      if (!r.ref.empty()) body["version"] = r.ref;
      if (!r.key.empty()) body["idempotency_key"] = r.key;
      return Call("POST", path + "/runs", &body);
    }
    case actors::RegistryOp::kPause:
      return Call("POST", path + "/pause", nullptr);
    case actors::RegistryOp::kUnpause:
      return Call("POST", path + "/unpause", nullptr);
    case actors::RegistryOp::kRemove:
      return Call("POST", path + "/remove", nullptr);
    case actors::RegistryOp::kBackfill: {
      nlohmann::json body = {{"from", FormatTimestamp(r.from)}, {"to", FormatTimestamp(r.to)}};
      if (r.max_active > 0) body["max_active"] = r.max_active;
      if (r.dry_run) body["dry_run"] = true;
      return Call("POST", path + "/backfill", &body);
    }
    default:
      return NotHere("registering a pipeline from the CLI",
                     "POST its YAML to " + url_ + "/api/pipelines, or use the ZeroMQ port");
  }
}

Status HttpApiLink::Follow(const std::string& run_id, const FollowHooks& hooks) {
  bool cancel_sent = false;
  for (;;) {
    auto run = Query("run", run_id, "", 0);
    if (!run.ok()) return run.status();
    auto state = ParseRunStatus(run->value("state", ""));
    if (state.has_value() && IsFinal(*state)) return Status::Ok();
    const FollowAction action = hooks.tick ? hooks.tick(run_id) : FollowAction::kContinue;
    if (action == FollowAction::kStop) return Status::Internal("stopped following run " + run_id);
    if (action == FollowAction::kCancel && !cancel_sent) {
      APOLLO11_RETURN_IF_ERROR(Cancel(run_id));
      cancel_sent = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
}

}  // namespace apollo11::cli
