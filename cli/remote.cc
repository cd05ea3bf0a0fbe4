#include "cli/remote.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>

#include "actors/actor_loop.h"
#include "common/json_dump.h"
#include "engine/task_state.h"
#include "storage/snapshot_pack.h"
#include "transport/codec.h"
#include "transport/coordinator_endpoints.h"
#include "transport/security.h"
#include "transport/sockets.h"

namespace apollo11::cli {

std::string CoordinatorEndpoint(const std::string& flag) {
  if (!flag.empty()) return flag;
  const char* env = std::getenv("APOLLO11_COORDINATOR");
  return env ? env : "";
}

Result<std::unique_ptr<RemoteCoordinator>> RemoteCoordinator::Connect(
    const std::string& endpoint, const std::string& key_file, const std::string& server_key_file,
    std::chrono::milliseconds timeout) {
  std::string key = key_file, server_key = server_key_file;
  if (key.empty() && std::getenv("APOLLO11_KEY")) key = std::getenv("APOLLO11_KEY");
  if (server_key.empty() && std::getenv("APOLLO11_SERVER_KEY")) {
    server_key = std::getenv("APOLLO11_SERVER_KEY");
  }
  if (key.empty() != server_key.empty()) {
    return Status::InvalidInput(
        "CURVE needs both --key (your key pair) and --server-key (the "
        "coordinator's public key)");
  }
  std::optional<transport::CurveKeyPair> pair;
  std::string server_public;
  if (!key.empty()) {
    auto loaded = transport::LoadKeyPair(key);
    if (!loaded.ok()) return loaded.status();
    pair = *loaded;
    auto loaded_public = transport::LoadPublicKey(server_key);
    if (!loaded_public.ok()) return loaded_public.status();
    server_public = *loaded_public;
  }
  return ConnectWithKeys(endpoint, pair, server_public, timeout);
}

Result<std::unique_ptr<RemoteCoordinator>> RemoteCoordinator::ConnectWithKeys(
    const std::string& endpoint, const std::optional<transport::CurveKeyPair>& curve,
    const std::string& server_public, std::chrono::milliseconds timeout, zmq::context_t* ctx) {
  std::unique_ptr<RemoteCoordinator> r(new RemoteCoordinator());
  auto endpoints = transport::ParseEndpointList(endpoint, "the coordinator endpoint");
  if (!endpoints.ok()) return endpoints.status();
  r->endpoints_ = std::move(*endpoints);
  r->timeout_ = timeout;
  r->curve_ = curve;
  r->server_public_ = server_public;
  r->ext_ctx_ = ctx;
  APOLLO11_RETURN_IF_ERROR(r->Dial(0));
  return r;
}

Result<std::unique_ptr<RemoteCoordinator>> RemoteCoordinator::ConnectHttp(
    const std::string& url, const std::string& token_file, const std::string& cacert,
    std::chrono::milliseconds timeout) {
  auto link = HttpApiLink::Open(url, token_file, cacert, timeout);
  if (!link.ok()) return link.status();
  std::unique_ptr<RemoteCoordinator> r(new RemoteCoordinator());
  r->http_ = std::move(*link);
  r->endpoint_ = url;
  r->timeout_ = timeout;
  return r;
}

RemoteCoordinator::~RemoteCoordinator() { CloseSocket(); }

void RemoteCoordinator::CloseSocket() {
  if (socket_ && monitor_) (void)zmq_socket_monitor(socket_->handle(), nullptr, 0);
  if (monitor_) monitor_->close();
  if (socket_) socket_->close();
  monitor_.reset();
  socket_.reset();
}

Status RemoteCoordinator::WatchConnection(zmq::context_t& ctx) {
  char name[64];
  std::snprintf(name, sizeof(name), "inproc://apollo11-cli-monitor-%p-%zu",
                static_cast<void*>(this), ++dials_);
  // CONNECT_RETRIED before HANDSHAKE_SUCCEEDED: with several coordinators,
  // nothing listens there (Ask passes over it at once; one that never
  // finishes a handshake, after ConnectWindow). DISCONNECTED after
  // HANDSHAKE_SUCCEEDED: the request in flight is lost.
  const int events = ZMQ_EVENT_HANDSHAKE_FAILED_AUTH | ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                     ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL | ZMQ_EVENT_CONNECT_RETRIED |
                     ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_DISCONNECTED;
  if (zmq_socket_monitor(socket_->handle(), name, events) != 0) {
    return Status::Io(std::string("cannot watch the connection: ") + zmq_strerror(zmq_errno()));
  }
  try {
    monitor_ = std::make_unique<zmq::socket_t>(ctx, zmq::socket_type::pair);
    monitor_->set(zmq::sockopt::linger, 0);
    monitor_->connect(name);
  } catch (const zmq::error_t& e) {
    (void)zmq_socket_monitor(socket_->handle(), nullptr, 0);  // no reader: see CloseSocket
    monitor_.reset();
    return Status::Io(std::string("cannot watch the connection: ") + e.what());
  }
  return Status::Ok();
}

Status RemoteCoordinator::Refusal() {
  if (!monitor_) return Status::Ok();
  for (;;) {
    zmq::message_t event;
    if (!monitor_->recv(event, zmq::recv_flags::dontwait)) return Status::Ok();
    uint16_t id = 0;
    uint32_t value = 0;  // for a failed handshake: why (ZMQ_PROTOCOL_ERROR_*)
    if (event.size() >= sizeof(id)) std::memcpy(&id, event.data(), sizeof(id));
    if (event.size() >= sizeof(id) + sizeof(value)) {
      std::memcpy(&value, static_cast<const char*>(event.data()) + sizeof(id), sizeof(value));
    }
    while (event.more()) {  // the endpoint frame
      zmq::message_t rest;
      if (!monitor_->recv(rest, zmq::recv_flags::dontwait)) break;
      event = std::move(rest);
    }
    if (id == ZMQ_EVENT_CONNECT_RETRIED) {
      if (!handshaken_) connect_failed_ = true;
      continue;
    }
    if (id == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
      handshaken_ = true;
      continue;
    }
    if (id == ZMQ_EVENT_DISCONNECTED) {
      // Only a connection past its handshake takes requests off the queue;
      // before that, the request waits for the next connection.
      if (handshaken_) {
        dropped_ = true;
        ++drops_;
      }
      handshaken_ = false;
      continue;
    }
    // Without CURVE a failed handshake is a peer that closed during the
    // greeting (a coordinator restarting): the request is still queued;
    // unless the peer speaks another mechanism, which retrying never fixes.
    if (!curve_ && id == ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL &&
        value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH) {
      return Status::PermissionDenied(
          "refused: the coordinator at " + endpoint_ +
          " requires CURVE; pass --key and --server-key ($APOLLO11_KEY, $APOLLO11_SERVER_KEY)");
    }
    if (!curve_) continue;
    if (id == ZMQ_EVENT_HANDSHAKE_FAILED_AUTH) {
      return Status::PermissionDenied(
          "refused by the coordinator's authentication at " + endpoint_ +
          ": its authorized keys do not list this client's key (--key / $APOLLO11_KEY)");
    }
    if (id != 0) {
      return Status::Io("the CURVE handshake with the coordinator at " + endpoint_ +
                        " failed: is --server-key ($APOLLO11_SERVER_KEY) its public key?");
    }
  }
}

Status RemoteCoordinator::SendRequest(const std::string& frame) {
  const size_t drops = drops_;
  APOLLO11_RETURN_IF_ERROR(Refusal());
  if (drops_ != drops) {
    // The connection closed since the last request (the coordinator
    // restarted): a frame sent now can go into the closing pipe and be lost
    // without another event, and its answer waited for until the timeout
    // (about 1 in 30 cancels in tests/cli/remote_drop_test.cc). A fresh
    // socket queues it until a connection is up.
    APOLLO11_RETURN_IF_ERROR(Dial(current_));
  }
  dropped_ = false;
  return transport::Send(*socket_, frame, /*dontwait=*/false);
}

Result<std::string> RemoteCoordinator::Await(uint16_t reply_type) {
  zmq::pollitem_t items[] = {{socket_->handle(), 0, ZMQ_POLLIN, 0},
                             {monitor_ ? monitor_->handle() : nullptr, 0, ZMQ_POLLIN, 0}};
  const size_t watched = monitor_ ? 2 : 1;
  const auto start = std::chrono::steady_clock::now();
  const std::chrono::milliseconds wait = timeout_ + build_wait_;
  auto deadline = start + wait;
  transport::Envelope env;
  while (std::chrono::steady_clock::now() < deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    auto polled =
        transport::Poll(std::span(items, watched), std::min(left, std::chrono::milliseconds(100)));
    if (!polled.ok()) return polled.status();
    if (waiting_) waiting_();
    APOLLO11_RETURN_IF_ERROR(Refusal());
    if (!handshaken_ && endpoints_.size() > 1 &&
        (connect_failed_ || std::chrono::steady_clock::now() - start >= ConnectWindow())) {
      unreachable_ = true;  // Ask tries the next coordinator
      return Status::Io(connect_failed_
                            ? "nothing listens at " + endpoint_
                            : "no connection to the coordinator at " + endpoint_ + " within " +
                                  std::to_string(ConnectWindow().count()) + " ms");
    }
    // After a close, a reply that came before it is still read (libzmq
    // queues a connection's messages before it reports the close).
    while ((items[0].revents & ZMQ_POLLIN) != 0 || dropped_) {
      auto msg = transport::Recv(*socket_, /*dontwait=*/true);
      if (!msg.ok()) break;
      APOLLO11_RETURN_IF_ERROR(
          transport::DecodeEnvelopeInto(msg->data(), msg->size(), &env, actors::ClientLimits()));
      if (env.type != reply_type) continue;  // e.g. progress of an earlier submission
      return std::string(static_cast<const char*>(msg->data()), msg->size());
    }
    if (dropped_) {
      return Status::Io("the connection to the coordinator at " + endpoint_ +
                        " closed before it answered (it restarted or changed role)");
    }
  }
  return Status::Io("no answer from the coordinator at " + endpoint_ + " within " +
                    std::to_string(wait.count() / 1000) + "s (is it running?)");
}

Result<std::string> RemoteCoordinator::Submit(actors::SubmitRun submit) {
  if (http_) return http_->Submit();
  // The answer comes once the run is built and journaled: for a 1M-task
  // pipeline (180 MB of JSON) on a 2-core machine, later than the 10 s
  // default allowed. The wait grows by a second per 4 MiB of JSON (45 s
  // more at 1M).
  const size_t json_bytes = storage::SnapshotTextBytes(submit.pipeline_json);
  build_wait_ = std::chrono::milliseconds(json_bytes * 1000 / (size_t{4} << 20));
  // Sent packed (client protocol 3): a large pipeline's JSON would not fit
  // a client frame. The hash stays that of the JSON.
  submit.pipeline_json = storage::PackSnapshot(std::move(submit.pipeline_json));
  submit.on_behalf = on_behalf_;
  std::string frame;
  transport::Encode(static_cast<uint16_t>(actors::ClientType::kSubmitRun), submit, &frame);
  submit = actors::SubmitRun{};  // the snapshot is in the frame now
  auto run_id = StartRun(std::move(frame));
  build_wait_ = std::chrono::milliseconds(0);
  return run_id;
}

Result<std::string> RemoteCoordinator::Rerun(const actors::RerunRun& rerun) {
  if (http_) return http_->Rerun(rerun);
  std::string frame;
  actors::RerunRun sent = rerun;
  sent.on_behalf = on_behalf_;
  transport::Encode(static_cast<uint16_t>(actors::ClientType::kRerunRun), sent, &frame);
  return StartRun(std::move(frame));
}

Result<std::string> RemoteCoordinator::StartRun(std::string frame) {
  const auto reply_type = static_cast<uint16_t>(actors::ClientType::kSubmitReply);
  Result<std::string> raw = std::string();
  if (endpoints_.size() > 1 || endpoint_.rfind("inproc://", 0) != 0) {
    // Kept until a leader took it: a standby's refusal names the leader,
    // where it is sent again.
    raw = Ask(frame, reply_type, OnDrop::kFail);
  } else {
    // `apollo11 run`'s own coordinator, which leads: the snapshot goes at
    // once (a 1M-task run's peak).
    APOLLO11_RETURN_IF_ERROR(SendRequest(frame));
    std::string().swap(frame);  // the coordinator's once sent
    raw = Await(reply_type);
    if (!raw.ok() && dropped_) return LostRequest(raw.status());
  }
  if (!raw.ok()) return raw.status();
  auto env = transport::DecodeEnvelope(raw->data(), raw->size(), actors::ClientLimits());
  if (!env.ok()) return env.status();
  auto reply = transport::BodyAs<actors::SubmitReply>(*env);
  if (!reply.ok()) return reply.status();
  Status refused = actors::ReplyStatus(reply->code, reply->error);
  if (!refused.ok()) return refused;
  return reply->run_id;
}

Status RemoteCoordinator::Cancel(const std::string& run_id, const std::string& reason) {
  if (http_) return http_->Cancel(run_id);
  if (endpoints_.size() > 1) {
    // A cancel has no reply of its own: find a coordinator that answers first.
    auto reachable = Query("status", run_id);
    if (!reachable.ok()) return reachable.status();
  }
  std::string frame;
  actors::CancelRun cancel{run_id, reason};
  cancel.on_behalf = on_behalf_;
  transport::Encode(static_cast<uint16_t>(actors::ClientType::kCancelRun), cancel, &frame);
  // Confirm it was taken: the run's status, asked on the same connection,
  // answers once the cancel applied. A cancel is idempotent, so one whose
  // connection closed before that answer is sent again on the new one, and
  // so is one a standby refused (its "not the leader" reply, which has the
  // type of the query's, sent the query on to the leader).
  for (int tries = 0;; ++tries) {
    APOLLO11_RETURN_IF_ERROR(SendRequest(frame));
    const size_t drops = drops_;
    const std::string sent_to = endpoint_;
    auto status = Query("status", run_id);
    if (!status.ok()) return status.status();
    if ((drops_ == drops && endpoint_ == sent_to) || tries >= 2) return Status::Ok();
  }
}

Result<std::string> RemoteCoordinator::Confirm(const std::string& exec_id, bool kill) {
  if (http_) return http_->Confirm(exec_id, kill);
  std::string frame;
  actors::ConfirmExec confirm{exec_id, kill};
  confirm.on_behalf = on_behalf_;
  transport::Encode(static_cast<uint16_t>(actors::ClientType::kConfirmExec), confirm, &frame);
  return AskConfirm(frame);
}

Result<std::string> RemoteCoordinator::AskConfirm(const std::string& frame) {
  auto raw = Ask(frame, static_cast<uint16_t>(actors::ClientType::kConfirmReply), OnDrop::kFail);
  if (!raw.ok()) return raw.status();
  auto env = transport::DecodeEnvelope(raw->data(), raw->size(), actors::ClientLimits());
  if (!env.ok()) return env.status();
  auto reply = transport::BodyAs<actors::ConfirmReply>(*env);
  if (!reply.ok()) return reply.status();
  Status refused = actors::ReplyStatus(reply->code, reply->error);
  if (!refused.ok()) return refused;
  return reply->text;
}

Result<nlohmann::json> RemoteCoordinator::Registry(const actors::RegistryRequest& request) {
  if (http_) return http_->Registry(request);
  std::string frame;
  if (on_behalf_.empty()) {
    transport::Encode(static_cast<uint16_t>(actors::ClientType::kRegistry), request, &frame);
  } else {
    actors::RegistryRequest sent = request;
    sent.on_behalf = on_behalf_;
    transport::Encode(static_cast<uint16_t>(actors::ClientType::kRegistry), sent, &frame);
  }
  auto raw = Ask(frame, static_cast<uint16_t>(actors::ClientType::kRegistryReply), OnDrop::kFail);
  if (!raw.ok()) return raw.status();
  auto env = transport::DecodeEnvelope(raw->data(), raw->size(), actors::ClientLimits());
  if (!env.ok()) return env.status();
  auto reply = transport::BodyAs<actors::RegistryReply>(*env);
  if (!reply.ok()) return reply.status();
  Status refused = actors::ReplyStatus(reply->code, reply->error);
  if (!refused.ok()) return refused;
  auto doc = ParseJsonBounded(reply->json);
  if (doc.is_discarded()) return Status::Corrupt("the coordinator's registry reply is not JSON");
  return doc;
}

Status RemoteCoordinator::Record(actors::AuditNote note) {
  if (http_) return http_->Record();
  note.on_behalf = on_behalf_;
  std::string frame;
  transport::Encode(static_cast<uint16_t>(actors::ClientType::kAuditNote), note, &frame);
  auto recorded = AskConfirm(frame);
  return recorded.ok() ? Status::Ok() : recorded.status();
}

Result<std::string> RemoteCoordinator::SubmitAndFollow(actors::SubmitRun submit,
                                                       const FollowHooks& hooks) {
  return StartAndFollow([&] { return Submit(std::move(submit)); }, hooks);
}

Result<std::string> RemoteCoordinator::RerunAndFollow(const actors::RerunRun& rerun,
                                                      const FollowHooks& hooks) {
  return StartAndFollow([&] { return Rerun(rerun); }, hooks);
}

Result<std::string> RemoteCoordinator::StartAndFollow(
    const std::function<Result<std::string>()>& start, const FollowHooks& hooks) {
  if (hooks.tick) waiting_ = [&hooks] { (void)hooks.tick(""); };
  auto run_id = start();
  waiting_ = nullptr;
  if (!run_id.ok()) return run_id.status();
  if (hooks.accepted) hooks.accepted(*run_id);
  APOLLO11_RETURN_IF_ERROR(Follow(*run_id, hooks));
  return run_id;
}

Status RemoteCoordinator::Follow(const std::string& run_id, const FollowHooks& hooks) {
  if (http_) return http_->Follow(run_id, hooks);
  zmq::pollitem_t items[] = {{nullptr, 0, ZMQ_POLLIN, 0}};
  transport::Envelope env;
  auto last_heard = std::chrono::steady_clock::now();
  bool cancel_sent = false;
  for (;;) {
    items[0].socket = socket_->handle();  // a Query may have dialed anew
    auto polled = transport::Poll(items, std::chrono::milliseconds(100));
    if (!polled.ok()) return polled.status();
    for (;;) {
      auto msg = transport::Recv(*socket_, /*dontwait=*/true);
      if (!msg.ok()) break;
      if (!transport::DecodeEnvelopeInto(msg->data(), msg->size(), &env, actors::ClientLimits())
               .ok()) {
        continue;
      }
      const auto type = static_cast<actors::ClientType>(env.type);
      if (type == actors::ClientType::kRunProgress) {
        auto progress = transport::BodyAs<actors::RunProgress>(env);
        if (!progress.ok() || progress->run_id != run_id) continue;
        last_heard = std::chrono::steady_clock::now();
        if (hooks.progress) hooks.progress(progress->counts);
      } else if (type == actors::ClientType::kRunFinished) {
        auto finished = transport::BodyAs<actors::RunFinished>(env);
        if (finished.ok() && finished->run_id == run_id) return Status::Ok();
      }
    }
    const FollowAction action = hooks.tick ? hooks.tick(run_id) : FollowAction::kContinue;
    if (action == FollowAction::kStop) return Status::Internal("stopped following run " + run_id);
    if (action == FollowAction::kCancel && !cancel_sent) {
      std::string frame;
      actors::CancelRun cancel{run_id, hooks.cancel_reason};
      cancel.on_behalf = on_behalf_;
      transport::Encode(static_cast<uint16_t>(actors::ClientType::kCancelRun), cancel, &frame);
      APOLLO11_RETURN_IF_ERROR(SendRequest(frame));
      cancel_sent = true;
    }
    if (hooks.quiet_poll.count() > 0 &&
        std::chrono::steady_clock::now() - last_heard >= hooks.quiet_poll) {
      // Pushed messages that arrive before the answer are dropped by Ask;
      // the answer, sent after them, already reflects them.
      auto line = Query("run", run_id);
      if (!line.ok()) return line.status();
      auto state = ParseRunStatus(line->value("state", ""));
      if (state.has_value() && IsFinal(*state)) return Status::Ok();
      last_heard = std::chrono::steady_clock::now();
    }
  }
}

}  // namespace apollo11::cli
