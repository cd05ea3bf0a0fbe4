#pragma once
// The HTTP API's backend on a node: a client of the coordinator's client
// endpoint, speaking the same protocol as the `apollo11` CLI (RemoteCoordinator).
// The HTTP server thus shares no state with the actors, and a slow or wedged
// scheduler shows up as a timeout (503), not as a hang.

#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "cli/remote.h"
#include "observability/api_backend.h"
#include "transport/security.h"

namespace apollo11::cli {

class CoordinatorApi final : public observability::ApiBackend {
 public:
  // `endpoint` is the coordinator's bound client endpoint; `curve` and
  // `server_public` as for RemoteCoordinator::ConnectWithKeys (a node uses its
  // own key pair, which its coordinator authorizes).
  CoordinatorApi(std::string endpoint, std::optional<transport::CurveKeyPair> curve,
                 std::string server_public, std::chrono::milliseconds timeout);

  Result<nlohmann::json> Query(const std::string& kind, const std::string& id,
                               uint32_t limit) override;
  Result<nlohmann::json> RunsPage(const std::string& filter_json, uint32_t limit) override;
  Result<nlohmann::json> Changes(const std::string& since, uint32_t wait_ms) override;
  Result<std::string> Trigger(const std::string& name,
                              const std::map<std::string, std::string>& params) override;
  Result<nlohmann::json> TriggerRun(const TriggerSpec& t) override;
  Result<nlohmann::json> Register(const std::string& yaml, const std::string& label) override;
  Result<nlohmann::json> ChangeRegistry(const RegistryChange& c) override;
  Status Cancel(const std::string& run_id, const std::string& reason) override;
  Result<std::string> Rerun(const std::string& run_id, const std::string& from,
                            bool downstream) override;
  Result<nlohmann::json> Logs(const std::string& exec_id, const std::string& stream,
                              uint32_t attempt, uint64_t offset, uint32_t max_bytes,
                              std::string* data) override;
  Result<nlohmann::json> TraceLog(const std::string& exec_id, std::string* data) override;
  Result<std::string> Confirm(const std::string& exec_id, bool kill) override;
  // The caller goes with every changing request (actors::OnBehalf) and
  // names the actor of registry changes ("http:NAME").
  void ActAs(const observability::Principal& caller) override;
  Result<nlohmann::json> Audit(const storage::AuditFilter& filter) override;
  Status Record(const observability::Principal& caller, const Note& note) override;

 private:
  // The link, (re)connected on demand: after a timeout the old socket may
  // still receive the late answer, so it is dropped rather than reused. A
  // request a standby refused is followed to the leader it names, as the
  // CLI does (so a standby's API answers with the leader's view), and the
  // link is then dropped too (DropLinkAfter): the next request asks this node's
  // coordinator first again.
  Result<RemoteCoordinator*> Link();
  // Sends `r` (its actor set to actor_) and returns the coordinator's JSON.
  Result<nlohmann::json> SendRegistry(actors::RegistryRequest r);
  // Drops the link after a request that ended in `status` when it may not
  // be reused (see Link).
  void DropLinkAfter(const Status& status);
  template <class T>
  T Forget(T result);

  const std::string endpoint_;
  const std::optional<transport::CurveKeyPair> curve_;
  const std::string server_public_;
  const std::chrono::milliseconds timeout_;
  std::unique_ptr<RemoteCoordinator> link_;
  std::string actor_ = "http";  // "http:NAME" once ActAs named the caller
  actors::OnBehalf on_behalf_;  // ActAs's caller, set on every link
};

}  // namespace apollo11::cli
