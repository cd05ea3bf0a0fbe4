#pragma once
// The flags the client commands (status, history, runs, submit, cancel,
// workers, explain, confirm, logs, trace, gc) share, declared in one place:
// where the state dir is, which coordinator to ask and with which CURVE
// keys, how long to wait, and JSON output.

#include <CLI/CLI.hpp>
#include <chrono>
#include <memory>
#include <string>

#include "cli/remote.h"
#include "common/status.h"

namespace apollo11::cli {

struct ClientFlags {
  std::string state_dir;        // --state-dir, else $APOLLO11_STATE_DIR (ResolveStateDir)
  std::string coordinator;      // --coordinator, else $APOLLO11_COORDINATOR
  std::string key, server_key;  // --key/--server-key, else $APOLLO11_KEY/$APOLLO11_SERVER_KEY
  // With an http(s):// coordinator (a node's HTTP API, cli/remote_http.h):
  // --api-token-file (else $APOLLO11_API_TOKEN) and --cacert.
  std::string api_token_file, cacert;
  double timeout_s = 10;  // --timeout: bounds each call to the coordinator
  bool json = false;      // --json

  // The coordinator's endpoint from --coordinator or $APOLLO11_COORDINATOR;
  // "" when neither names one (the command reads the local state dir).
  std::string Endpoint() const;
  // A client of Endpoint() with the keys and timeout these flags name.
  Result<std::unique_ptr<RemoteCoordinator>> Connect() const;
};

// Which of the shared flags a command declares.
enum ClientFlagSet : unsigned {
  kStateDirFlag = 1u << 0,  // --state-dir: the command can read a local state dir
  kRemoteFlags = 1u << 1,   // --coordinator, --key, --server-key, --timeout
  kJsonFlag = 1u << 2,      // --json
};

// The help of the flags whose meaning differs a little between commands.
struct ClientFlagHelp {
  const char* state_dir =
      "local state dir (default $APOLLO11_STATE_DIR, else $XDG_STATE_HOME/apollo11, else "
      "~/.local/state/apollo11)";
  const char* timeout = "seconds to wait for the coordinator's answer";
  const char* json = "print JSON";
};

// Declares the flags of `which` on `cmd`, stored in `*flags` (which must
// outlive the parse).
void AddClientFlags(CLI::App* cmd, ClientFlags* flags, unsigned which,
                    const ClientFlagHelp& help = {});

}  // namespace apollo11::cli
