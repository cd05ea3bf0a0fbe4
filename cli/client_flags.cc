#include "cli/client_flags.h"

#include "cli/usage_errors.h"
#include "transport/coordinator_endpoints.h"

namespace apollo11::cli {

std::string ClientFlags::Endpoint() const { return CoordinatorEndpoint(coordinator); }

Result<std::unique_ptr<RemoteCoordinator>> ClientFlags::Connect() const {
  const std::string endpoint = Endpoint();
  const auto wait = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  if (IsHttpEndpoint(endpoint)) {
    if (!key.empty() || !server_key.empty()) {
      return Status::InvalidInput(
          "--key and --server-key are for the coordinator's ZeroMQ client port; a node's "
          "HTTP API takes a bearer token (--api-token-file or $APOLLO11_API_TOKEN)");
    }
    return RemoteCoordinator::ConnectHttp(endpoint, api_token_file, cacert, wait);
  }
  if (!api_token_file.empty() || !cacert.empty()) {
    return Status::InvalidInput(
        "--api-token-file and --cacert are for a node's HTTP API (--coordinator "
        "https://HOST:PORT); the ZeroMQ client port authenticates with CURVE keys (--key, "
        "--server-key)");
  }
  // ZeroMQ's "Invalid argument" does not say what is wrong with a list.
  auto endpoints = transport::ParseEndpointList(
      endpoint, coordinator.empty() ? "$APOLLO11_COORDINATOR" : "--coordinator");
  if (!endpoints.ok()) return endpoints.status();
  return RemoteCoordinator::Connect(endpoint, key, server_key, wait);
}

void AddClientFlags(CLI::App* cmd, ClientFlags* flags, unsigned which, const ClientFlagHelp& help) {
  if (which & kStateDirFlag) cmd->add_option("--state-dir", flags->state_dir, help.state_dir);
  if (which & kRemoteFlags) {
    cmd->add_option("--coordinator", flags->coordinator,
                    "a running coordinator's client endpoint, or a comma-separated list of an HA "
                    "set's, or a node's HTTP API as http(s)://HOST:PORT (default "
                    "$APOLLO11_COORDINATOR)");
    cmd->add_option("--key", flags->key, "your CURVE key pair file (default $APOLLO11_KEY)");
    cmd->add_option("--server-key", flags->server_key,
                    "the coordinator's CURVE public key file (default $APOLLO11_SERVER_KEY)");
    cmd->add_option("--api-token-file", flags->api_token_file,
                    "with --coordinator http(s)://HOST:PORT (a node's HTTP API): file holding "
                    "your API token or your provider's JWT (default $APOLLO11_API_TOKEN)");
    cmd->add_option("--cacert", flags->cacert, "PEM CAs for an https:// coordinator's certificate");
    cmd->add_option("--timeout", flags->timeout_s, help.timeout)->check(PositiveSeconds());
  }
  if (which & kJsonFlag) cmd->add_flag("--json", flags->json, help.json);
}

}  // namespace apollo11::cli
