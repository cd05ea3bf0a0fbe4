#pragma once
// The CLI's link to a running coordinator's client endpoint (--coordinator,
// else $APOLLO11_COORDINATOR): submit runs, cancel them, and ask read-only
// questions. Each call waits for its answer up to a timeout. The endpoint
// may be a comma-separated list of an HA set's coordinators: the link tries
// them in turn and follows "not the leader; the leader is X" (Ask).

#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "actors/client_protocol.h"
#include "cli/remote_http.h"
#include "common/status.h"
#include "storage/audit_records.h"
#include "transport/security.h"

namespace apollo11::cli {

// The endpoint from the flag or $APOLLO11_COORDINATOR; "" when neither.
std::string CoordinatorEndpoint(const std::string& flag);

// What a FollowHooks::tick asks of the follow.
enum class FollowAction {
  kContinue,
  kCancel,  // ask the coordinator to cancel the run, and follow it to its end
  kStop,    // stop following now: Follow returns an Internal error
};

// What SubmitAndFollow and Follow report while a run goes on. Every hook is
// optional and called on the caller's thread.
struct FollowHooks {
  // The coordinator journaled the submitted run: called once, with its id.
  std::function<void(const std::string& run_id)> accepted;
  // The run's task counts by TaskState, pushed as they change.
  std::function<void(const std::vector<uint32_t>& counts)> progress;
  // Called about every 100 ms while waiting, also for the submission's
  // answer (`run_id` is empty then, and the action ignored). kCancel asks
  // the coordinator to cancel the run with `cancel_reason` (sent once); the
  // follow goes on until the run ends.
  // kStop ends the follow at once (the caller saw a reason to give up).
  std::function<FollowAction(const std::string& run_id)> tick;
  std::string cancel_reason = "canceled by the user";
  // After this long without a pushed message the run's record is asked for:
  // how a run this client did not submit is followed, and how a vanished
  // coordinator is noticed (the query times out). Zero: never asked (the
  // caller watches the coordinator itself).
  std::chrono::milliseconds quiet_poll{1000};
};

class RemoteCoordinator {
 public:
  // `key_file`/`server_key_file` (else $APOLLO11_KEY / $APOLLO11_SERVER_KEY)
  // make the link a CURVE client; both or neither. `timeout` bounds each call.
  static Result<std::unique_ptr<RemoteCoordinator>> Connect(
      const std::string& endpoint, const std::string& key_file = "",
      const std::string& server_key_file = "",
      std::chrono::milliseconds timeout = std::chrono::milliseconds(10000));
  // The same with keys already loaded: `curve` (this client's pair) and
  // `server_public` (Z85) make the link a CURVE client. With `ctx` the
  // socket lives in that context (which must outlive the client), as an
  // inproc:// endpoint needs; else in the client's own.
  static Result<std::unique_ptr<RemoteCoordinator>> ConnectWithKeys(
      const std::string& endpoint, const std::optional<transport::CurveKeyPair>& curve,
      const std::string& server_public, std::chrono::milliseconds timeout,
      zmq::context_t* ctx = nullptr);
  // A link to a node's HTTP API instead (remote_http.h): `url`
  // http(s)://HOST:PORT[/BASE], the bearer from `token_file` (else
  // $APOLLO11_API_TOKEN), `cacert` for https. The calls the API lacks are
  // Unsupported, saying what to use.
  static Result<std::unique_ptr<RemoteCoordinator>> ConnectHttp(const std::string& url,
                                                                const std::string& token_file,
                                                                const std::string& cacert,
                                                                std::chrono::milliseconds timeout);
  ~RemoteCoordinator();

  // Submits a run; returns its id once journaled. `submit` is taken: its
  // snapshot (JSON, or already packed) is sent packed and freed as soon as
  // it is encoded, so a large pipeline is not held twice while the
  // coordinator reads it. The wait for the answer grows with the JSON.
  Result<std::string> Submit(actors::SubmitRun submit);
  // Submits a run as Submit does, then follows it (Follow) until it ends.
  // Returns its id; errors are Submit's, then Follow's.
  Result<std::string> SubmitAndFollow(actors::SubmitRun submit, const FollowHooks& hooks);
  // Starts a rerun of a finished run (actors::RerunRun); returns the new
  // run's id once journaled. NotFound / InvalidInput: the coordinator
  // refused it (unknown run or task, run not ended, nothing to rerun).
  Result<std::string> Rerun(const actors::RerunRun& rerun);
  // Rerun, then Follow the new run until it ends.
  Result<std::string> RerunAndFollow(const actors::RerunRun& rerun, const FollowHooks& hooks);
  // Follows run `run_id` until it ends: by the progress the coordinator
  // pushes to the client that submitted it, and by asking for its record
  // after `hooks.quiet_poll` without news. Ok once the run is final (RUN
  // FINISHED, or a final state in its record); an error when the
  // coordinator stops answering or the run is unknown.
  Status Follow(const std::string& run_id, const FollowHooks& hooks);
  Status Cancel(const std::string& run_id, const std::string& reason);
  // registry: a registry change or trigger; returns the reply's JSON once it
  // is journaled, or the coordinator's refusal with its StatusCode.
  Result<nlohmann::json> Registry(const actors::RegistryRequest& request);
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

  // The caller every changing request from now on is sent for (an empty
  // principal: none, the request is this client's own): a node's HTTP API
  // names the API token it checked (actors::OnBehalf).
  void set_on_behalf(actors::OnBehalf on_behalf) { on_behalf_ = std::move(on_behalf); }
  // The audit trail (query audit): the newest records that match, newest
  // first ({"records": [...]}). PermissionDenied without the admin role.
  Result<nlohmann::json> Audit(const storage::AuditFilter& filter);
  // Records what the caller set_on_behalf named did or was refused on this
  // node (actors::AuditNote); Ok once journaled.
  Status Record(actors::AuditNote note);

  // The CLI warns on stderr when an answer comes from a coordinator that
  // cannot write its journal; a node's HTTP API (which puts `journal_error`
  // in its JSON and logs in its own format) turns that off.
  void set_warn_on_journal_error(bool warn) { warn_on_journal_error_ = warn; }

  // The endpoint the next request goes to: where the last answer came from
  // (a followed leader's, once a standby named it).
  const std::string& current_endpoint() const { return endpoint_; }

 private:
  RemoteCoordinator() = default;
  Result<actors::QueryReply> AskQuery(const actors::Query& q);
  // Sends `frame` (a ConfirmExec or an AuditNote) and returns its
  // ConfirmReply's text, or the refusal it carries.
  Result<std::string> AskConfirm(const std::string& frame);
  // Sends a request that starts a run (`frame`) and returns the run id of
  // its SubmitReply.
  Result<std::string> StartRun(std::string frame);
  // Calls `start`, then follows the run it started (hooks as SubmitAndFollow).
  Result<std::string> StartAndFollow(const std::function<Result<std::string>()>& start,
                                     const FollowHooks& hooks);
  // remote_leader.cc: a fresh socket (and handshake monitor) to
  // endpoints_[i], which becomes current.
  Status Dial(size_t i);
  // What Ask does when the connection closes after the request went out
  // and before its reply came (the coordinator restarted, or changed role
  // under HA, and the request was lost with the connection).
  enum class OnDrop {
    kResend,  // a read-only request: sent again on a fresh connection
    kFail,    // it may have been applied: say so instead of sending it twice
  };
  // Sends `frame` and returns the first reply of `reply_type`. A reply
  // whose error says "not the leader; the leader is X" is followed (the
  // frame is sent to X, also when X is not in the list), as is a lost
  // connection (OnDrop::kResend) with several endpoints (to the next): at
  // most two rounds of the list. With several endpoints, one where nothing
  // listens is passed over at once and one that finishes no handshake
  // within ConnectWindow() after it, until the timeout. `on_drop`: see
  // OnDrop.
  Result<std::string> Ask(const std::string& frame, uint16_t reply_type, OnDrop on_drop);
  // The error for a request whose connection closed before its answer
  // (`why`): it may have been applied, so it is not sent again. Dials the
  // current endpoint afresh.
  Status LostRequest(const Status& why);
  // How long Await waits for a connection before Ask tries the next
  // endpoint (several endpoints only): min(timeout, 1 s).
  std::chrono::milliseconds ConnectWindow() const;
  // Returns the first message of `reply_type` within the timeout; others
  // are dropped. Calls `waiting_` (when set) about every 100 ms. Fails at
  // once when the coordinator refuses the CURVE handshake (see Refusal),
  // and when the connection closes before the reply came (dropped_ is then
  // true: the request is lost, or was taken and its answer lost).
  Result<std::string> Await(uint16_t reply_type);
  // Sends `frame` on the current socket, after reading the monitor's events
  // so that a connection closed before this request is not taken for one
  // that lost it.
  Status SendRequest(const std::string& frame);
  // Watches the socket's connection (a socket monitor): under CURVE, a
  // refused key would otherwise look like a coordinator that is not
  // running; a connection that closes loses the request in flight.
  Status WatchConnection(zmq::context_t& ctx);
  // Closes the socket and its monitor, in the one safe order: libzmq sends
  // each event with a blocking send on its I/O thread, so an event of a
  // socket whose monitor reader is gone blocks that thread for good (every
  // socket of the context stops: no connect, no event, no answer). The
  // socket stops emitting first, then the reader goes.
  void CloseSocket();
  // Reads the monitor's pending events: an error naming why the handshake
  // failed, or Ok (connected_ and dropped_ updated).
  Status Refusal();

  zmq::context_t ctx_;
  zmq::context_t* ext_ctx_ = nullptr;   // ConnectWithKeys' `ctx`, else null (ctx_)
  std::vector<std::string> endpoints_;  // the comma-separated list, in its order
  size_t current_ = 0;                  // endpoints_[current_] is endpoint_
  size_t dials_ = 0;                    // names each socket's monitor
  size_t drops_ = 0;                    // connections seen to close, ever
  std::optional<transport::CurveKeyPair> curve_;
  std::string server_public_;
  bool connect_failed_ = false;  // a connection attempt failed before any handshake
  bool unreachable_ = false;     // the last Await gave up for want of a connection
  bool handshaken_ = false;      // the current connection finished its handshake
  bool dropped_ = false;         // a connection past its handshake closed (monitor)
  std::unique_ptr<zmq::socket_t> socket_;
  std::unique_ptr<zmq::socket_t> monitor_;  // connection events of socket_
  std::string endpoint_;
  std::chrono::milliseconds timeout_{10000};
  // Added to timeout_ while a submission waits for its answer (Submit).
  std::chrono::milliseconds build_wait_{0};
  bool warn_on_journal_error_ = true;
  actors::OnBehalf on_behalf_;
  std::function<void()> waiting_;  // set by SubmitAndFollow while it awaits the reply
  // Set: every call goes to a node's HTTP API, and there is no socket.
  std::unique_ptr<HttpApiLink> http_;
};

}  // namespace apollo11::cli
