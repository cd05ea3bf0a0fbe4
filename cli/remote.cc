#include "cli/remote.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "actors/actor_loop.h"
#include "transport/codec.h"
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
    const std::string& server_public, std::chrono::milliseconds timeout) {
  std::unique_ptr<RemoteCoordinator> r(new RemoteCoordinator());
  r->endpoint_ = endpoint;
  r->timeout_ = timeout;
  r->socket_ = std::make_unique<zmq::socket_t>(r->ctx_, zmq::socket_type::dealer);
  transport::SocketOptions options;
  options.immediate = false;  // queue the request until the connection is up
  options.max_msg_size = static_cast<int64_t>(actors::ClientLimits().max_frame);
  APOLLO11_RETURN_IF_ERROR(transport::ConfigureDealer(
      *r->socket_, "cli-" + std::to_string(::getpid()) + "-" + std::to_string(std::rand()),
      options));
  if (curve) {
    APOLLO11_RETURN_IF_ERROR(transport::ConfigureCurveClient(*r->socket_, *curve, server_public));
  }
  APOLLO11_RETURN_IF_ERROR(transport::Connect(*r->socket_, endpoint));
  return r;
}

RemoteCoordinator::~RemoteCoordinator() {
  if (socket_) socket_->close();
}

Result<std::string> RemoteCoordinator::Ask(const std::string& frame, uint16_t reply_type) {
  APOLLO11_RETURN_IF_ERROR(transport::Send(*socket_, frame, /*dontwait=*/false));
  zmq::pollitem_t items[] = {{socket_->handle(), 0, ZMQ_POLLIN, 0}};
  auto deadline = std::chrono::steady_clock::now() + timeout_;
  transport::Envelope env;
  while (std::chrono::steady_clock::now() < deadline) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    auto polled = transport::Poll(items, left);
    if (!polled.ok()) return polled.status();
    if (*polled == 0) break;
    auto msg = transport::Recv(*socket_, /*dontwait=*/true);
    if (!msg.ok()) continue;
    APOLLO11_RETURN_IF_ERROR(
        transport::DecodeEnvelopeInto(msg->data(), msg->size(), &env, actors::ClientLimits()));
    if (env.type != reply_type) continue;  // e.g. progress of an earlier submission
    return std::string(static_cast<const char*>(msg->data()), msg->size());
  }
  return Status::Io("no answer from the coordinator at " + endpoint_ + " within " +
                    std::to_string(timeout_.count() / 1000) + "s (is it running?)");
}

Result<std::string> RemoteCoordinator::Submit(const actors::SubmitRun& submit) {
  std::string frame;
  transport::Encode(static_cast<uint16_t>(actors::InternalType::kSubmitRun), submit, &frame);
  auto raw = Ask(frame, static_cast<uint16_t>(actors::InternalType::kSubmitReply));
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
  std::string frame;
  transport::Encode(static_cast<uint16_t>(actors::InternalType::kCancelRun),
                    actors::CancelRun{run_id, reason}, &frame);
  APOLLO11_RETURN_IF_ERROR(transport::Send(*socket_, frame, /*dontwait=*/false));
  // Confirm it was taken: the run's status answers once the cancel applied.
  auto status = Query("status", run_id);
  if (!status.ok()) return status.status();
  return Status::Ok();
}

Result<std::string> RemoteCoordinator::Confirm(const std::string& exec_id, bool kill) {
  std::string frame;
  transport::Encode(static_cast<uint16_t>(actors::InternalType::kConfirmExec),
                    actors::ConfirmExec{exec_id, kill}, &frame);
  auto raw = Ask(frame, static_cast<uint16_t>(actors::InternalType::kConfirmReply));
  if (!raw.ok()) return raw.status();
  auto env = transport::DecodeEnvelope(raw->data(), raw->size(), actors::ClientLimits());
  if (!env.ok()) return env.status();
  auto reply = transport::BodyAs<actors::ConfirmReply>(*env);
  if (!reply.ok()) return reply.status();
  Status refused = actors::ReplyStatus(reply->code, reply->error);
  if (!refused.ok()) return refused;
  return reply->text;
}

Result<actors::QueryReply> RemoteCoordinator::AskQuery(const actors::Query& q) {
  std::string frame;
  transport::Encode(static_cast<uint16_t>(actors::InternalType::kQuery), q, &frame);
  auto raw = Ask(frame, static_cast<uint16_t>(actors::InternalType::kQueryReply));
  if (!raw.ok()) return raw.status();
  auto env = transport::DecodeEnvelope(raw->data(), raw->size(), actors::ClientLimits());
  if (!env.ok()) return env.status();
  auto reply = transport::BodyAs<actors::QueryReply>(*env);
  if (!reply.ok()) return reply.status();
  if (!reply->journal_error.empty() && warn_on_journal_error_) {
    // What follows is the last durable state; say why it may be stale.
    std::fprintf(stderr, "apollo11: warning: the coordinator cannot write its journal: %s\n",
                 reply->journal_error.c_str());
  }
  Status failed = actors::ReplyStatus(reply->code, reply->error);
  if (!failed.ok()) return failed;
  return reply;
}

Result<nlohmann::json> RemoteCoordinator::Query(const std::string& kind, const std::string& id,
                                                const std::string& arg, uint32_t limit) {
  auto parsed = actors::ParseQueryKind(kind);
  if (!parsed.ok()) return parsed.status();
  actors::Query q;
  q.kind = *parsed;
  q.id = id;
  q.arg = arg;
  q.limit = limit;
  auto reply = AskQuery(q);
  if (!reply.ok()) return reply.status();
  auto doc = nlohmann::json::parse(reply->json, nullptr, false);
  if (doc.is_discarded()) return Status::Corrupt("coordinator sent malformed JSON");
  return doc;
}

Result<std::string> RemoteCoordinator::FetchLog(const std::string& exec_id,
                                                const std::string& stream, uint32_t attempt,
                                                uint64_t offset, uint32_t max_bytes,
                                                nlohmann::json* meta) {
  actors::Query q;
  q.kind = actors::QueryKind::kLogs;
  q.id = exec_id;
  q.arg = stream;
  q.limit = max_bytes;
  q.offset = offset;
  q.attempt = attempt;
  auto reply = AskQuery(q);
  if (!reply.ok()) return reply.status();
  *meta = nlohmann::json::parse(reply->json, nullptr, false);
  if (meta->is_discarded()) return Status::Corrupt("coordinator sent malformed JSON");
  return std::move(reply->data);
}

Result<std::string> RemoteCoordinator::TraceLog(const std::string& exec_id, nlohmann::json* meta) {
  actors::Query q;
  q.kind = actors::QueryKind::kTraceLog;
  q.id = exec_id;
  auto reply = AskQuery(q);
  if (!reply.ok()) return reply.status();
  *meta = nlohmann::json::parse(reply->json, nullptr, false);
  if (meta->is_discarded()) return Status::Corrupt("coordinator sent malformed JSON");
  return std::move(reply->data);
}

}  // namespace apollo11::cli
