#pragma once
// The CLI's link to a node's HTTP API, for `--coordinator
// http(s)://HOST:PORT[/BASE]`: the calls of RemoteCoordinator (remote.h)
// that the API has, made with a bearer token, so one identity works through
// both ports: a tokens-file token (`apollo11 token create`) or a JWT from
// the node's OpenID Connect provider, read from --api-token-file or
// $APOLLO11_API_TOKEN (never a command-line argument, which `ps` shows).
//
// What maps where:
//   Query     runs, status, run, history, execution, workers, pipelines,
//             pipeline, pipeline_versions -> their GET /api/... routes;
//             runs_page -> GET /api/v1/runs
//   Audit     GET /api/audit
//   Cancel    POST /api/runs/ID/cancel (a run that already ended: Conflict)
//   Rerun     POST /api/runs/ID/rerun
//   Confirm   POST /api/executions/ID/confirm
//   Registry  trigger, pause, unpause, remove, backfill -> POST
//             /api/pipelines/NAME/...
//   Follow    the run's record, asked every 200 ms until it ends
// Everything else (submitting a file, registering a parsed pipeline,
// logs, traces, explain) is Unsupported with a sentence naming the
// ZeroMQ client port or the HTTP route to use instead. HTTP answers map
// back to the StatusCode the ZeroMQ port gives (403 PermissionDenied,
// 401 PermissionDenied saying the token is not known, 404 NotFound, 409
// Conflict, 429 Busy with the wait, 5xx Io).

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "actors/client_protocol.h"
#include "common/status.h"
#include "storage/audit_records.h"

namespace httplib {
class Client;
}

namespace apollo11::cli {

struct FollowHooks;

// Whether `endpoint` names a node's HTTP API rather than a ZeroMQ endpoint.
bool IsHttpEndpoint(const std::string& endpoint);

class HttpApiLink {
 public:
  // `url`: http(s)://HOST:PORT[/BASE]; `token_file` (else
  // $APOLLO11_API_TOKEN) the bearer; `cacert` PEM CAs for https ("" = the
  // system's). No token is allowed: the node's anonymous reads, if any.
  static Result<std::unique_ptr<HttpApiLink>> Open(const std::string& url,
                                                   const std::string& token_file,
                                                   const std::string& cacert,
                                                   std::chrono::milliseconds timeout);
  ~HttpApiLink();

  Result<nlohmann::json> Query(const std::string& kind, const std::string& id,
                               const std::string& arg, uint32_t limit);
  Result<nlohmann::json> Audit(const storage::AuditFilter& filter);
  // A page of the run history: GET /api/v1/runs with the filter's fields
  // (the kRunsPage JSON) as its parameters.
  Result<nlohmann::json> RunsPage(const std::string& filter_json, uint32_t limit);
  Status Cancel(const std::string& run_id);
  Result<std::string> Rerun(const actors::RerunRun& rerun);
  Result<std::string> Confirm(const std::string& exec_id, bool kill);
  Result<nlohmann::json> Registry(const actors::RegistryRequest& request);
  Status Follow(const std::string& run_id, const FollowHooks& hooks);
  // Submitting a pipeline file: Unsupported (no route takes one).
  Status Submit() const;
  // An audit note (a node's own record): Unsupported.
  Status Record() const;
  // Unsupported: `what` is not on the HTTP API, `instead` says what is.
  static Status NotHere(const std::string& what, const std::string& instead);
  const std::string& url() const { return url_; }

 private:
  HttpApiLink() = default;
  // GET or POST `path` (below the base, with its query) and the answer's
  // JSON, or the refusal as a Status.
  Result<nlohmann::json> Call(const std::string& method, const std::string& path,
                              const nlohmann::json* body);

  std::string url_, base_, token_;
  std::unique_ptr<httplib::Client> client_;
};

}  // namespace apollo11::cli
