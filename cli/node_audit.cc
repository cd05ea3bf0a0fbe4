// Node: what the node itself records in the audit trail (a reload on
// SIGHUP); the HTTP API records its own (observability/http_server.h).

#include <spdlog/spdlog.h>
#include <unistd.h>

#include "cli/coordinator_api.h"
#include "cli/node.h"

namespace apollo11::cli {

void Node::RecordReload(bool ok, const std::string& outcome, pid_t sender) {
  if (!coordinator_) return;
  const auto& curve = config_.coordinator_config.curve;
  CoordinatorApi link(coordinator_->client_endpoint(), curve, curve ? curve->public_z85 : "",
                      Millis(3000));
  observability::Principal local;
  local.name = "local";
  local.transport = "signal";
  local.address =
      "SIGHUP from pid " + std::to_string(sender) + " to pid " + std::to_string(getpid());
  Status s = link.Record(local, {"reload", "the node's configuration", ok, outcome});
  if (!s.ok()) spdlog::warn("reload: not recorded in the audit trail: {}", s.message());
}

}  // namespace apollo11::cli
