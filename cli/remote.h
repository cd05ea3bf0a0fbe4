#pragma once
// The CLI's link to a running coordinator's client endpoint (--coordinator,
// else $APOLLO11_COORDINATOR): submit runs, cancel them, and ask read-only
// questions. Each call waits for its answer up to a timeout.

#include <chrono>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <zmq.hpp>

#include "actors/internal_messages.h"
#include "common/status.h"
#include "transport/security.h"

namespace apollo11::cli {

// The endpoint from the flag or $APOLLO11_COORDINATOR; "" when neither.
std::string CoordinatorEndpoint(const std::string& flag);

class RemoteCoordinator {
 public:
  // `key_file`/`server_key_file` (else $APOLLO11_KEY / $APOLLO11_SERVER_KEY)
  // make the link a CURVE client; both or neither. `timeout` bounds each call.
  static Result<std::unique_ptr<RemoteCoordinator>> Connect(
      const std::string& endpoint, const std::string& key_file = "",
      const std::string& server_key_file = "",
      std::chrono::milliseconds timeout = std::chrono::milliseconds(10000));
  // The same with keys already loaded: `curve` (this client's pair) and
  // `server_public` (Z85) make the link a CURVE client.
  static Result<std::unique_ptr<RemoteCoordinator>> ConnectWithKeys(
      const std::string& endpoint, const std::optional<transport::CurveKeyPair>& curve,
      const std::string& server_public, std::chrono::milliseconds timeout);
  ~RemoteCoordinator();

  Result<std::string> Submit(const actors::SubmitRun& submit);
  Status Cancel(const std::string& run_id, const std::string& reason);
  // Kills or keeps an execution flagged slow; returns what was done, once it
  // is journaled. NotFound / InvalidInput: the coordinator refused it.
  Result<std::string> Confirm(const std::string& exec_id, bool kill);
  // kind: a QueryKind by name (actors::kQueryKindNames: status, run,
  // history, runs, workers, explain, ...); an unknown name is InvalidInput.
  // A refusal comes back with the coordinator's StatusCode (NotFound for an
  // unknown id).
  Result<nlohmann::json> Query(const std::string& kind, const std::string& id = "",
                               const std::string& arg = "", uint32_t limit = 20);
  // A slice of an execution's captured output ("out" or "err"), fetched by
  // the coordinator from the worker that ran `attempt` (0 = the latest).
  // `meta` gets the reply's JSON (attempt, worker, size, running, final).
  Result<std::string> FetchLog(const std::string& exec_id, const std::string& stream,
                               uint32_t attempt, uint64_t offset, uint32_t max_bytes,
                               nlohmann::json* meta);
  // The coordinator's own JSON log lines that mention `exec_id` (query
  // trace_log); `meta` gets the scan's figures (lines, scan_ms).
  Result<std::string> TraceLog(const std::string& exec_id, nlohmann::json* meta);

  // The CLI warns on stderr when an answer comes from a coordinator that
  // cannot write its journal; a node's HTTP API (which puts `journal_error`
  // in its JSON and logs in its own format) turns that off.
  void set_warn_on_journal_error(bool warn) { warn_on_journal_error_ = warn; }

 private:
  RemoteCoordinator() = default;
  Result<actors::QueryReply> AskQuery(const actors::Query& q);
  // Sends `frame` and returns the first reply of `reply_type`.
  Result<std::string> Ask(const std::string& frame, uint16_t reply_type);

  zmq::context_t ctx_;
  std::unique_ptr<zmq::socket_t> socket_;
  std::string endpoint_;
  std::chrono::milliseconds timeout_{10000};
  bool warn_on_journal_error_ = true;
};

}  // namespace apollo11::cli
